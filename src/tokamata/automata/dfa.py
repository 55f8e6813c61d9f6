"""A byte DFA whose states are Python derivatives, built lazily: the test oracle of the native
lexer DFA (``_core.DerivativeDfa``), which is what constraints run on.

Invariants:
- State 0 is the start state; each state is one interned expression (its derivative), so a
  state is identified structurally. A transition to ``NOTHING`` is ``DEAD`` (-1): there is
  no dead state, and every live state can still reach acceptance.
- Transitions are over byte classes fixed before any state is built: the ASCII cuts of every
  leaf of the start expression, plus one class per non-ASCII byte when the expression can
  produce any (derivatives never add ASCII cuts, and non-ASCII bytes are all separated), so
  the classes refine the own classes of every state that can ever be reached.
- A transition is computed the first time it is asked for (``step``), or a whole row at once
  (``expand``). Total states and total time spent expanding are bounded by
  ``Limits.max_dfa_states`` and ``Limits.max_compile_seconds`` (:class:`LimitExceeded`).
"""

from __future__ import annotations

import threading
import time
from typing import cast

import numpy as np

from ..errors import LimitExceeded
from ..limits import Limits
from . import derivatives as d
from .analysis import inside_character

DEAD = -1
#: a structural key deferred to the C++ core's key function (native lexers send it for every
#: state: DerivativeDfa computes the key when a walk is rooted at the state)
KEY_LATER = int(np.iinfo(np.int64).min)

__all__ = ["LazyByteDfa", "DEAD", "KEY_LATER", "global_class_starts"]
_ALL_BYTES = np.arange(256)


_ASCII_CUT_POSITIONS = d.ASCII_CUT_POSITIONS  # cuts 1..0x7F (0x80 is always a cut)
_NON_ASCII = d.NON_ASCII  # bit 0 of a leaf-cut mask (never a cut): some leaf can read a non-ASCII byte


def _leaf_cuts(node: d.Expr) -> int:
    """The ASCII cuts of every leaf below ``node`` (bits 1..0x7F) and whether some leaf can
    read a non-ASCII byte (bit 0). Nodes get it when built (``derivatives._set_facts``)
    unless a text-until leaf is below, whose cuts take a derivative pass: this walk fills
    those in, memoized on each node."""
    found = node._leaf_cuts
    if found is not None:
        return found
    UNTIL, REPEAT, TAGGED = d.Kind.UNTIL, d.Kind.REPEAT, d.Kind.TAGGED
    stack = [node]
    while stack:  # post-order without recursion: concatenations may be long
        top = stack[-1]
        if top._leaf_cuts is not None:
            stack.pop()
            continue
        kind = top.kind
        if kind == UNTIL:
            found = _NON_ASCII
            for c in d.cuts(top):
                if c < 0x80:
                    found |= 1 << c
        else:  # REPEAT and TAGGED: one child; CONCAT, ALT, AND, DIFF: every argument
            children = top.args[:1] if kind == REPEAT or kind == TAGGED else top.args
            missing = [c for c in children if c._leaf_cuts is None]
            if missing:
                stack.extend(missing)
                continue
            found = 0
            for c in children:
                found |= c._leaf_cuts
        top._leaf_cuts = found
        stack.pop()
    return cast(int, node._leaf_cuts)  # computed above


def global_class_starts(*roots: d.Expr) -> tuple[int, ...]:
    """First byte of every class of the DFA of the alternation of ``roots`` (sorted, starting
    with 0; the alternation itself is not built)."""
    leaf_cuts = 0
    for root in roots:
        leaf_cuts |= _leaf_cuts(root)
    cuts = leaf_cuts & _ASCII_CUT_POSITIONS
    found = []
    while cuts:
        low = cuts & -cuts
        found.append(low.bit_length() - 1)
        cuts ^= low
    found.append(0x80)
    if leaf_cuts & _NON_ASCII:
        found.extend(range(0x81, 0xF6))
    return (0,) + tuple(found)


class LazyByteDfa:
    """States and rows of the DFA of ``root``, computed on demand.

    >>> from tokamata.automata import derivatives as d
    >>> dfa = LazyByteDfa(d.concat(d.byte_set(1 << 97), d.byte_set(1 << 98)), Limits())
    >>> dfa.run(b"ab"), dfa.accepting(dfa.run(b"ab")), dfa.run(b"b")
    (2, True, -1)
    """

    def __init__(self, root: d.Expr, limits: Limits):
        self.limits = limits
        self.class_starts = global_class_starts(root)
        self.num_classes = len(self.class_starts)
        self._class_starts_array = np.asarray(self.class_starts)
        class_map = (np.searchsorted(self._class_starts_array, _ALL_BYTES, side="right") - 1).astype(np.uint8)
        self.class_map = class_map
        self._class_of = class_map.tolist()
        self._class_to_interval: dict[tuple[int, ...], list[int]] = {}  # own cuts -> interval per class
        self.states: list[d.Expr] = [] if root is d.NOTHING else [root]
        self._index: dict[int, int] = {root.id: 0} if self.states else {}
        self._rows: list[list[int] | None] = [None] * len(self.states)
        self._own_intervals: list[tuple[tuple[int, ...], list[int | None]] | None] = [None] * len(self.states)
        self._elapsed = 0.0
        self._lock = threading.RLock()

    @property
    def is_empty(self) -> bool:
        """True when the language is empty (no state at all)."""
        return not self.states

    @property
    def num_states(self) -> int:
        return len(self.states)

    def accepting(self, state: int) -> bool:
        return self.states[state].nullable

    def row(self, state: int) -> list[int]:
        """Next state per byte class (``DEAD`` for none), expanding ``state`` if needed."""
        row = self._rows[state]
        if row is None:
            row = self.expand(state)
        return row

    def step(self, state: int, byte: int) -> int:
        return self.row(state)[self._class_of[byte]]

    def run(self, data: bytes, state: int = 0) -> int:
        for byte in data:
            if state == DEAD:
                return DEAD
            state = self.step(state, byte)
        return state

    def _own(self, state: int) -> tuple[tuple[int, ...], list[int | None]]:
        """The state's own byte intervals (their first bytes) and their targets so far."""
        own = self._own_intervals[state]
        if own is None:
            node = self.states[state]
            starts = (0,) + d.cuts(node)
            targets: list[int | None] = [None] * len(starts)
            if inside_character(node):  # only continuation bytes can follow: no derivative needed
                for i, start in enumerate(starts):
                    end = starts[i + 1] if i + 1 < len(starts) else 256
                    if end <= 0x80 or start >= 0xC0:
                        targets[i] = DEAD
            own = self._own_intervals[state] = (starts, targets)
        return own

    def _compute(self, state: int, intervals) -> list[int | None]:
        """Compute the targets of the given own intervals of ``state`` (those not known yet);
        returns the state's target list."""
        own_starts, own_targets = self._own(state)
        started = time.perf_counter()
        node = self.states[state]
        first = d.first_bytes(node)
        index = self._index
        for interval in intervals:
            if own_targets[interval] is not None:
                continue
            if not (first >> own_starts[interval]) & 1:  # surely NOTHING: no derivative needed
                own_targets[interval] = DEAD
                continue
            nxt = d.derivative(node, own_starts[interval])
            if nxt is d.NOTHING:
                own_targets[interval] = DEAD
                continue
            target = index.get(nxt.id)
            if target is None:
                target = len(self.states)
                if target >= self.limits.max_dfa_states:
                    raise LimitExceeded("max_dfa_states", target + 1, self.limits.max_dfa_states)
                index[nxt.id] = target
                self.states.append(nxt)
                self._rows.append(None)
                self._own_intervals.append(None)
            own_targets[interval] = target
        self._elapsed += time.perf_counter() - started
        if self._elapsed > self.limits.max_compile_seconds:
            raise LimitExceeded("max_compile_seconds", round(self._elapsed, 3), self.limits.max_compile_seconds)
        return own_targets

    def intern_state(self, node: d.Expr) -> int:
        """The state of ``node`` (added if new), for DFAs entered at more than one state (a
        grammar's lexer). ``node``'s leaves must be among the root's, so the byte classes
        refine its own; ``node`` must not be ``NOTHING``."""
        with self._lock:
            state = self._index.get(node.id)
            if state is None:
                state = len(self.states)
                if state >= self.limits.max_dfa_states:
                    raise LimitExceeded("max_dfa_states", state + 1, self.limits.max_dfa_states)
                self._index[node.id] = state
                self.states.append(node)
                self._rows.append(None)
                self._own_intervals.append(None)
            return state

    def expand(self, state: int) -> list[int]:
        """The whole row of ``state`` (every interval computed)."""
        with self._lock:
            row = self._rows[state]
            if row is not None:
                return row
            own_starts, _ = self._own(state)
            # every interval computed: no target is None any more
            own_targets = cast("list[int]", self._compute(state, range(len(own_starts))))
            if len(own_starts) == 1:
                row = own_targets * self.num_classes
            else:
                row = [own_targets[j] for j in self._interval_of_class(own_starts)]
            self._rows[state] = row
            return row

    def _interval_of_class(self, own_starts: tuple[int, ...]) -> list[int]:
        which = self._class_to_interval.get(own_starts)
        if which is None:
            which = (np.searchsorted(np.asarray(own_starts), self._class_starts_array, side="right") - 1).tolist()
            self._class_to_interval[own_starts] = which
        return which

    def explore(self) -> int:
        """Expand every reachable state (bounded by the limits); returns the state count."""
        i = 0
        while i < len(self.states):
            self.row(i)
            i += 1
        return len(self.states)
