"""An Earley parser over terminals whose states are immutable, shared and addressed by ints.

Invariants:
- A parser state is an Earley set, identified by a handle (an int index into ``sets``);
  handle 0 is the set before any terminal. ``scan(h, t)`` returns the handle of the set after
  terminal ``t``, or -1 when the grammar does not allow ``t`` there. Sets never change once
  built, so matchers, rollback and speculative walks share them freely.
- Sets are hash-consed by kernel (the items scanning produced): a set's closure is a function
  of its kernel (predicted items point at the set itself), so equal kernels are the same
  parser state, with the same future. The fifth and the sixth element of one JSON array
  leave the parser in the same handle, which is what lets masks be cached per handle.
- Items are ``(position, origin)``: ``position`` is an LR(0) item (a rule and a dot) numbered
  globally, ``origin`` the handle of the set where the item's rule started. Completion looks
  origins up in their (ancestor) sets, which are complete.
- Nullable nonterminals are handled the Aycock-Horspool way: predicting a nullable nonterminal
  also advances over it, so no empty completion is ever needed within one set.
- Every nonterminal is productive (``check_grammar``), so every item in a set can be completed:
  a terminal is in ``allowed(h)`` iff scanning it leaves the parse extendable to a sentence.
- Bounded by ``Limits.max_earley_items`` (items in one set) and ``Limits.max_parser_states``
  (sets in total); crossing either raises :class:`LimitExceeded`.
"""

from __future__ import annotations

import threading

from ..errors import LimitExceeded
from ..limits import Limits
from .ir import Grammar, is_terminal, nonterminal_index

__all__ = ["EarleyParser"]

_NO_SYMBOL = None


class _Set:
    __slots__ = ("scans", "waiting", "accepting", "allowed", "children")

    def __init__(self, scans, waiting, accepting):
        self.scans: dict[int, list[tuple[int, int]]] = scans  # terminal -> items expecting it
        self.waiting: dict[int, list[tuple[int, int]]] = waiting  # nonterminal -> items expecting it
        self.accepting: bool = accepting
        self.allowed: frozenset[int] = frozenset(scans)
        self.children: dict[int, int] = {}  # terminal -> handle (memo of scan)


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
        self.limits = limits
        self._lock = threading.RLock()
        rules_of: dict[int, list[int]] = {}
        next_symbol: list[int | None] = []
        lhs_of: list[int] = []
        rule_start: list[int] = []
        for rule in grammar.rules:
            rule_start.append(len(next_symbol))
            for symbol in rule.rhs:
                next_symbol.append(symbol)
                lhs_of.append(rule.lhs)
            next_symbol.append(_NO_SYMBOL)
            lhs_of.append(rule.lhs)
        for index, rule in enumerate(grammar.rules):
            rules_of.setdefault(rule.lhs, []).append(rule_start[index])
        self._next_symbol = next_symbol
        self._lhs_of = lhs_of
        self._predictions = {lhs: tuple(starts) for lhs, starts in rules_of.items()}
        self._nullable = self._nullable_nonterminals()
        self._start = grammar.start
        self.sets: list[_Set] = []
        self._by_kernel: dict[tuple, int] = {}
        root_items = [(start, 0) for start in self._predictions.get(grammar.start, ())]
        self.sets.append(self._close(root_items, 0))

    def _nullable_nonterminals(self) -> frozenset[int]:
        nullable: set[int] = set()
        changed = True
        while changed:
            changed = False
            for rule in self.grammar.rules:
                if rule.lhs not in nullable and all(
                        not is_terminal(s) and nonterminal_index(s) in nullable for s in rule.rhs):
                    nullable.add(rule.lhs)
                    changed = True
        return frozenset(nullable)

    # ------------------------------------------------------------------ queries

    def allowed(self, handle: int) -> frozenset[int]:
        """Terminals that may come next."""
        return self.sets[handle].allowed

    def accepting(self, handle: int) -> bool:
        """The terminals so far form a sentence."""
        return self.sets[handle].accepting

    @property
    def num_states(self) -> int:
        return len(self.sets)

    def scan(self, handle: int, terminal: int) -> int:
        """The set after ``terminal``, or -1 if it cannot come next."""
        current = self.sets[handle]
        child = current.children.get(terminal)
        if child is not None:
            return child
        items = current.scans.get(terminal)
        if items is None:
            return -1
        with self._lock:
            child = current.children.get(terminal)
            if child is not None:
                return child
            kernel = tuple(sorted({(position + 1, origin) for position, origin in items}))
            child = self._by_kernel.get(kernel)
            if child is None:
                if len(self.sets) >= self.limits.max_parser_states:
                    raise LimitExceeded("max_parser_states", len(self.sets) + 1, self.limits.max_parser_states)
                child = len(self.sets)
                self.sets.append(self._close(list(kernel), child))
                self._by_kernel[kernel] = child
            current.children[terminal] = child
            return child

    # ------------------------------------------------------------------ closure

    def _close(self, kernel: list[tuple[int, int]], here: int) -> _Set:
        next_symbol = self._next_symbol
        lhs_of = self._lhs_of
        predictions = self._predictions
        nullable = self._nullable
        sets = self.sets
        max_items = self.limits.max_earley_items
        seen: set[tuple[int, int]] = set()
        scans: dict[int, list[tuple[int, int]]] = {}
        waiting: dict[int, list[tuple[int, int]]] = {}
        predicted: set[int] = set()
        accepting = False
        start = self._start
        stack = list(kernel)
        while stack:
            item = stack.pop()
            if item in seen:
                continue
            seen.add(item)
            if len(seen) > max_items:
                raise LimitExceeded("max_earley_items", len(seen), max_items)
            position, origin = item
            symbol = next_symbol[position]
            if symbol is None:  # complete: advance the items of the origin set waiting for lhs
                lhs = lhs_of[position]
                if origin == here:
                    continue  # empty derivation: handled when the nonterminal was predicted
                if lhs == start and origin == 0:
                    accepting = True
                for parent_position, parent_origin in sets[origin].waiting.get(lhs, ()):
                    stack.append((parent_position + 1, parent_origin))
            elif symbol >= 0:
                scans.setdefault(symbol, []).append(item)
            else:
                nt = -symbol - 1
                waiting.setdefault(nt, []).append(item)
                if nt not in predicted:
                    predicted.add(nt)
                    for rule_position in predictions.get(nt, ()):
                        stack.append((rule_position, here))
                if nt in nullable:
                    stack.append((position + 1, origin))
        if here == 0 and start in nullable:
            accepting = True
        return _Set(scans, waiting, accepting)
