// Lexer start states made natively: the state a lexeme starts in after a parser state, as the
// GrammarCore's start function (grammar_walk.hpp), so that no walk calls back into Python.
//
// Invariants:
// - terminals[i] is the arena id of terminal i tagged with i (grammar/lexer.py's
//   tagged(expr_i, i), imported once when the constraint is made), or NOTHING for a special
//   token. The start state of an allowed set is the DerivativeDfa state of the alternation of
//   its members' and the ignored terminals' tagged ids: the arena normalizes the alternation
//   as derivatives.alternation does, so it is the state Python's Lexer.start makes for the same
//   set (tests compare the two), and the lexer's states, keys and counts do not depend on which
//   side made a start state first.
// - New states are registered with the lexer core's LazyDfa at once (accepting flags; keys
//   later), under the compute mutex the walk holds; the DFA's limits (max_dfa_states) raise
//   LimitError as any expansion does. Nothing here takes the GIL.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tokamata/derivative_dfa.hpp"
#include "tokamata/earley.hpp"
#include "tokamata/grammar_walk.hpp"

namespace tokamata {

// The GrammarCore start function over `lexer` (the DerivativeDfa of `core`, a RegexCore made
// by regex_core_over) and `parser`: allowed-set id -> start state (kDead: no text terminal).
// `terminals` (one arena id per terminal) and `ignored` (one flag per terminal) must have the
// grammar's terminal count; std::invalid_argument otherwise, or for an id the arena lacks.
// `core` must outlive the function (the GrammarCore that holds it holds the core).
GrammarCore::StartFn native_starts(std::shared_ptr<DerivativeDfa> lexer, RegexCore* core,
                                   std::shared_ptr<EarleyCore> parser, std::vector<int32_t> terminals,
                                   const std::vector<uint8_t>& ignored);

}  // namespace tokamata
