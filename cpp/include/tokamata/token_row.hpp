// A constraint's byte DFA (expanded lazily through a callback) and its cached token rows.
//
// Invariants:
// - Transition table entries are DEAD (-1), UNKNOWN (-2, not computed yet) or a state; an
//   unknown entry is computed through the expander, which fills a run of classes at once.
//   The table lives in fixed-size blocks that never move, so a reader never sees a
//   reallocation; an entry changes at most once (UNKNOWN -> value) and before any row that
//   depends on it is published.
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
#include "tokamata/shared_cache.hpp"

#include "tokamata/token_trie.hpp"

namespace tokamata {

constexpr int32_t kDead = -1;
constexpr int32_t kUnknown = -2;
constexpr int64_t kKeyLater = INT64_MIN;

// A limit of tokamata.Limits crossed in C++: raised in Python as tokamata.LimitExceeded(name,
// value, bound) by the one exception translator of the bindings, wherever it surfaces.
class LimitError : public std::runtime_error {
 public:
  LimitError(std::string name, double value, double bound)
      : std::runtime_error(name + " " + std::to_string(value) + " " + std::to_string(bound)),
        name(std::move(name)), value(value), bound(bound) {}
  std::string name;
  double value;
  double bound;
};

class LazyDfa {
 public:
  // expand(state, cls) must call set_entries(state, first, last, target) with
  // first <= cls <= last (and add_states first for new states).
  using Expander = std::function<void(int32_t state, int32_t cls)>;
  using KeyFunction = std::function<int64_t(int32_t state)>;

  LazyDfa(const uint8_t* class_map, int32_t num_classes, int32_t max_states, Expander expand);

  int32_t num_classes() const { return num_classes_; }
  int32_t num_states() const { return num_states_; }
  bool accepting(int32_t state) const { return accepting_[state] != 0; }
  const uint8_t* class_map() const { return class_map_; }

  // Next state, computing the transition first if needed.
  int32_t step(int32_t state, uint8_t byte) { return step_class(state, class_map_[byte]); }
  int32_t step_class(int32_t state, int32_t cls) {
    int32_t next = row_ptr(state)[cls].load(std::memory_order_acquire);
    if (next == kUnknown) {
      expand_(state, cls);
      next = row_ptr(state)[cls].load(std::memory_order_acquire);
      if (next == kUnknown) throw std::logic_error("expander left a transition unknown");
    }
    return next;
  }
  // Next state without computing anything; kUnknown if not known.
  int32_t peek(int32_t state, uint8_t byte) const {
    return row_ptr(state)[class_map_[byte]].load(std::memory_order_acquire);
  }
  // The row of `state` (num_classes entries); entries may be kUnknown. Entries are written
  // once (release) and read with acquire, so a reader that sees a target also sees it added.
  const std::atomic<int32_t>* row_ptr(int32_t state) const {
    return blocks_[state / kBlockStates].get() + (state % kBlockStates) * num_classes_;
  }

  void add_states(const uint8_t* accepting, const int64_t* keys, int32_t count);
  void set_entries(int32_t state, int32_t first, int32_t last, int32_t target);
  // The state's structural key (computed through the key function if it was deferred).
  int64_t key(int32_t state) {
    int64_t found = keys_[state];
    if (found == kKeyLater) {
      if (!key_function_) throw std::logic_error("a deferred state key without a key function");
      found = key_function_(state);
      if (found == kKeyLater) throw std::logic_error("the key function deferred a key again");
      keys_[state] = found;
    }
    return found;
  }
  void set_key_function(KeyFunction key_function) { key_function_ = std::move(key_function); }

 private:
  static constexpr int32_t kBlockStates = 64;

  uint8_t class_map_[256];
  int32_t num_classes_;
  int32_t max_states_;
  int32_t num_states_ = 0;
  std::vector<std::unique_ptr<std::atomic<int32_t>[]>> blocks_;  // sized once for max_states
  std::vector<uint8_t> accepting_;                  // reserved once for max_states
  std::vector<int64_t> keys_;                       // structural key per state, reserved once
  Expander expand_;
  KeyFunction key_function_;
};

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
