"""The Earley parser over terminals: flat tables for the C++ recognizer (``_core.EarleyCore``).

Invariants:
- A parser state is a handle (int); 0 is the state before any terminal. ``scan(h, t)`` is the
  state after terminal ``t`` or -1 if ``t`` cannot come next; states are immutable and
  hash-consed by kernel, so equal parses share handles (masks are cached per handle).
- ``allowed(h)`` is exactly the set of terminals after which the parse can still be completed
  (every nonterminal is productive: ``check_grammar``); ``accepting(h)`` says the terminals so
  far form a sentence.
- The recognizer is ``grammar/earley_reference.py``'s algorithm in C++ (tests compare the two);
  its limits (``max_earley_items``, ``max_parser_states``) raise :class:`LimitExceeded`.
"""

from __future__ import annotations

import numpy as np

from .. import _core
from ..errors import LimitExceeded
from ..limits import Limits
from .ir import Grammar, is_terminal, nonterminal_index

__all__ = ["EarleyParser", "limit_error"]

_END_OF_RULE = np.iinfo(np.int32).min


def limit_error(error: OverflowError) -> LimitExceeded:
    """The :class:`LimitExceeded` a C++ ``LimitError("name value bound")`` stands for."""
    parts = str(error).split()
    if len(parts) == 3:
        return LimitExceeded(parts[0], int(parts[1]), int(parts[2]))
    return LimitExceeded(str(error), None, None)


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
        num_nonterminals = len(grammar.nonterminals)
        next_symbol: list[int] = []
        lhs_of: list[int] = []
        rule_starts: list[list[int]] = [[] for _ in range(num_nonterminals)]
        for rule in grammar.rules:
            rule_starts[rule.lhs].append(len(next_symbol))
            next_symbol.extend(rule.rhs)
            lhs_of.extend([rule.lhs] * (len(rule.rhs) + 1))
            next_symbol.append(_END_OF_RULE)
        nullable = self._nullable(grammar)
        prefix: list[list[int]] = []
        predicts: list[set[int]] = []
        for starts in rule_starts:
            positions, direct = [], set()
            for position in starts:
                while next_symbol[position] != _END_OF_RULE:
                    symbol = next_symbol[position]
                    positions.append(position)
                    if is_terminal(symbol):
                        break
                    nt = nonterminal_index(symbol)
                    direct.add(nt)
                    if nt not in nullable:
                        break
                    position += 1
            prefix.append(positions)
            predicts.append(direct)
        closures = []
        for nt in range(num_nonterminals):
            found, stack = {nt}, [nt]
            while stack:
                for other in predicts[stack.pop()]:
                    if other not in found:
                        found.add(other)
                        stack.append(other)
            closures.append(sorted(found))
        prefix_offsets, prefix_data = _csr(prefix)
        closure_offsets, closure_data = _csr(closures)
        self._core = _core.EarleyCore(
            np.asarray(next_symbol, dtype=np.int32), np.asarray(lhs_of, dtype=np.int32),
            prefix_offsets, prefix_data, closure_offsets, closure_data,
            np.asarray([1 if nt in nullable else 0 for nt in range(num_nonterminals)], dtype=np.uint8),
            grammar.start, len(grammar.terminals), limits.max_earley_items, limits.max_parser_states)
        self._allowed: dict[int, frozenset[int]] = {}
        self._accepting: dict[int, bool] = {}

    @staticmethod
    def _nullable(grammar: Grammar) -> frozenset[int]:
        """Nonterminals deriving the empty string: a work list over the rules without
        terminals, linear in the grammar's size."""
        nullable: set[int] = set()
        missing = []  # per rule: nonterminal occurrences not yet known nullable
        users: dict[int, list[int]] = {}
        ready = []
        rules = grammar.rules
        for index, rule in enumerate(rules):
            if any(is_terminal(s) for s in rule.rhs):
                missing.append(-1)  # never nullable
                continue
            for symbol in rule.rhs:
                users.setdefault(nonterminal_index(symbol), []).append(index)
            missing.append(len(rule.rhs))
            if not rule.rhs:
                ready.append(index)
        while ready:
            lhs = rules[ready.pop()].lhs
            if lhs in nullable:
                continue
            nullable.add(lhs)
            for index in users.get(lhs, ()):
                missing[index] -= 1
                if missing[index] == 0:
                    ready.append(index)
        return frozenset(nullable)

    @property
    def core(self) -> "_core.EarleyCore":
        return self._core

    def scan(self, handle: int, terminal: int) -> int:
        """The state after ``terminal``, or -1 if it cannot come next."""
        try:
            return self._core.scan(handle, terminal)
        except OverflowError as error:
            raise limit_error(error) from None

    def allowed(self, handle: int) -> frozenset[int]:
        """Terminals that may come next."""
        found = self._allowed.get(handle)
        if found is None:
            found = self._allowed[handle] = frozenset(self._core.allowed(handle))
        return found

    def allowed_id(self, handle: int) -> int:
        """Id of ``allowed(handle)``: equal sets have equal ids."""
        return self._core.allowed_id(handle)

    def allowed_by_id(self, allowed_id: int) -> frozenset[int]:
        return frozenset(self._core.allowed_by_id(allowed_id))

    def accepting(self, handle: int) -> bool:
        """The terminals so far form a sentence."""
        found = self._accepting.get(handle)
        if found is None:
            found = self._accepting[handle] = self._core.accepting(handle)
        return found

    @property
    def num_states(self) -> int:
        return self._core.num_sets


def _csr(lists: list) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(lists) + 1, dtype=np.int32)
    offsets[1:] = np.cumsum([len(x) for x in lists]) if lists else []
    data = np.asarray([v for x in lists for v in x], dtype=np.int32)
    return offsets, data
