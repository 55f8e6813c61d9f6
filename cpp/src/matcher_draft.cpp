// Speculative drafts on one matcher: validate_draft and fill_draft walk a draft with
// consume() / fill() and roll it back, in one native call (no GIL, no Python per token).
//
// Invariants: both leave the matcher exactly where it was (history, termination, the cached
// mask of the position), also when a limit is reached in the middle (LimitError propagates
// after the rollback); row i of fill_draft is bit for bit what fill() writes after
// consume(tokens[0]), ..., consume(tokens[i - 1]); a refused token stops both, and
// fill_draft still writes the row of the position that refused it.
#include <cstring>

#include "tokamata/matcher_core.hpp"

namespace tokamata {

namespace {

// Restores a matcher's position on scope exit: rolls back what the draft consumed and puts
// the position's mask pointer back (rollback drops it).
class DraftScope {
 public:
  DraftScope(MatcherCore& matcher, int32_t& consumed, MaskPtr& mask)
      : matcher_(matcher), consumed_(consumed), mask_(mask), saved_(mask) {}
  ~DraftScope() {
    matcher_.rollback(consumed_);
    mask_ = saved_;
  }
  DraftScope(const DraftScope&) = delete;
  DraftScope& operator=(const DraftScope&) = delete;

 private:
  MatcherCore& matcher_;
  int32_t& consumed_;
  MaskPtr& mask_;
  MaskPtr saved_;
};

}  // namespace

int64_t MatcherCore::fill_draft(const int32_t* tokens, int64_t n, uint32_t* out, int64_t stride, int64_t num_words,
                                uint8_t* accepting) {
  int32_t consumed = 0;
  DraftScope scope(*this, consumed, mask_);
  int64_t row = 0;
  while (true) {
    uint32_t* dest = out + row * stride;
    fill(dest, num_words);
    if (accepting) accepting[row] = (terminated_ || current_mask()->accepting) ? 1 : 0;
    ++row;
    if (row > n || consume(tokens[row - 1]) != kAccepted) break;
    ++consumed;
  }
  return row;
}

int64_t MatcherCore::validate_draft(const int32_t* tokens, int64_t n) {
  int32_t consumed = 0;
  DraftScope scope(*this, consumed, mask_);
  while (consumed < n && consume(tokens[consumed]) == kAccepted) ++consumed;
  return consumed;
}

}  // namespace tokamata
