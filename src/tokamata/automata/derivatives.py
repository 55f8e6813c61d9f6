"""Byte-level regular expressions with Brzozowski derivatives, hash-consed.

Invariants:
- Nodes are interned: two nodes denote the same (normalized) expression iff they are the
  same object, so a node's ``id`` identifies a DFA state structurally, across constraints.
- Smart constructors normalize (associativity of concatenation; associativity, commutativity
  and idempotence of alternation; unit and zero laws), which keeps the set of derivatives of
  any expression finite.
- Every node other than :data:`NOTHING` denotes a non-empty set of byte strings, so a state
  that is not ``NOTHING`` can always reach acceptance (no dead ends hide behind live states).
- Characters are :class:`Utf8` leaves: one code point from a set, spelled in UTF-8. Their
  derivatives walk the UTF-8 encoding, so only valid UTF-8 (no surrogates, no overlong
  forms) is ever produced.
- ``cuts`` of a node is a sorted tuple of byte values where the derivative may change: bytes
  between consecutive cuts have identical derivatives (the node's byte classes).
"""

from __future__ import annotations

import functools
import itertools
import threading
from bisect import bisect_right
from typing import Dict, Tuple

from . import charset as cs

__all__ = ["Expr", "NOTHING", "EPSILON", "byte_set", "utf8_char", "concat", "alternation",
           "repeat", "derivative", "cuts", "UNBOUNDED", "tagged", "end_marks", "text_until",
           "intersection", "difference", "decimal_multiple"]

UNBOUNDED = -1

_NOTHING, _EPSILON, _BYTES, _UTF8, _CONCAT, _ALT, _REPEAT, _TAGGED, _UNTIL = range(9)

_lock = threading.Lock()
_KINDS = 12
#: one intern table per node kind, keyed by the node's args (no key tuple per lookup, and
#: one object fewer per node for the garbage collector to traverse)
_tables: Tuple[Dict[tuple, "Expr"], ...] = tuple({} for _ in range(_KINDS))
_next_id = itertools.count()  # ids are never reused, even after clear_interned()


class Expr:
    """An interned byte-level regular expression. Build with the module's constructors."""

    __slots__ = ("kind", "args", "nullable", "id", "_derivatives", "_cuts", "_highs", "__weakref__")

    def __init__(self, kind: int, args: tuple, nullable: bool, ident: int):
        self.kind = kind
        self.args = args
        self.nullable = nullable
        self.id = ident
        #: byte class index (see cuts) -> derivative; made on the first derivative (most
        #: nodes built while compiling are never derived)
        self._derivatives: Dict[int, Expr] | None = None
        self._cuts: Tuple[int, ...] | None = None
        self._highs: Tuple[int, ...] | None = None  # UTF-8 leaves: upper ends of their ranges

    def __repr__(self) -> str:
        return f"Expr#{self.id}({_describe(self)})"


def _make(kind: int, args: tuple, nullable: bool) -> Expr:
    table = _tables[kind]
    node = table.get(args)
    if node is None:
        with _lock:
            node = table.get(args)
            if node is None:
                node = table[args] = Expr(kind, args, nullable, next(_next_id))
    return node


NOTHING = _make(_NOTHING, (), False)
EPSILON = _make(_EPSILON, (), True)


def clear_interned() -> int:
    """Forget every interned expression (their memoized derivatives go with them) and
    return how many there were. Constraints compiled before keep working: their states hold
    their own expressions, and new expressions get fresh ids, so structural keys never
    collide; equal expressions built before and after merely stop being shared."""
    with _lock:
        count = sum(len(table) for table in _tables)
        for table in _tables:
            table.clear()
        _tables[_NOTHING][()] = NOTHING
        _tables[_EPSILON][()] = EPSILON
        utf8_char.cache_clear()
        _end_marks.clear()
        _emptiness.clear()
        _infinite_memo.clear()
        _max_length_memo.clear()
    return count

_CONTINUATION_MASK = sum(1 << b for b in range(0x80, 0xC0))
_CUT_POSITIONS = ((1 << 256) - 1) ^ 1  # bytes 1..255


def byte_set(mask: int) -> Expr:
    """One byte whose bit is set in the 256-bit ``mask``."""
    if mask == 0:
        return NOTHING
    return _make(_BYTES, (mask,), False)


def any_continuation(count: int) -> Expr:
    """``count`` arbitrary UTF-8 continuation bytes."""
    node = EPSILON
    for _ in range(count):
        node = concat(byte_set(_CONTINUATION_MASK), node)
    return node


@functools.lru_cache(maxsize=4096)
def utf8_char(charset: cs.CharSet) -> Expr:
    """One code point from ``charset`` (surrogates removed), as UTF-8 bytes."""
    # both parts are sorted and disjoint, and 0xD7FF / 0xE000 are not adjacent: no merge needed
    charset = cs.intersect(charset, 0, 0xD7FF) + cs.intersect(charset, 0xE000, cs.MAX_CODE_POINT)
    if not charset:
        return NOTHING
    if charset[-1][1] < 0x80:
        mask = 0
        for lo, hi in charset:
            mask |= ((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1)
        return byte_set(mask)
    return _make(_UTF8, (charset, 0), False)


def _utf8_pending(charset: cs.CharSet, pending: int, interval_lo: int) -> Expr:
    """Code points of ``charset`` (within one prefix interval) still needing ``pending``
    continuation bytes; normalized to :func:`any_continuation` when the interval is full."""
    if not charset:
        return NOTHING
    width = 1 << (6 * pending)
    if charset == ((interval_lo, interval_lo + width - 1),):
        return any_continuation(pending)
    return _make(_UTF8, (charset, pending), False)


def tagged(node: Expr, tag: int) -> Expr:
    """``node`` with a tag: a lexer tags terminal ``i`` with ``i`` so that a state knows which
    terminals may end where it is (:func:`end_marks`). The tag stays on every derivative,
    ``d(tagged(r, i)) == tagged(d(r), i)``, so tagging costs one node per state reached
    (appending a marker to ``r`` would rebuild every concatenation of ``r`` up front)."""
    if node is NOTHING:
        return NOTHING
    return _make(_TAGGED, (node, tag), node.nullable)


def end_marks(node: Expr) -> Tuple[int, ...]:
    """Sorted tags of the tagged expressions ``node`` reaches that match the empty string:
    the terminals that may end here."""
    found = _end_marks.get(node.id)
    if found is None:
        tags: set[int] = set()
        _collect_marks(node, tags)
        found = _end_marks[node.id] = tuple(sorted(tags))
    return found


_end_marks: Dict[int, Tuple[int, ...]] = {}


def _collect_marks(node: Expr, tags: set) -> None:
    if not node.nullable:
        return
    kind = node.kind
    if kind == _TAGGED:
        tags.add(node.args[1])
        _collect_marks(node.args[0], tags)
    elif kind == _CONCAT:
        _collect_marks(node.args[0], tags)
        _collect_marks(node.args[1], tags)
    elif kind == _ALT:
        for member in node.args:
            _collect_marks(member, tags)
    elif kind == _REPEAT:
        _collect_marks(node.args[0], tags)


def text_until(stop: bytes) -> Expr:
    """Valid UTF-8 text that does not contain ``stop``, followed by ``stop`` (seed 000's
    TEXT_UNTIL): the stop string ends the lexeme the first time it appears. ``stop`` must be
    non-empty valid UTF-8."""
    if not stop:
        raise ValueError("text_until needs a non-empty stop string")
    stop.decode("utf-8")  # raises on invalid UTF-8
    return _make(_UNTIL, (bytes(stop), 0, None), False)


@functools.lru_cache(maxsize=256)
def _failure(stop: bytes) -> Tuple[int, ...]:
    """KMP failure function of ``stop``."""
    fail = [0] * len(stop)
    k = 0
    for i in range(1, len(stop)):
        while k and stop[i] != stop[k]:
            k = fail[k - 1]
        if stop[i] == stop[k]:
            k += 1
        fail[i] = k
    return tuple(fail)


def _kmp_step(stop: bytes, matched: int, byte: int) -> int:
    fail = _failure(stop)
    while matched and (matched == len(stop) or stop[matched] != byte):
        matched = fail[matched - 1]
    return matched + 1 if stop[matched] == byte else 0


def _any_char() -> Expr:
    return utf8_char(((0, cs.MAX_CODE_POINT),))


def _until_derivative(stop: bytes, matched: int, pending, byte: int) -> Expr:
    leaf = derivative(_any_char() if pending is None else pending, byte)
    if leaf is NOTHING:
        return NOTHING
    matched = _kmp_step(stop, matched, byte)
    if matched == len(stop):  # stop is valid UTF-8, so it ends where a character ends
        return EPSILON if leaf is EPSILON else NOTHING
    return _make(_UNTIL, (stop, matched, None if leaf is EPSILON else leaf), False)


def concat(first: Expr, second: Expr) -> Expr:
    if first is NOTHING or second is NOTHING:
        return NOTHING
    if first is EPSILON:
        return second
    if second is EPSILON:
        return first
    if first.kind == _CONCAT:  # keep concatenation right-nested
        return concat(first.args[0], concat(first.args[1], second))
    return _make(_CONCAT, (first, second), first.nullable and second.nullable)


def concat_all(items) -> Expr:
    node = EPSILON
    for item in reversed(list(items)):
        node = concat(item, node)
    return node


def alternation(*options: Expr) -> Expr:
    members: Dict[int, Expr] = {}
    mask = 0
    for option in options:
        if option.kind == _ALT:
            for member in option.args:
                if member.kind == _BYTES:
                    mask |= member.args[0]
                else:
                    members[member.id] = member
        elif option.kind == _BYTES:
            mask |= option.args[0]
        elif option is not NOTHING:
            members[option.id] = option
    if mask:
        node = byte_set(mask)
        members[node.id] = node
    if not members:
        return NOTHING
    if len(members) == 1:
        return next(iter(members.values()))
    ordered = tuple(members[k] for k in sorted(members))
    return _make(_ALT, ordered, any(m.nullable for m in ordered))


def repeat(item: Expr, low: int, high: int) -> Expr:
    """``item`` repeated ``low``..``high`` times (``high == UNBOUNDED``: no bound)."""
    if high != UNBOUNDED and high < low:
        return NOTHING
    if item is NOTHING:
        return EPSILON if low == 0 else NOTHING
    if item is EPSILON or high == 0:
        return EPSILON
    if item.nullable:
        low = 0  # r{m,n} == r{0,n} when r matches the empty string
    if low == 1 and high == 1:
        return item
    if item.kind == _REPEAT and item.args[1] == 0 and item.args[2] == UNBOUNDED and low <= 1 and high == UNBOUNDED:
        return item  # (r*)* == (r*)+ == r*
    return _make(_REPEAT, (item, low, high), low == 0 or item.nullable)


def derivative(node: Expr, byte: int) -> Expr:
    """The expression matching ``{s : bytes([byte]) + s in node}``.

    Memoized per node and per byte class of the node (bytes between two of its ``cuts``
    have the same derivative), so a subterm is derived once per class of its own, however
    finely the enclosing state splits the bytes.
    """
    node_cuts = node._cuts
    if node_cuts is None:
        node_cuts = cuts(node)
    cls = bisect_right(node_cuts, byte) if node_cuts else 0
    memo = node._derivatives
    if memo is None:
        memo = node._derivatives = {}
    else:
        cached = memo.get(cls)
        if cached is not None:
            return cached
    kind = node.kind
    if kind == _BYTES:
        result = EPSILON if (node.args[0] >> byte) & 1 else NOTHING
    elif kind == _CONCAT:
        first, second = node.args
        result = concat(derivative(first, byte), second)
        if first.nullable:
            result = alternation(result, derivative(second, byte))
    elif kind == _ALT:
        result = alternation(*[derivative(m, byte) for m in node.args])
    elif kind == _UTF8:
        result = _utf8_derivative(node.args[0], node.args[1], byte, _highs(node))
    elif kind == _REPEAT:
        item, low, high = node.args
        rest = repeat(item, max(low - 1, 0), UNBOUNDED if high == UNBOUNDED else high - 1)
        result = concat(derivative(item, byte), rest)
    elif kind == _UNTIL:
        result = _until_derivative(node.args[0], node.args[1], node.args[2], byte)
    elif kind == _TAGGED:
        result = tagged(derivative(node.args[0], byte), node.args[1])
    elif kind >= _AND:
        result = _boolean_derivative(node, byte)
    else:  # NOTHING, EPSILON
        result = NOTHING
    memo[cls] = result
    return result


_LEAD_RANGES = (  # lead byte range, continuation count, valid code point range
    (0xC2, 0xDF, 1, 0x80, 0x7FF),
    (0xE0, 0xEF, 2, 0x800, 0xFFFF),
    (0xF0, 0xF4, 3, 0x10000, 0x10FFFF),
)


def _highs(node: Expr) -> Tuple[int, ...]:
    highs = node._highs
    if highs is None:
        highs = node._highs = tuple(r[1] for r in node.args[0])
    return highs


def _utf8_derivative(charset: cs.CharSet, pending: int, byte: int, highs: Tuple[int, ...] | None = None) -> Expr:
    if pending == 0:
        if byte < 0x80:
            return EPSILON if cs.contains(charset, byte) else NOTHING
        for lead_lo, lead_hi, count, valid_lo, valid_hi in _LEAD_RANGES:
            if lead_lo <= byte <= lead_hi:
                width = 1 << (6 * count)
                interval_lo = (byte & (0x3F >> count)) * width
                lo = max(interval_lo, valid_lo)
                hi = min(interval_lo + width - 1, valid_hi)
                sub = cs.intersect(charset, lo, hi, highs)
                if lo != interval_lo or hi != interval_lo + width - 1:
                    # partial interval (E0, ED, F0, F4 leads): never "any continuation"
                    return _make(_UTF8, (sub, count), False) if sub else NOTHING
                return _utf8_pending(sub, count, interval_lo)
        return NOTHING
    if not 0x80 <= byte < 0xC0:
        return NOTHING
    shift = 6 * pending
    prefix = charset[0][0] >> shift
    remaining = pending - 1
    width = 1 << (6 * remaining)
    interval_lo = ((prefix << 6) | (byte & 0x3F)) * width
    sub = cs.intersect(charset, interval_lo, interval_lo + width - 1, highs)
    if not sub:
        return NOTHING
    if remaining == 0:
        return EPSILON
    return _utf8_pending(sub, remaining, interval_lo)


def cuts(node: Expr) -> Tuple[int, ...]:
    """Sorted byte values (excluding 0) where this node's byte classes begin."""
    if node._cuts is not None:
        return node._cuts
    kind = node.kind
    if kind == _NOTHING or kind == _EPSILON:
        result: Tuple[int, ...] = ()
    elif kind == _UNTIL:
        stop, _, pending = node.args
        found = set(cuts(_any_char() if pending is None else pending))
        for b in set(stop):
            found.update((b, b + 1))
        result = tuple(sorted(c for c in found if 0 < c < 256))
    elif kind == _BYTES:
        mask = node.args[0]
        changes = (mask ^ (mask << 1)) & _CUT_POSITIONS  # bit b set: byte b differs from b - 1
        found = []
        while changes:
            low = changes & -changes
            found.append(low.bit_length() - 1)
            changes ^= low
        result = tuple(found)
    elif kind == _UTF8:
        result = _utf8_cuts(node.args[0], node.args[1])
    elif kind == _CONCAT:
        first, second = node.args
        result = cuts(first)
        if first.nullable:
            result = tuple(sorted(set(result) | set(cuts(second))))
    elif kind == _ALT or kind == _AND or kind == _DIFF:
        merged = set()
        for member in node.args:
            merged.update(cuts(member))
        result = tuple(sorted(merged))
    elif kind == _DECMOD:
        result = _DECMOD_CUTS
    else:
        result = cuts(node.args[0])
    node._cuts = result
    return result


def _utf8_cuts(charset: cs.CharSet, pending: int) -> Tuple[int, ...]:
    """Byte classes of a UTF-8 leaf, from interval arithmetic (no nodes are built): bytes
    whose continuation set is empty, or the full interval, group into runs; a byte leading
    to a proper subset gets a class of its own. Work is O(ranges + bytes touched)."""
    outcome: dict = {}  # byte -> "ascii" | "end" | ("full", k) | byte (unique); absent: nothing
    if pending == 0:
        for lo, hi in charset:
            if lo >= 0x80:
                break
            for b in range(lo, min(hi, 0x7F) + 1):
                outcome[b] = "ascii"
        for lead_lo, lead_hi, count, valid_lo, valid_hi in _LEAD_RANGES:
            width = 1 << (6 * count)
            base = (lead_lo & (0x3F >> count)) * width - lead_lo * width  # interval of b: (b*width + base)
            _mark(outcome, charset, lead_lo, lead_hi, width, base, valid_lo, valid_hi, count)
    elif pending == 1:
        # last continuation byte: byte 0x80 + (c & 0x3F) ends code point c; classes are the
        # runs of the set within this 64-code-point block
        base = charset[0][0] & ~0x3F
        found = []
        for lo, hi in charset:
            found.append(0x80 + lo - base)
            found.append(0x81 + hi - base)
        return tuple(found)
    else:
        prefix = charset[0][0] >> (6 * pending)
        width = 1 << (6 * (pending - 1))
        base = (prefix << 6) * width - 0x80 * width  # interval of continuation byte b: b*width + base
        _mark(outcome, charset, 0x80, 0xBF, width, base, 0, cs.MAX_CODE_POINT, pending - 1)
    get = outcome.get
    candidates = set(outcome)
    candidates.update(b + 1 for b in outcome)
    return tuple(b for b in sorted(candidates) if 0 < b < 256 and get(b) != get(b - 1))


def _mark(outcome: dict, charset: cs.CharSet, byte_lo: int, byte_hi: int, width: int, base: int,
          valid_lo: int, valid_hi: int, remaining: int) -> None:
    """Mark, for each byte b in [byte_lo, byte_hi] (covering code points
    [b*width+base, b*width+base+width-1] clipped to [valid_lo, valid_hi]), whether ``charset``
    covers none, all ("full") or part of that interval."""
    span_lo = max(byte_lo * width + base, valid_lo)
    span_hi = min(byte_hi * width + base + width - 1, valid_hi)
    for lo, hi in cs.intersect(charset, span_lo, span_hi):
        for b in range((lo - base) // width, (hi - base) // width + 1):
            start = b * width + base
            if remaining == 0:
                outcome[b] = "end"
            elif lo <= start and hi >= start + width - 1:
                outcome[b] = ("full", remaining)
            else:  # a proper subset, or a clipped lead (E0, ED, F0, F4): a node of its own
                outcome[b] = b


def _describe(node: Expr, depth: int = 0) -> str:
    if depth > 6:
        return "..."
    kind = node.kind
    if kind == _NOTHING:
        return "∅"
    if kind == _EPSILON:
        return "ε"
    if kind == _BYTES:
        mask = node.args[0]
        members = [b for b in range(256) if (mask >> b) & 1]
        if len(members) == 1:
            return repr(bytes(members))[1:]
        return f"[{len(members)} bytes]"
    if kind == _UTF8:
        return f"<{cs.size(node.args[0])} chars, {node.args[1]} pending>"
    if kind == _TAGGED:
        return f"{_describe(node.args[0], depth + 1)}#{node.args[1]}"
    if kind == _UNTIL:
        return f"<text until {node.args[0]!r}, {node.args[1]} matched>"
    if kind == _CONCAT:
        return _describe(node.args[0], depth + 1) + _describe(node.args[1], depth + 1)
    if kind >= _AND:
        return _describe_boolean(node, depth)
    if kind == _ALT:
        return "(" + "|".join(_describe(m, depth + 1) for m in node.args) + ")"
    item, low, high = node.args
    return f"({_describe(item, depth + 1)}){{{low},{'' if high == UNBOUNDED else high}}}"


# -- Intersection, difference and decimal divisibility (added for JSON Schema) ----------------
#
# AND (n-ary intersection) and DIFF (``first`` minus ``second``) keep the module's invariant
# that every node other than NOTHING is non-empty: their smart constructors decide emptiness
# by a depth-first search of the product of the members' derivatives (pairs/tuples of
# interned nodes, never built as nodes), bounded by ``Limits.max_dfa_states`` explored
# states. Results are cached: a search that finds an accepting state proves every state on
# its path non-empty, a search that fails proves every state it visited empty. Derivatives
# are pointwise (``d(A & B) = dA & dB``, ``d(A - B) = dA - dB``), so the derivatives of an
# AND/DIFF node are tuples of derivatives of its members: finitely many.
#
# DECMOD is a leaf: decimal digit strings with at most one ".", whose value is a multiple of
# ``p / 10**k`` (``decimal_multiple``). Its state is (phase, remainder, fraction digits read);
# a state from which no accepting string is reachable is NOTHING (decided in closed form).
# The leaf is lax about syntax (leading zeros, "5." ...): intersect it with a number syntax.
# Its args carry one byte set per digit and one for "." so that walks over ``args`` (the
# DFA's global byte classes) see the leaf's cuts.

_AND, _DIFF, _DECMOD = 9, 10, 11

_DIGIT_MARKERS = tuple(byte_set(1 << b) for b in range(0x30, 0x3A)) + (byte_set(1 << 0x2E),)
_DECMOD_CUTS = (0x2E, 0x2F) + tuple(range(0x30, 0x3B))
_emptiness: Dict[tuple, bool] = {}  # (kind, members) -> True when the language is non-empty


def intersection(*items: Expr, limits=None) -> Expr:
    """Strings matched by every item. Raises :class:`LimitExceeded` (``max_dfa_states``)
    when deciding emptiness explores more product states than ``limits`` allow."""
    members: Dict[int, Expr] = {}
    for item in items:
        if item is NOTHING:
            return NOTHING
        for member in (item.args if item.kind == _AND else (item,)):
            members[member.id] = member
    if not members:
        raise ValueError("intersection of no expressions")
    for member in list(members.values()):  # (a - b) & a == a - b
        if member.kind == _DIFF and member.args[0].id in members:
            del members[member.args[0].id]
    if len(members) == 1:
        return next(iter(members.values()))
    ordered = tuple(members[k] for k in sorted(members))
    if not _non_empty(_AND, ordered, limits):
        return NOTHING
    return _make(_AND, ordered, all(m.nullable for m in ordered))


def difference(first: Expr, second: Expr, limits=None) -> Expr:
    """Strings of ``first`` not matched by ``second`` (same limits as :func:`intersection`)."""
    if first is NOTHING or first is second:
        return NOTHING
    if second is NOTHING:
        return first
    if first.kind == _DIFF:  # (a - b) - c == a - (b | c)
        return difference(first.args[0], alternation(first.args[1], second), limits)
    if second.kind == _ALT and any(m is first for m in second.args):
        return NOTHING
    pair = (first, second)
    if not _non_empty(_DIFF, pair, limits):
        return NOTHING
    return _make(_DIFF, pair, first.nullable and not second.nullable)


def decimal_multiple(p: int, k: int) -> Expr:
    """Digit strings with at most one "." (lax syntax) whose value is a multiple of
    ``p / 10**k`` (``p >= 1``, ``k >= 0``): e.g. ``decimal_multiple(1, 2)`` is the decimals
    with at most two significant fraction digits, ``decimal_multiple(3, 0)`` the multiples
    of three (any fraction digits are zeros)."""
    if p < 1 or k < 0:
        raise ValueError("decimal_multiple needs p >= 1 and k >= 0")
    return _decmod_state(p, k, 0, 0, 0)


def _decmod_state(p: int, k: int, phase: int, r: int, t: int) -> Expr:
    if phase == 0:
        nullable = (r * 10 ** k) % p == 0
    elif phase == 1:
        width = 10 ** (k - t)
        if width < p and (-r * width) % p >= width:
            return NOTHING  # no completion of the k fraction digits reaches a multiple
        nullable = (r * width) % p == 0
    else:
        if r != 0:
            return NOTHING
        nullable = True
    return _make(_DECMOD, (p, k, phase, r, t) + _DIGIT_MARKERS, nullable)


def _decmod_derivative(args: tuple, byte: int) -> Expr:
    p, k, phase, r, t = args[:5]
    if byte == 0x2E:
        if phase != 0:
            return NOTHING
        return _decmod_state(p, k, 1, r, 0) if k > 0 else _decmod_state(p, k, 2, r, 0)
    if not 0x30 <= byte <= 0x39:
        return NOTHING
    digit = byte - 0x30
    if phase == 2:
        return _decmod_state(p, k, 2, r, 0) if digit == 0 else NOTHING
    r = (r * 10 + digit) % p
    if phase == 0:
        return _decmod_state(p, k, 0, r, 0)
    return _decmod_state(p, k, 2, r, 0) if t + 1 == k else _decmod_state(p, k, 1, r, t + 1)


def _boolean_derivative(node: Expr, byte: int) -> Expr:
    kind = node.kind
    if kind == _AND:
        return intersection(*[derivative(m, byte) for m in node.args])
    if kind == _DIFF:
        return difference(derivative(node.args[0], byte), derivative(node.args[1], byte))
    return _decmod_derivative(node.args, byte)


def _state_key(kind: int, members: tuple) -> tuple | None:
    """Normalized members of a product state, or None when the state is dead."""
    if kind == _AND:
        unique: Dict[int, Expr] = {}
        for m in members:
            if m is NOTHING:
                return None
            unique[m.id] = m
        return tuple(unique[k] for k in sorted(unique))
    return None if members[0] is NOTHING else members


def _accepts(kind: int, members: tuple) -> bool:
    if kind == _AND:
        return len(members) == 1 or all(m.nullable for m in members)
    first, second = members
    return second is NOTHING or (first.nullable and not second.nullable)


def _non_empty(kind: int, members: tuple, limits) -> bool:
    """Whether the AND/DIFF of ``members`` matches some string (cached)."""
    key = (kind, members)
    if members in _tables[kind]:
        return True
    known = _emptiness.get(key)
    if known is not None:
        return known
    if kind == _DIFF and _infinite(members[0]) and _max_length(members[1]) is not None:
        _emptiness[key] = True  # longer strings than the subtrahend has are left over
        return True
    from ..limits import DEFAULT_LIMITS
    budget = (limits or DEFAULT_LIMITS).max_dfa_states
    visited = {key}
    path: list = []  # stack of (key, members, remaining representative bytes)
    if _accepts(kind, members):
        _emptiness[key] = True
        return True
    path.append((key, members, _representatives(members)))
    while path:
        _, state, pending = path[-1]
        if not pending:
            path.pop()
            continue
        byte = pending.pop()
        nxt = _state_key(kind, tuple(derivative(m, byte) for m in state))
        if nxt is None:
            continue
        nkey = (kind, nxt)
        if nkey in visited:
            continue
        if _emptiness.get(nkey) is False:
            continue
        if _emptiness.get(nkey) or nxt in _tables[kind] or _accepts(kind, nxt):
            for entry in path:
                _emptiness[entry[0]] = True
            return True
        visited.add(nkey)
        if len(visited) > budget:
            from ..errors import LimitExceeded
            raise LimitExceeded("max_dfa_states", len(visited), budget)
        path.append((nkey, nxt, _representatives(nxt)))
    for seen in visited:
        _emptiness[seen] = False
    return False


_infinite_memo: Dict[int, bool] = {}
_max_length_memo: Dict[int, object] = {}


def _infinite(node: Expr) -> bool:
    """True only when ``node`` surely matches infinitely many strings (sound, not complete)."""
    found = _infinite_memo.get(node.id)
    if found is None:
        kind = node.kind
        if kind == _REPEAT:
            item, _, high = node.args
            found = (high == UNBOUNDED and item is not EPSILON) or _infinite(item)
        elif kind == _CONCAT or kind == _ALT:
            found = any(_infinite(m) for m in node.args)
        elif kind == _TAGGED:
            found = _infinite(node.args[0])
        elif kind == _UNTIL or kind == _DECMOD:
            found = True
        elif kind == _DIFF:
            found = _infinite(node.args[0]) and _max_length(node.args[1]) is not None
        else:
            found = False
        _infinite_memo[node.id] = found
    return found


def _max_length(node: Expr):
    """The length of the longest string of ``node``, or None when unbounded (or unknown)."""
    if node.id in _max_length_memo:
        return _max_length_memo[node.id]
    kind = node.kind
    result: object = None
    if kind == _NOTHING or kind == _EPSILON:
        result = 0
    elif kind == _TAGGED:
        result = _max_length(node.args[0])
    elif kind == _BYTES:
        result = 1
    elif kind == _UTF8:
        result = 4
    elif kind == _CONCAT or kind == _ALT:
        parts = [_max_length(m) for m in node.args]
        if all(p is not None for p in parts):
            result = sum(parts) if kind == _CONCAT else max(parts)
    elif kind == _REPEAT:
        item, _, high = node.args
        inner = _max_length(item)
        if inner is not None and high != UNBOUNDED:
            result = inner * high
    elif kind == _AND:
        parts = [p for p in (_max_length(m) for m in node.args) if p is not None]
        result = min(parts) if parts else None
    elif kind == _DIFF:
        result = _max_length(node.args[0])
    _max_length_memo[node.id] = result
    return result


def _representatives(members: tuple) -> list:
    """One byte per class of the product state, in reverse order of preference (popped from
    the end: ASCII first, the closing quote of a JSON string before anything else)."""
    merged = set()
    for m in members:
        if m is not NOTHING:
            merged.update(cuts(m))
    firsts = sorted(merged | {0}, reverse=True)
    if 0x22 in firsts:  # try '"' first: it ends JSON strings, finding witnesses fast
        firsts.remove(0x22)
        firsts.append(0x22)
    for m in members:
        hint = _hint(m, 4)
        if hint is not None:  # a divisibility leaf knows its shortest completion: follow it
            firsts.append(hint)
            break
    return firsts


def _hint(node: Expr, depth: int):
    """The first byte of a short accepted completion of a DECMOD leaf inside ``node``."""
    kind = node.kind
    if kind == _DECMOD:
        return _decmod_hint(node.args)
    if depth == 0:
        return None
    if kind == _CONCAT:
        found = _hint(node.args[0], depth - 1)
        if found is None and node.args[0].nullable:
            found = _hint(node.args[1], depth - 1)
        return found
    if kind == _AND or kind == _ALT:
        for member in node.args:
            found = _hint(member, depth - 1)
            if found is not None:
                return found
    return None


def _decmod_hint(args: tuple):
    p, k, phase, r, t = args[:5]
    if phase == 2:
        return 0x30
    if phase == 0:
        modulus = p // _gcd(p, 10 ** k)
        if r % modulus == 0:
            return None
    else:
        modulus, k = p, k - t
        if (r * 10 ** k) % p == 0:
            return None
    if phase == 1:
        width = k
    else:  # the fewest digits that can complete a multiple: following the hint shortens it
        width = 1
        while (-r * 10 ** width) % modulus >= 10 ** width:
            width += 1
    target = (-r * 10 ** width) % modulus
    return 0x30 + int(str(target).zfill(width)[0])


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def _describe_boolean(node: Expr, depth: int) -> str:
    if node.kind == _AND:
        return "(" + "&".join(_describe(m, depth + 1) for m in node.args) + ")"
    if node.kind == _DIFF:
        return f"({_describe(node.args[0], depth + 1)}-{_describe(node.args[1], depth + 1)})"
    p, k, phase, r, t = node.args[:5]
    return f"<multiple of {p}e-{k}: phase {phase}, remainder {r}, {t} fraction digits>"
