"""The Earley parser over terminals: flat tables for the C++ recognizer (``_core.EarleyCore``).

Invariants:
- A parser state is a handle (int); 0 is the state before any terminal. ``scan(h, t)`` is the
  state after terminal ``t`` or -1 if ``t`` cannot come next; states are immutable and
  hash-consed by kernel and by content (the closure's open items and acceptance), so equal
  parses share handles (masks are cached per handle) and the states after any mix of
  abutting lexemes stay polynomially many.
- ``allowed(h)`` is exactly the set of terminals after which the parse can still be completed
  (every nonterminal is productive: ``check_grammar``); ``accepting(h)`` says the terminals so
  far form a sentence.
- The recognizer is ``grammar/earley_reference.py``'s algorithm in C++ (tests compare the two);
  its limits (``max_earley_items``, ``max_parser_states``: live states) raise
  :class:`LimitExceeded` (translated from the C++ LimitError by the bindings).
- A constraint's core releases the states no live matcher can reach (``ConstraintCore.sweep``,
  matcher_core.hpp "Long life") and reuses their handles, so nothing here caches by handle.
"""

from __future__ import annotations

from .. import _core
from ..limits import Limits
from .ir import Grammar, rules_core

__all__ = ["EarleyParser"]


class EarleyParser:
    """Earley recognition over ``grammar``'s terminals.

    >>> from tokamata.grammar.ir import Grammar, Rule, Terminal, nonterminal
    >>> from tokamata.automata import derivatives as d
    >>> a = Terminal("A", d.byte_set(1 << 97))
    >>> g = Grammar((a,), ("start",), (Rule(0, (0,)), Rule(0, (nonterminal(0), 0))), 0)
    >>> p = EarleyParser(g, Limits())
    >>> h = p.scan(p.scan(0, 0), 0)
    >>> p.accepting(h), sorted(p.allowed(h))
    (True, [0])
    """

    def __init__(self, grammar: Grammar, limits: Limits):
        self.grammar = grammar
        # the tables (positions, nullable nonterminals, prefixes, prediction closures) are
        # derived in C++ from the flat rules
        self._core = _core.EarleyCore(rules_core(grammar), grammar.start, limits.max_earley_items,
                                      limits.max_parser_states)

    @property
    def core(self) -> "_core.EarleyCore":
        return self._core

    def scan(self, handle: int, terminal: int) -> int:
        """The state after ``terminal``, or -1 if it cannot come next."""
        return self._core.scan(handle, terminal)

    def allowed(self, handle: int) -> frozenset[int]:
        """Terminals that may come next."""
        return frozenset(self._core.allowed(handle))

    def allowed_id(self, handle: int) -> int:
        """Id of ``allowed(handle)``: equal sets have equal ids."""
        return self._core.allowed_id(handle)

    def allowed_by_id(self, allowed_id: int) -> frozenset[int]:
        return frozenset(self._core.allowed_by_id(allowed_id))

    def accepting(self, handle: int) -> bool:
        """The terminals so far form a sentence."""
        return self._core.accepting(handle)

    @property
    def num_states(self) -> int:
        """Live parser states (released ones are not counted)."""
        return self._core.num_sets

