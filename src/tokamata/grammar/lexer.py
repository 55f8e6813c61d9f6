"""The lexer: one lazy byte DFA over all of a grammar's text terminals, each tagged with its
index, entered at a start state per set of terminals the parser allows.

Invariants:
- Terminal ``i`` is ``tagged(expr_i, i)``; a lexer state is an interned alternation of such
  tagged derivatives, so it is identified structurally (rows are shared across grammars and
  constraints through the vocabulary's row cache) and ``ends(state)`` (the tags of members
  that match the empty string) are the terminals that may end exactly here.
- The DFA's byte classes come from the alternation of every terminal, so they refine the
  classes of every start state and every state reachable from one.
- A state's key for the vocabulary's shared rows and boundary events is the id of its
  expression with the tags taken off (``untagged``): a row (tokens that keep some terminal
  live) and the boundary nodes (where some terminal may end) do not depend on which terminal
  is which, so the "inside a JSON string" state of every schema shares one row, whatever its
  terminal's index. ``ends(state)`` does depend on the tags and is never shared.
- ``start(terminals)`` is the state for "a lexeme of one of these terminals begins here"; it
  is ``DEAD`` when none of them is a text terminal. Start states are added to the DFA's state
  list like any other state; the C++ side learns of them through ``pending_states``.
"""

from __future__ import annotations

import functools

from ..automata import derivatives as d
from ..automata.dfa import DEAD, LazyByteDfa
from ..limits import Limits
from .ir import Grammar

__all__ = ["Lexer"]


class Lexer:
    def __init__(self, grammar: Grammar, limits: Limits):
        self.tagged: dict[int, d.Expr] = {
            index: d.tagged(terminal.expr, index)
            for index, terminal in enumerate(grammar.terminals) if terminal.expr is not None}
        self._untagged_ids: dict[int, int] = {}
        # (a closure over the memo, not a bound method: the DFA must not keep the lexer alive)
        self.dfa = LazyByteDfa(d.alternation(*self.tagged.values()), limits,
                               key_of=functools.partial(_untagged_id, self._untagged_ids))
        self._starts: dict[frozenset[int], int] = {}

    def start(self, terminals: frozenset[int]) -> int:
        """The start state for a lexeme of one of ``terminals`` (non-text ones are skipped)."""
        state = self._starts.get(terminals)
        if state is None:
            expr = d.alternation(*(self.tagged[t] for t in terminals if t in self.tagged))
            state = DEAD if expr is d.NOTHING else self.dfa.intern_state(expr)
            self._starts[terminals] = state
        return state

    def ends(self, state: int) -> tuple[int, ...]:
        """Terminals that may end at ``state``."""
        return d.end_marks(self.dfa.states[state])

    def step(self, state: int, byte: int) -> int:
        return self.dfa.step(state, byte)


def _untagged_id(memo: dict[int, int], node: d.Expr) -> int:
    """The id of ``node`` without its terminals' tags (the state's shared-row key)."""
    found = memo.get(node.id)
    if found is None:
        found = memo[node.id] = untagged(node).id
    return found


def untagged(node: d.Expr) -> d.Expr:
    """``node``'s language without terminal tags (lexer states are tagged terminals or
    alternations of them)."""
    if node.kind == d._TAGGED:
        return untagged(node.args[0])
    if node.kind == d._ALT and any(m.kind == d._TAGGED for m in node.args):
        return d.alternation(*(untagged(m) for m in node.args))
    return node
