// Matcher hot path; see matcher_core.hpp.
#include "tokamata/matcher_core.hpp"

#include <algorithm>
#include <cstring>

namespace tokamata {

MatcherCore::MatcherCore(std::shared_ptr<RegexCore> core, int32_t start_state)
    : core_(std::move(core)), state_(start_state) {}

void MatcherCore::fill(const TokenRow& row, uint32_t* out, int64_t num_words) const {
  const int64_t own = static_cast<int64_t>(row.bits.size());
  const int32_t vocab = core_->trie().vocab_size();
  if (terminated_) {
    std::memset(out, 0, static_cast<size_t>(num_words) * 4);
  } else {
    const int64_t copy = std::min(own, num_words);
    std::memcpy(out, row.bits.data(), static_cast<size_t>(copy) * 4);
    if (num_words > copy) std::memset(out + copy, 0, static_cast<size_t>(num_words - copy) * 4);
  }
  if (terminated_ || row.accepting) {
    for (int32_t e : core_->eos_ids()) {
      if (e < vocab && (e >> 5) < num_words) out[e >> 5] |= 1u << (e & 31);
    }
  }
}

ConsumeStatus MatcherCore::consume(int32_t token, const TokenRow& row) {
  if (token < 0 || token >= core_->trie().vocab_size()) return kOutOfRange;
  if (terminated_) return kRefused;
  if (core_->is_eos(token)) {
    if (!row.accepting) return kRefused;
    history_.push_back(state_);
    terminated_ = true;
    return kAccepted;
  }
  if (!((row.bits[token >> 5] >> (token & 31)) & 1u)) return kRefused;
  const int32_t next = core_->advance(state_, token);
  if (next == kUnknown) return kNeedsExpansion;
  history_.push_back(state_);
  state_ = next;
  return kAccepted;
}

void MatcherCore::consume_expanding(int32_t token) {
  const int32_t next = core_->advance_expanding(state_, token);
  history_.push_back(state_);
  state_ = next;
}

int32_t MatcherCore::rollback(int32_t n) {
  int32_t undone = 0;
  while (undone < n && !history_.empty()) {
    if (terminated_) {
      terminated_ = false;
    }
    state_ = history_.back();
    history_.pop_back();
    ++undone;
  }
  return undone;
}

}  // namespace tokamata
