"""The substring leaf (kind SUBSTRING): every non-empty substring of a text, counted in
characters, spelled in UTF-8 (seed 000's SUBSTRING_OF sugar). The Python reference of the
native leaf in ``cpp/src/expr_leaves.cpp``.

A leaf is ``(automaton, state, pending)``: the suffix automaton of the text's code points
(:class:`SuffixAutomaton`, an acyclic DFA over characters whose paths from state 0 are
exactly the text's substrings), a state of it, and the bytes read so far of the character in
progress (``b""`` at a character boundary). A byte extends ``pending``; once the bytes spell a
whole character the automaton takes its transition on the code point.

Invariants:
- A leaf is live: ``pending`` is a proper prefix of the UTF-8 spelling of some character with
  a transition from ``state`` (a byte that cannot continue one is NOTHING), so the leaf's
  languages are never empty. It is nullable iff ``pending`` is empty and ``state`` is not the
  start (the leaf made by :func:`substring_of` excludes the empty string, as a Lark terminal
  must; the regex front end adds it).
- Automata are keyed by their text: equal texts give equal (interned) leaves, whichever
  :class:`SuffixAutomaton` object holds them, and one object per text while any leaf holds it.
  The automaton itself (states and transitions, at most 2n states and 3n transitions for n
  characters, built in linear time) is built on the first derivative, never while compiling:
  production derives in the native arena, which builds its own from the code points.
- ``cuts`` and ``first_bytes`` are exact: a byte is live iff it is the first byte (no
  pending) or the next byte (pending) of a character with a transition; every live byte is a
  class of its own. The leaf's ASCII cuts for the DFA's global classes are those of the
  text's ASCII characters, read off the text without building the automaton.
- The text's length is bounded by ``Limits.max_pattern_length`` (the pattern or grammar
  that spells it); construction is one loop over the characters.
"""

from __future__ import annotations

import threading
import weakref
from array import array
from bisect import bisect_left

from ..deadline import check_deadline
from . import derivatives as d

__all__ = ["SuffixAutomaton", "substring_of", "prefix_range"]

_SUBSTRING = d.Kind.SUBSTRING

# lead byte range, spelled length, valid code points (as derivatives._LEAD_RANGES)
_LEADS = ((0xC2, 0xDF, 2, 0x80, 0x7FF), (0xE0, 0xEF, 3, 0x800, 0xFFFF), (0xF0, 0xF4, 4, 0x10000, 0x10FFFF))


def prefix_range(data: bytes) -> tuple[int, int, bool] | None:
    """``(lo, hi, whole)``: the code points whose UTF-8 spelling starts with ``data`` are
    ``lo..hi`` (``whole``: ``data`` spells exactly one, ``lo``); None when no valid spelling
    (overlong, beyond U+10FFFF, a stray continuation byte) starts with ``data``.

    >>> prefix_range("é".encode()), prefix_range(b"\\xe2\\x82"), prefix_range(b"\\xc0")
    ((233, 233, True), (8320, 8383, False), None)
    """
    lead = data[0]
    if lead < 0x80:
        return (lead, lead, True) if len(data) == 1 else None
    for lead_lo, lead_hi, length, valid_lo, valid_hi in _LEADS:
        if lead_lo <= lead <= lead_hi:
            break
    else:
        return None
    if len(data) > length:
        return None
    value = lead & (0x7F >> length)
    for byte in data[1:]:
        if not 0x80 <= byte < 0xC0:
            return None
        value = (value << 6) | (byte & 0x3F)
    shift = 6 * (length - len(data))
    lo = max(value << shift, valid_lo)
    hi = min(((value + 1) << shift) - 1, valid_hi)
    if lo > hi:
        return None
    return lo, hi, shift == 0


class SuffixAutomaton:
    """The suffix automaton of ``text``'s code points, built on first use (thread-safe).
    Equal and hashed by the text; :func:`automaton` gives the one object per text."""

    __slots__ = ("text", "_hash", "_lock", "_keys", "_targets", "_remaining", "_size", "_leaf_cuts",
                 "__weakref__")

    def __init__(self, text: str):
        self.text = text
        self._hash = hash((_SUBSTRING, text))
        self._lock = threading.Lock()
        self._keys: list[list[int]] | None = None  # per state: code points with a transition, sorted
        self._targets: list[list[int]] = []  # per state: the targets, in the order of _keys
        self._remaining: list[int] = []  # per state: the most bytes a path from it spells
        self._size = len(text.encode("utf-8"))
        self._leaf_cuts = _text_leaf_cuts(text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SuffixAutomaton) and other.text == self.text

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"SuffixAutomaton({self.text[:20]!r}{'...' if len(self.text) > 20 else ''})"

    @property
    def code_points(self) -> array:
        """The text as int32 code points (what crosses into the native arena)."""
        found = array("i")
        found.frombytes(self.text.encode("utf-32-le"))
        return found

    @property
    def num_states(self) -> int:
        return len(self._build())

    def remaining(self, state: int) -> int:
        """The most bytes a path from ``state`` spells (the text's size from the start)."""
        return self._size if state == 0 else self._remaining_of(state)

    def _remaining_of(self, state: int) -> int:
        self._build()
        return self._remaining[state]

    def transitions(self, state: int) -> tuple[list[int], list[int]]:
        """(sorted code points, targets) of ``state``."""
        keys = self._build()
        return keys[state], self._targets[state]

    def _build(self) -> list[list[int]]:
        keys = self._keys
        if keys is None:
            with self._lock:
                if self._keys is None:
                    self._construct()
                keys = self._keys
        assert keys is not None
        return keys

    def _construct(self) -> None:
        """The standard online construction over code points (as expr_leaves.cpp: states are
        numbered in creation order, so both engines number them alike)."""
        trans: list[dict[int, int]] = [{}]
        length, link, end = [0], [-1], [-1]
        last = 0
        for i, ch in enumerate(self.text):
            c = ord(ch)
            if not i & 4095:
                check_deadline()
            cur = len(length)
            length.append(length[last] + 1)
            link.append(-1)
            trans.append({})
            end.append(i)
            p = last
            while p != -1 and c not in trans[p]:
                trans[p][c] = cur
                p = link[p]
            if p == -1:
                link[cur] = 0
            else:
                q = trans[p][c]
                if length[p] + 1 == length[q]:
                    link[cur] = q
                else:
                    clone = len(length)
                    length.append(length[p] + 1)
                    link.append(link[q])
                    trans.append(dict(trans[q]))
                    end.append(end[q])
                    while p != -1 and trans[p].get(c) == q:
                        trans[p][c] = clone
                        p = link[p]
                    link[q] = link[cur] = clone
            last = cur
        # bytes after character i: the longest path from a state spells the rest of the text
        # after its first end position
        after = [0] * (len(self.text) + 1)
        total = self._size
        for i, ch in enumerate(self.text):
            c = ord(ch)
            after[i + 1] = after[i] + (1 if c < 0x80 else 2 if c < 0x800 else 3 if c < 0x10000 else 4)
        self._remaining = [total if e < 0 else total - after[e + 1] for e in end]
        self._targets = [[t[c] for c in sorted(t)] for t in trans]
        self._keys = [sorted(t) for t in trans]


def _text_leaf_cuts(text: str) -> int:
    """The leaf-cut mask (``derivatives._set_facts``) of a text's characters: bits c and c+1
    of each ASCII character c, and NON_ASCII when some character is not ASCII."""
    found = non_ascii = 0
    for c in set(text):
        code = ord(c)
        if code < 0x80:
            found |= (1 << code) | (1 << (code + 1))
        else:
            non_ascii = d.NON_ASCII
    return (found & d.ASCII_CUT_POSITIONS) | non_ascii


_automata: "weakref.WeakValueDictionary[str, SuffixAutomaton]" = weakref.WeakValueDictionary()
_automata_lock = threading.Lock()


def automaton(text: str) -> SuffixAutomaton:
    """The automaton of ``text`` (one object per text while some leaf holds it)."""
    with _automata_lock:
        found = _automata.get(text)
        if found is None:
            found = _automata[text] = SuffixAutomaton(text)
    return found


def substring_of(text: str | bytes) -> d.Expr:
    """Every non-empty substring of ``text`` (whole characters), in UTF-8. ``text`` must be
    non-empty, without lone surrogates (given as bytes: valid UTF-8).

    >>> from tokamata.syntax.extensions import matches
    >>> e = substring_of("héllo")
    >>> [matches(e, s.encode()) for s in ("él", "llo", "hl", "", "\\xc3")]
    [True, True, False, False, False]
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")  # raises on invalid UTF-8
    else:
        text.encode("utf-8")  # raises on a lone surrogate
    if not text:
        raise ValueError("substring_of needs a non-empty text")
    return _leaf(automaton(text), 0, b"")


def _leaf(found: SuffixAutomaton, state: int, pending: bytes) -> d.Expr:
    return d.intern_node(_SUBSTRING, (found, state, pending), state != 0 and not pending)


def _live(found: SuffixAutomaton, state: int, lo: int, hi: int) -> tuple[list[int], int, int]:
    """(the state's code points, the index range of those in lo..hi)."""
    keys, _ = found.transitions(state)
    first = bisect_left(keys, lo)
    last = bisect_left(keys, hi + 1, first)
    return keys, first, last


def _derivative(node: d.Expr, byte: int) -> d.Expr:
    found, state, pending = node.args
    data = pending + bytes((byte,))
    spelled = prefix_range(data)
    if spelled is None:
        return d.NOTHING
    lo, hi, whole = spelled
    keys, first, last = _live(found, state, lo, hi)
    if first == last:
        return d.NOTHING
    if whole:
        return _leaf(found, found.transitions(state)[1][first], b"")
    return _leaf(found, state, data)


def _first_bytes(node: d.Expr) -> int:
    found, state, pending = node.args
    mask = 0
    if not pending:
        for c in found.transitions(state)[0]:
            mask |= 1 << (c if c < 0x80 else chr(c).encode("utf-8")[0])
        return mask
    spelled = prefix_range(pending)
    assert spelled is not None  # a live leaf
    keys, first, last = _live(found, state, spelled[0], spelled[1])
    shift = 6 * (len(chr(keys[first]).encode("utf-8")) - len(pending) - 1)
    for i in range(first, last):
        mask |= 1 << (0x80 | ((keys[i] >> shift) & 0x3F))
    return mask


def _cuts(node: d.Expr) -> tuple[int, ...]:
    mask = d.first_bytes(node)
    found: set[int] = set()
    for b in range(256):
        if mask >> b & 1:
            found.update((b, b + 1))
    return tuple(sorted(c for c in found if 0 < c < 256))


def _facts(node: d.Expr) -> None:
    found, state, pending = node.args
    node._leaf_cuts = found._leaf_cuts
    node._longest = found.remaining(state) - len(pending)  # (exact at a boundary, else a bound)
    node._infinite = False


def _describe(node: d.Expr, depth: int) -> str:
    found, state, pending = node.args
    return f"<substring of {len(found.text)} chars, state {state}{', pending ' + pending.hex() if pending else ''}>"


d.register_kind(_SUBSTRING, _derivative, _describe, first_bytes=_first_bytes, cuts=_cuts, facts=_facts)
