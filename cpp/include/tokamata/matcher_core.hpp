// One sequence's position in a constraint: the hot path of fill_bitmask / consume.
//
// Invariants:
// - state_ is a live DFA state; history_ holds the state before each consumed token (EOS
//   included), so rollback(n) restores exactly the state n tokens ago.
// - After EOS is consumed the matcher is terminated: only rollback changes it.
// - A bitmask row it fills has bit t set iff token t may come next: a trie token that keeps
//   the output extendable to a full match, or an EOS id when the output is a full match.
//   After termination only EOS ids are set. Bits past vocab_size are cleared.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "tokamata/token_row.hpp"

namespace tokamata {

// kNeedsExpansion: allowed, but the DFA must be expanded along the token first; call
// consume_expanding (without the GIL). The matcher is unchanged.
enum ConsumeStatus : int32_t { kAccepted = 0, kRefused = 1, kOutOfRange = 2, kNeedsExpansion = 3 };

class MatcherCore {
 public:
  explicit MatcherCore(std::shared_ptr<RegexCore> core, int32_t start_state = 0);

  // Row for the current state; computing it if needed (must be called without the GIL then).
  const TokenRow* row_if_cached() const { return core_->cached_row(state_); }
  const TokenRow* row() { return core_->compute_row(state_); }

  void fill(const TokenRow& row, uint32_t* out, int64_t num_words) const;
  ConsumeStatus consume(int32_t token, const TokenRow& row);
  void consume_expanding(int32_t token);  // after kNeedsExpansion; without the GIL
  int32_t rollback(int32_t n);  // returns how many were undone (n, or fewer if history is short)
  bool is_terminated() const { return terminated_; }
  int32_t state() const { return state_; }
  size_t history_length() const { return history_.size(); }
  const RegexCore& core() const { return *core_; }
  std::shared_ptr<RegexCore> shared_core() const { return core_; }

 private:
  std::shared_ptr<RegexCore> core_;
  int32_t state_;
  bool terminated_ = false;
  std::vector<int32_t> history_;
};

}  // namespace tokamata
