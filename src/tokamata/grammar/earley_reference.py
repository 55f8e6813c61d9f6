"""The pure-Python Earley parser: the reference the C++ parser (``_core.EarleyCore``, wrapped
by ``grammar/earley.py``) is tested against. Same contract, same handles.

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
  globally, ``origin`` the handle of the set where the item's rule started. A set stores its
  items in two parts: the items that started earlier (kernel and completions, processed one
  by one) and the items predicted here, which depend only on the set of nonterminals
  predicted; that part is precomputed per such set and shared.
- Nullable nonterminals are handled the Aycock-Horspool way: predicting a nullable nonterminal
  also advances over it, so no empty completion is ever needed within one set.
- Every nonterminal is productive (``check_grammar``), so every item in a set can be completed:
  a terminal is in ``allowed(h)`` iff scanning it leaves the parse extendable to a sentence.
- Bounded by ``Limits.max_earley_items`` (items processed for one set) and
  ``Limits.max_parser_states`` (sets in total); crossing either raises :class:`LimitExceeded`.
"""

from __future__ import annotations

import threading
from typing import cast

from ..errors import LimitExceeded
from ..limits import Limits
from .ir import Grammar, is_terminal, nonterminal_index

__all__ = ["ReferenceEarleyParser"]


class _Predicted:
    """The items predicted in a set, for one closed set of predicted nonterminals: positions
    (their origin is the set itself) grouped by the terminal or nonterminal they expect."""

    __slots__ = ("scans", "waiting")

    def __init__(self, scans: dict[int, tuple[int, ...]], waiting: dict[int, tuple[int, ...]]):
        self.scans = scans
        self.waiting = waiting


class _Set:
    __slots__ = ("scans", "waiting", "predicted", "accepting", "allowed", "children")

    def __init__(self, scans, waiting, predicted: _Predicted, accepting: bool):
        self.scans: dict[int, list[tuple[int, int]]] = scans  # terminal -> earlier-origin items
        self.waiting: dict[int, list[tuple[int, int]]] = waiting  # nonterminal -> earlier-origin items
        self.predicted = predicted
        self.accepting = accepting
        self.allowed: frozenset[int] = frozenset(scans) | frozenset(predicted.scans)
        self.children: dict[int, int] = {}  # terminal -> handle (memo of scan)


class ReferenceEarleyParser:
    """Earley recognition over ``grammar``'s terminals.

    >>> from tokamata.grammar.ir import Grammar, Rule, Terminal, nonterminal
    >>> from tokamata.automata import derivatives as d
    >>> a = Terminal("A", d.byte_set(1 << 97))
    >>> g = Grammar((a,), ("start",), (Rule(0, (0,)), Rule(0, (nonterminal(0), 0))), 0)
    >>> p = ReferenceEarleyParser(g, Limits())
    >>> h = p.scan(p.scan(0, 0), 0)
    >>> p.accepting(h), sorted(p.allowed(h))
    (True, [0])
    """

    def __init__(self, grammar: Grammar, limits: Limits):
        self.grammar = grammar
        self.limits = limits
        self._lock = threading.RLock()
        next_symbol: list[int | None] = []
        lhs_of: list[int] = []
        rule_starts: dict[int, list[int]] = {}
        for rule in grammar.rules:
            rule_starts.setdefault(rule.lhs, []).append(len(next_symbol))
            next_symbol.extend(rule.rhs)
            lhs_of.extend([rule.lhs] * len(rule.rhs))
            next_symbol.append(None)
            lhs_of.append(rule.lhs)
        self._next_symbol = next_symbol
        self._lhs_of = lhs_of
        self._nullable = self._nullable_nonterminals()
        self._start = grammar.start
        # positions reachable from each rule start by skipping nullable nonterminals
        self._prefix_positions: dict[int, tuple[int, ...]] = {}
        self._predicts: dict[int, set[int]] = {}
        for lhs, starts in rule_starts.items():
            positions, direct = [], set()
            for position in starts:
                while True:
                    symbol = next_symbol[position]
                    if symbol is None:
                        break
                    positions.append(position)
                    if symbol >= 0:
                        break
                    nt = -symbol - 1
                    direct.add(nt)
                    if nt not in self._nullable:
                        break
                    position += 1
            self._prefix_positions[lhs] = tuple(positions)
            self._predicts[lhs] = direct
        self._closure_of: dict[int, frozenset[int]] = {}
        self._predicted_cache: dict[frozenset[int], _Predicted] = {}
        self.sets: list[_Set] = []
        self._by_kernel: dict[tuple, int] = {}
        self.sets.append(self._close([], 0, {grammar.start}))

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

    def _prediction_closure(self, nt: int) -> frozenset[int]:
        """Nonterminals predicted, transitively, when ``nt`` is predicted (``nt`` included)."""
        closure = self._closure_of.get(nt)
        if closure is None:
            found = {nt}
            stack = [nt]
            while stack:
                for other in self._predicts.get(stack.pop(), ()):
                    if other not in found:
                        found.add(other)
                        stack.append(other)
            closure = self._closure_of[nt] = frozenset(found)
        return closure

    def _predicted(self, nonterminals: frozenset[int]) -> _Predicted:
        predicted = self._predicted_cache.get(nonterminals)
        if predicted is None:
            scans: dict[int, list[int]] = {}
            waiting: dict[int, list[int]] = {}
            for nt in nonterminals:
                for position in self._prefix_positions.get(nt, ()):
                    symbol = cast(int, self._next_symbol[position])  # (a prefix position precedes a symbol)
                    if symbol >= 0:
                        scans.setdefault(symbol, []).append(position)
                    else:
                        waiting.setdefault(-symbol - 1, []).append(position)
            predicted = _Predicted({t: tuple(p) for t, p in scans.items()},
                                   {n: tuple(p) for n, p in waiting.items()})
            self._predicted_cache[nonterminals] = predicted
        return predicted

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
        if terminal not in current.allowed:
            return -1
        with self._lock:
            child = current.children.get(terminal)
            if child is not None:
                return child
            kernel = {(position + 1, origin) for position, origin in current.scans.get(terminal, ())}
            kernel.update((position + 1, handle) for position in current.predicted.scans.get(terminal, ()))
            key = tuple(sorted(kernel))
            child = self._by_kernel.get(key)
            if child is None:
                if len(self.sets) >= self.limits.max_parser_states:
                    raise LimitExceeded("max_parser_states", len(self.sets) + 1, self.limits.max_parser_states)
                child = len(self.sets)
                self.sets.append(self._close(list(key), child, set()))
                self._by_kernel[key] = child
            current.children[terminal] = child
            return child

    # ------------------------------------------------------------------ closure

    def _close(self, kernel: list[tuple[int, int]], here: int, roots: set[int]) -> _Set:
        """The set whose kernel is ``kernel`` (items that started before ``here``), predicting
        ``roots`` too (the start symbol, for the first set)."""
        next_symbol = self._next_symbol
        lhs_of = self._lhs_of
        nullable = self._nullable
        sets = self.sets
        max_items = self.limits.max_earley_items
        seen: set[tuple[int, int]] = set()
        scans: dict[int, list[tuple[int, int]]] = {}
        waiting: dict[int, list[tuple[int, int]]] = {}
        accepting = False
        start = self._start
        stack = kernel
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
                if lhs == start and origin == 0:
                    accepting = True
                parent = sets[origin]
                for parent_position, parent_origin in parent.waiting.get(lhs, ()):
                    stack.append((parent_position + 1, parent_origin))
                for parent_position in parent.predicted.waiting.get(lhs, ()):
                    stack.append((parent_position + 1, origin))
            elif symbol >= 0:
                scans.setdefault(symbol, []).append(item)
            else:
                nt = -symbol - 1
                waiting.setdefault(nt, []).append(item)
                roots.add(nt)
                if nt in nullable:
                    stack.append((position + 1, origin))
        closed: set[int] = set()
        for nt in roots:
            closed |= self._prediction_closure(nt)
        predicted = self._predicted(frozenset(closed))
        if here == 0 and start in nullable:
            accepting = True
        # predicted items that skip nullable nonterminals up to their rule's end complete
        # empty derivations; they never advance earlier items (Aycock-Horspool), except the
        # start symbol at the very beginning (handled above)
        return _Set(scans, waiting, predicted, accepting)
