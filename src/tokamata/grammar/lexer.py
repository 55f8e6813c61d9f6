"""The lexer: one lazy byte DFA over all of a grammar's text terminals, each tagged with its
index, entered at a start state per set of terminals the parser allows. The DFA is native
(``_core.DerivativeDfa`` over the arena of :mod:`..automata.native`): the C++ walks expand it
without calling back into Python.

Invariants:
- Terminal ``i`` is ``tagged(expr_i, i)``; a lexer state is an interned alternation of such
  tagged derivatives, so it is identified structurally (rows are shared across grammars and
  constraints through the vocabulary's row cache) and ``ends(state)`` (the tags of members
  that match the empty string) are the terminals that may end exactly here.
- The DFA's byte classes come from the alternation of every terminal, so they refine the
  classes of every start state and every state reachable from one.
- A state's key for the vocabulary's shared rows and boundary events is the id of its
  expression with the tags taken off (``untagged``, in the arena, plus the bridge's key base): a row (tokens that keep some terminal
  live) and the boundary nodes (where some terminal may end) do not depend on which terminal
  is which, so the "inside a JSON string" state of every schema shares one row, whatever its
  terminal's index. ``ends(state)`` does depend on the tags and is never shared.
- The DFA's time budget is what is left of the compile's (``Limits.max_compile_seconds``
  from the compile call on, :mod:`tokamata.deadline`): one budget covers the front end and
  every state the DFA builds, while compiling and while decoding.
- ``start(terminals)`` is the state for "a lexeme of one of these terminals begins here"; it
  is ``DEAD`` when none of them is a text terminal. Start states are added to the DFA's state
  list like any other state. ``start`` builds the alternation with the Python derivative
  module; the C++ walks make the same states natively (``_core.GrammarCore`` over
  ``terminal_nodes()``, the tagged terminals' arena ids, cpp lexer_starts.hpp): the arena
  normalizes an alternation as ``derivatives.alternation`` does, so both give one state for
  one set, whichever comes first.
"""

from __future__ import annotations

from array import array

import numpy as np

from .. import _core
from ..automata import derivatives as d
from ..automata import native
from ..automata.dfa import DEAD, global_class_starts
from ..deadline import remaining_seconds
from ..limits import Limits
from .ir import Grammar

__all__ = ["Lexer"]


class Lexer:
    """A grammar's lexer over its text terminals (a native DFA; see the module docstring).

    >>> from tokamata.grammar.ir import Grammar, Rule, Terminal, nonterminal
    >>> word = Terminal("WORD", d.repeat(d.byte_set(1 << 97), 1, d.UNBOUNDED))
    >>> lexer = Lexer(Grammar([word], [Rule(nonterminal(0), (0,))], "start"), Limits())
    >>> state = lexer.step(lexer.start(frozenset({0})), ord("a"))
    >>> lexer.ends(state), lexer.step(state, ord("b"))
    ((0,), -1)
    """

    def __init__(self, grammar: Grammar, limits: Limits):
        self._terminals = grammar.terminals
        self._tagged: dict[int, d.Expr] = {}  # index -> tagged(expr, index), made when a start state needs it
        self.bridge = native.bridge()
        # the classes of every terminal's leaves refine those of every state (a tag does not
        # change them; terminals are tagged and imported into the arena when a start state,
        # or terminal_nodes() for the native ones, first needs them)
        starts = global_class_starts(*(terminal.expr for terminal in grammar.terminals if terminal.expr is not None))
        self.dfa = _core.DerivativeDfa(self.bridge.arena, np.asarray(starts, dtype=np.int32), self.bridge.key_base,
                                       limits.max_dfa_states, remaining_seconds(limits))
        self._starts: dict[frozenset[int], int] = {}
        self._ends: dict[int, tuple[int, ...]] = {}

    def start(self, terminals: frozenset[int]) -> int:
        """The start state for a lexeme of one of ``terminals`` (non-text ones are skipped)."""
        state = self._starts.get(terminals)
        if state is None:
            expr = d.alternation(*(self._tagged_terminal(t) for t in terminals))
            state = DEAD if expr is d.NOTHING else self.dfa.intern_state(self.bridge.to_arena(expr))
            self._starts[terminals] = state
        return state

    def terminal_nodes(self) -> np.ndarray:
        """The arena id of every terminal tagged with its index (``NOTHING``: a special
        token), imported in one batch and tagged in the arena (no tagged Python expressions:
        the same ids ``start`` reaches through them): what the native start states are made of."""
        ids = self.bridge.tagged_many([terminal.expr for terminal in self._terminals])
        return np.frombuffer(array("i", ids), dtype=np.int32)

    def _tagged_terminal(self, index: int) -> d.Expr:
        """Terminal ``index`` tagged with its index (``NOTHING`` for a special token)."""
        found = self._tagged.get(index)
        if found is None:
            expr = self._terminals[index].expr
            found = self._tagged[index] = d.NOTHING if expr is None else d.tagged(expr, index)
        return found

    def ends(self, state: int) -> tuple[int, ...]:
        """Terminals that may end at ``state``."""
        found = self._ends.get(state)
        if found is None:
            found = self._ends[state] = tuple(self.dfa.ends(state))
        return found

    def step(self, state: int, byte: int) -> int:
        """The state after ``byte`` (``DEAD``: none)."""
        return self.dfa.step(state, byte)

    @property
    def num_states(self) -> int:
        return self.dfa.num_states


def untagged(node: d.Expr) -> d.Expr:
    """``node``'s language without terminal tags (lexer states are tagged terminals or
    alternations of them); the Python counterpart of the arena's ``untagged``."""
    if node.kind == d.Kind.TAGGED:
        return untagged(node.args[0])
    if node.kind == d.Kind.ALT and any(m.kind == d.Kind.TAGGED for m in node.args):
        return d.alternation(*(untagged(m) for m in node.args))
    return node
