// One decoding step of a batch (tokamata.consume_tokens): a matcher consumes its sampled token
// and fills its next row in one call, so that a pool's thread does both for the same matcher on
// the same core (the position the consume writes is what the fill reads).
//
// Invariants: step(token, out) is consume(token) (nothing when token < 0) followed by fill(out)
// when out is given, and returns the consume's status; a refused token leaves the position
// unchanged and the row is that position's. All or nothing on an exception (a LimitError): what
// the call consumed is rolled back, the row gets the mask of the position the matcher is back
// at (zeros when that fill throws too) and the exception propagates; other matchers are not
// touched (a matcher is used by one thread at a time, constraints are shared).
#include <cstring>

#include "tokamata/matcher_core.hpp"

namespace tokamata {

ConsumeStatus MatcherCore::step(int32_t token, uint32_t* out, int64_t num_words) {
  const size_t before = history_length();
  try {
    ConsumeStatus status = kAccepted;
    if (token >= 0) {  // (the cached path first, as the binding's consume does)
      const int32_t quick = consume_if_cached(token);
      status = quick >= 0 ? static_cast<ConsumeStatus>(quick) : consume(token);
      if (quick == kAccepted && constraint_->sweep_due()) constraint_->sweep_if_due();
    }
    if (out) fill(out, num_words);
    return status;
  } catch (...) {
    if (history_length() > before) rollback(static_cast<int32_t>(history_length() - before));
    if (out) {
      try {
        fill(out, num_words);
      } catch (...) {
        std::memset(out, 0, static_cast<size_t>(num_words) * sizeof(uint32_t));
      }
    }
    throw;
  }
}

}  // namespace tokamata
