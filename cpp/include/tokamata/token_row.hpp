// A constraint's cached token rows over its lazy byte DFA (lazy_dfa.hpp).
//
// Invariants:
// - The DFA (lazy_dfa.hpp) is expanded through its expander; an entry changes at most once
//   (kUnknown -> value) and before any row that depends on it is published.
// - A token row for state s is the set of trie tokens whose bytes lead s to a live state,
//   as a TokenRow (compact_row.hpp; sealed over the lexer's RowBaseSet: the slices' rows and
//   rows of its own), plus whether s accepts (EOS allowed). The walk computes
//   every transition it takes, so after row(s) was walked here, running the DFA from s over
//   an allowed token's bytes never meets UNKNOWN.
// - Rows are computed once per state and never change; they are published under cache_mu_.
//   Computing takes compute_mu_; callers must not hold the Python GIL while waiting for it
//   (a grammar's start callback, run under it, re-acquires the GIL).
// - A row depends only on the trie and on the state's expression, so rows are also shared
//   across constraints through the vocabulary's SharedRowCache, keyed by the expression's
//   structural id (state_keys). A state whose row came from there may still be unexpanded;
//   consume then expands along the token (advance_expanding, under compute_mu_).
// - A state's key may be given as kKeyLater: it is then asked of the key function the first
//   time a row or boundary list needs it (under compute_mu_), since most states are never the
//   root of a walk and some keys cost a derivative-engine pass to compute.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokamata/compact_row.hpp"
#include "tokamata/lazy_dfa.hpp"
#include "tokamata/shared_cache.hpp"

#include "tokamata/token_trie.hpp"

namespace tokamata {

// Rows by structural state key, shared by every constraint over one vocabulary (bounded,
// CLOCK eviction of rows no core holds: shared_cache.hpp).
using SharedRowCache = SharedCache<const TokenRow>;

class TokenSlices;

class RegexCore {
 public:
  // `slices` (optional) must be built over `trie`; rows are then walked slice by slice.
  // `text_depth(state)` (optional, with slices): every sliceable string of at most that many
  // bytes keeps the state live (0: nothing known); see token_slices.hpp.
  RegexCore(std::shared_ptr<const TokenTrie> trie, std::shared_ptr<SharedRowCache> shared,
            std::unique_ptr<LazyDfa> dfa, std::vector<int32_t> eos_ids,
            std::shared_ptr<const TokenSlices> slices = nullptr,
            std::function<int32_t(int32_t)> text_depth = nullptr);

  const TokenTrie& trie() const { return *trie_; }
  const TokenSlices* slices() const { return slices_.get(); }
  // The bases new rows and masks of this lexer are sealed over (the slices' rows, then rows of
  // its own; compact_row.hpp). Thread-safe.
  RowBaseSet& row_bases() const { return row_bases_; }
  const std::function<int32_t(int32_t)>* text_depth() const { return text_depth_ ? &text_depth_ : nullptr; }
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }
  bool is_eos(int32_t token) const;
  int32_t num_words() const { return (trie_->vocab_size() + 31) / 32; }

  // Cached row or nullptr; never blocks on a computation.
  const TokenRow* cached_row(int32_t state) const;
  // The cached row as an owning pointer, or null; never computes.
  std::shared_ptr<const TokenRow> cached_shared_row(int32_t state) const;
  // Computes (or waits for) the row. Must be called without the GIL.
  const TokenRow* compute_row(int32_t state);
  // The same row as an owning pointer (for holders that outlive cache clears).
  std::shared_ptr<const TokenRow> shared_row(int32_t state);
  // Publishes a row computed elsewhere (under compute_mutex()); returns the cached one.
  const TokenRow* publish_row(int32_t state, std::shared_ptr<const TokenRow> row);
  // State after `token` (allowed by the row of `state`) without expanding anything;
  // kUnknown if a state on the way is not expanded yet.
  int32_t advance(int32_t state, int32_t token) const;
  // The same, expanding as needed. Must be called without the GIL.
  int32_t advance_expanding(int32_t state, int32_t token);
  size_t num_cached_rows() const;
  // The cached rows' own storage (TokenRow::memory_bytes).
  size_t cached_row_bytes() const;
  // The DFA's transition table (LazyDfa::memory_bytes).
  size_t table_bytes() const { return dfa_->memory_bytes(); }
  int32_t num_states() const { return dfa_->num_states(); }
  // For walks over the same DFA (grammar masks): hold compute_mutex() while using dfa().
  std::mutex& compute_mutex() { return compute_mu_; }
  LazyDfa& dfa() { return *dfa_; }
  // Registers states the Python side built outside any expansion (lexer start states), given as
  // the states from index `known` on; those the DFA already has are skipped. Without the GIL.
  void register_states(int32_t known, const uint8_t* accepting, const int64_t* keys, int32_t count);

 private:
  std::shared_ptr<const TokenTrie> trie_;
  std::shared_ptr<SharedRowCache> shared_;
  std::unique_ptr<LazyDfa> dfa_;
  std::vector<int32_t> eos_ids_;
  std::shared_ptr<const TokenSlices> slices_;
  std::function<int32_t(int32_t)> text_depth_;
  mutable RowBaseSet row_bases_;
  mutable std::mutex cache_mu_;
  std::mutex compute_mu_;
  std::unordered_map<int32_t, std::shared_ptr<const TokenRow>> rows_;
};

// The trie walk: allowed tokens from `state` into `row` (seed 001's non-recursive walk). If
// `accepting_nodes` is given, it also receives (node, state) for every live node with children
// whose state accepts (a grammar's lexeme boundaries inside tokens), in DFS order, as
// node_map[node] when a node map is given (a sub-trie's nodes as the full trie's). Bits are
// ORed into the (building) row's words and the allowed tokens added to row.num_allowed. With `root`, only the
// tokens strictly below that node are walked, `state` being the state after its path.
void walk_trie(const TokenTrie& trie, LazyDfa& dfa, int32_t state, TokenRow& row,
               std::vector<std::pair<uint32_t, int32_t>>* accepting_nodes = nullptr,
               const uint32_t* node_map = nullptr, uint32_t root = 0);

}  // namespace tokamata
