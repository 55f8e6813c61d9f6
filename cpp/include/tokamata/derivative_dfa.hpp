// A grammar lexer's byte DFA whose states are expressions of an ExprArena, expanded without
// Python: the native counterpart of automata/dfa.py's LazyByteDfa, plugged into a LazyDfa as
// its expander.
//
// Invariants:
// - State i is one arena node (interned: a node has at most one state); the byte classes
//   (class_starts) are fixed when the DFA is made and refine the own classes of every state
//   that can be reached (the Python side computes them from every terminal's leaves).
// - A state's transitions are computed one own byte interval at a time, by the rule of
//   LazyByteDfa.expand_for_core: a request for an ASCII class computes every own interval
//   starting below 0x80 (and the one requested), a non-ASCII one the whole row, except
//   inside a UTF-8 character, where only the interval asked for is computed. So the LazyDfa
//   fed by expand() holds exactly the transitions the Python engine would compute, with the
//   same targets (targets are identified by their expression).
// - States built outside an expansion (start states, steps asked by Python) are registered
//   with the LazyDfa by the next expand() or by the caller (register_states).
// - A state's key is key_base + the id of its expression without tags (untagged): equal keys
//   mean equal languages. key_base keeps the keys of one arena apart from those of another
//   and from the Python engine's.
// - Every method takes the arena's mutex; nothing under it calls back into Python (every
//   expression kind is derived natively).
// - Limits: more than max_states states, or more than max_seconds spent expanding, raise
//   LimitError (LimitExceeded in Python).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "tokamata/expr_arena.hpp"
#include "tokamata/token_row.hpp"

namespace tokamata {

class DerivativeDfa {
 public:
  DerivativeDfa(std::shared_ptr<ExprArena> arena, const int32_t* class_starts, int32_t num_classes,
                int64_t key_base, int32_t max_states, double max_seconds);

  ExprArena& arena() { return *arena_; }
  int32_t num_classes() const { return num_classes_; }
  const uint8_t* class_map() const { return class_map_; }
  int32_t num_states();
  // The state of `node` (added if new); node must not be NOTHING and its leaves must be
  // among those the classes were made from.
  int32_t intern_state(int32_t node);
  // The state of the alternation of `nodes` (the arena's constructor normalizes it as
  // derivatives.alternation does, so it is the state Python's Lexer.start interns for the same
  // members), added if new; kDead when the alternation is NOTHING.
  int32_t start(const int32_t* nodes, size_t count);
  // Registers with `dfa` the states it does not know yet (accepting flags; keys later): what
  // expand() does for the states it adds, for states added by start() or intern_state().
  void register_states(LazyDfa& dfa);
  int32_t node(int32_t state);
  bool accepting(int32_t state);
  // The LazyDfa expander: computes (state, cls) and its neighbours, registers new states.
  void expand(LazyDfa& dfa, int32_t state, int32_t cls);
  // The next state after `byte` (-1: dead), computing one interval.
  int32_t step(int32_t state, int32_t byte);
  int64_t key(int32_t state);
  std::vector<int32_t> ends(int32_t state);
  int32_t text_depth(int32_t state);
  // Accepting flags of states [first, num_states()) (keys are all deferred).
  std::vector<uint8_t> accepting_from(int32_t first);

 private:
  // The state's own intervals start at 0 and at each of arena_->cuts(node) (copied into
  // `starts`, since the arena's cut table may move while targets are computed); returns the
  // offset of its targets in targets_ (made on first use).
  int32_t own(int32_t state, uint8_t* starts, int32_t& count);
  int32_t target(int32_t state, int32_t offset, int32_t interval, int32_t start_byte);
  int32_t add_state(int32_t node);
  void charge(double seconds);

  std::shared_ptr<ExprArena> arena_;
  uint8_t class_map_[256];
  std::vector<int32_t> class_starts_;
  int32_t num_classes_;
  int64_t key_base_;
  int32_t max_states_;
  double max_seconds_;
  double elapsed_ = 0.0;
  std::vector<int32_t> nodes_;  // state -> node
  std::vector<int32_t> offsets_;  // state -> first of its targets in targets_, -1 before own()
  std::vector<int32_t> targets_;  // per own interval: kUnknown, kDead or a state
  std::unordered_map<int32_t, int32_t> index_;  // node -> state
};

// A constraint's RegexCore over the native lexer `lexer`: its LazyDfa expands through
// lexer->expand, keys and text depths come from the lexer, and the states the lexer already
// has are registered (accepting flags, keys computed later). `slices` (optional) must be built
// over `trie` (std::invalid_argument otherwise). No callback into Python.
std::shared_ptr<RegexCore> regex_core_over(std::shared_ptr<const TokenTrie> trie, std::shared_ptr<SharedRowCache> shared,
                                           std::shared_ptr<DerivativeDfa> lexer, std::vector<int32_t> eos_ids,
                                           int32_t max_states, std::shared_ptr<const TokenSlices> slices = nullptr);

}  // namespace tokamata
