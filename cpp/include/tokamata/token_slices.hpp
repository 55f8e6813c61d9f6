// The vocabulary cut into slices, so that dense token rows skip most of the trie (seed 001,
// "Slicer optimization"; here exact, not a heuristic).
//
// Invariants:
// - The slice automaton A is a byte DFA (table [num_states][256], -1 = dead, state 0 = start)
//   whose language is prefix-closed: a byte string is an A-string when A runs over it without
//   dying. A text token is sliceable when its bytes are an A-string. Sliceable tokens are split
//   by byte length into slices (upper bounds ascending; the last slice takes every longer
//   token); every other text token is in the rest. Each slice and the rest have their own trie
//   (same token ids) and a map from its nodes to the full trie's nodes; each slice knows its
//   longest token's length and, as a bitset, its own and all shorter slices' tokens.
// - depth(dfa, s) is a d such that every A-string of length 1..d leads s to a live state. It is
//   found by a breadth-first search over pairs (A state, DFA state), each pair taken at the
//   first depth it appears; it stops early (and returns the depth proven so far) past a budget
//   of pairs or of DFA expansions, so it costs little more than the walk it saves. A caller may
//   also pass `text_depth`, a sound bound from the state's expression (every A-string of at
//   most that many bytes keeps s live, as for "JSON string text of at most 96 characters" or
//   "any JSON string text minus finitely many keys"); when it proves anything, no search is
//   made.
// - walk_sliced gives exactly walk_trie's row over the full trie: a slice whose longest token
//   has at most depth(s) bytes is allowed whole (its bitset is ORed in, its trie not walked);
//   every other slice's trie and the rest's are walked. When no slice is taken whole, it is
//   walk_trie over the full trie (seven tries' roots would cost more than one).
// - With boundary events requested, it reports the walked tries' events, mapped to full-trie
//   nodes, sorted and deduplicated: every event of the full walk except those on nodes all of
//   whose tokens (the node's subtree) are in slices taken whole. Those cannot change a mask: a
//   crossing from an event only adds tokens below its node, and those are allowed already.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "tokamata/token_row.hpp"
#include "tokamata/token_trie.hpp"

namespace tokamata {

struct TokenSlice {
  std::shared_ptr<const TokenTrie> trie;  // the slice's tokens only
  std::vector<uint32_t> to_full;          // node of `trie` -> node of the full trie
  // this slice's and all shorter slices' tokens (dense; num_allowed: how many)
  std::shared_ptr<const TokenRow> through;
  int32_t max_length = 0;                 // longest token, in bytes (0 when empty)
};

class TokenSlices {
 public:
  // automaton: num_states * 256 int32 entries; bounds: the slices' length upper bounds,
  // ascending (tokens longer than the last bound form one more slice).
  TokenSlices(std::shared_ptr<const TokenTrie> full, const int32_t* automaton, int32_t num_states,
              const int32_t* bounds, int32_t num_bounds);

  const TokenTrie& full() const { return *full_; }
  const std::vector<TokenSlice>& slices() const { return slices_; }
  const TokenSlice& rest() const { return rest_; }
  // The slices' `through` rows: the bases rows over this vocabulary are sealed against (a
  // string-like state's row is one of them plus a few hundred words).
  const RowBases& bases() const { return bases_; }
  using TextDepth = std::function<int32_t(int32_t state)>;
  int32_t depth(LazyDfa& dfa, int32_t state, const TextDepth* text_depth = nullptr) const;

 private:
  TokenSlice make_slice(const std::vector<uint8_t>& member) const;

  std::shared_ptr<const TokenTrie> full_;
  std::vector<int32_t> automaton_;
  int32_t num_states_;
  // per automaton state, the distinct successors with the bytes leading there
  std::vector<std::vector<std::pair<int32_t, std::vector<uint8_t>>>> moves_;
  std::vector<TokenSlice> slices_;
  RowBases bases_;
  TokenSlice rest_;
  int32_t max_needed_ = 0;  // the longest sliceable token
};

// walk_trie's result over the full trie of `slices` (see the invariants above).
void walk_sliced(const TokenSlices& slices, LazyDfa& dfa, int32_t state, TokenRow& row,
                 std::vector<std::pair<uint32_t, int32_t>>* accepting_nodes = nullptr,
                 const TokenSlices::TextDepth* text_depth = nullptr);

}  // namespace tokamata
