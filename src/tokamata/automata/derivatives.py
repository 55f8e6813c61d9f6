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

from ..caches import clear_caches, register_process_cache
from . import charset as cs

__all__ = ["Expr", "NOTHING", "EPSILON", "byte_set", "utf8_char", "concat", "alternation",
           "repeat", "derivative", "cuts", "UNBOUNDED", "tagged", "end_marks", "text_until",
           "byte_mask", "first_bytes", "register_kind", "Kind", "intern_node", "is_interned", "describe", "equal",
           "CONTINUATION_BYTES"]

UNBOUNDED = -1



class Kind:
    """The kind of an expression node (``Expr.kind``), as plain ints: the C++ arena's
    ``ExprKind`` uses the same numbers, for every kind (cpp/include/tokamata/expr_arena.hpp).
    AND, DIFF and DECMOD are built in :mod:`.boolean`, SUBSTRING in :mod:`.substrings`."""

    NOTHING, EPSILON, BYTES, UTF8, CONCAT, ALT, REPEAT, TAGGED, UNTIL = range(9)
    AND, DIFF, DECMOD = 9, 10, 11
    SUBSTRING = 12


# (module-level copies for this module's own hot paths)
_NOTHING, _EPSILON, _BYTES, _UTF8, _CONCAT, _ALT, _REPEAT, _TAGGED, _UNTIL = range(9)
_AND, _DIFF, _DECMOD = 9, 10, 11
_DECMOD_CUTS = (0x2E, 0x2F) + tuple(range(0x30, 0x3B))

_lock = threading.Lock()
_KINDS = 13
#: one intern table per node kind, keyed by the node's args (no key tuple per lookup, and
#: one object fewer per node for the garbage collector to traverse)
_tables: Tuple[Dict[tuple, "Expr"], ...] = tuple({} for _ in range(_KINDS))
_next_id = itertools.count()  # ids are never reused, even after clear_interned()


class Expr:
    """An interned byte-level regular expression. Build with the module's constructors."""

    __slots__ = ("kind", "args", "nullable", "id", "_derivatives", "_cuts", "_highs", "_ends", "_longest",
                 "_infinite", "_leaf_cuts", "_first", "_native", "__weakref__")

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
        # facts computed on demand, kept with the node (they survive clear_interned() with it):
        self._ends: Tuple[int, ...] | None = None  # end_marks()
        self._longest: int | None = -1  # .boolean._max_length(): -1 unknown, None unbounded
        self._infinite: bool | None = None  # .boolean._infinite()
        self._leaf_cuts: int | None = None  # .dfa.global_class_starts() (these three: see _set_facts)
        self._first: int | None = None  # first_bytes()
        self._native = 0  # .native: the node's arena id with its generation (0: none yet)

    def __repr__(self) -> str:
        return f"Expr#{self.id}({_describe(self)})"


def _make(kind: int, args: tuple, nullable: bool) -> Expr:
    table = _tables[kind]
    node = table.get(args)
    if node is None:
        # no lock: dict.setdefault is atomic, so of two threads building the same node one
        # wins and the other's copy (complete, never published) is dropped
        node = Expr(kind, args, nullable, next(_next_id))
        _set_facts(node, kind, args)
        node = table.setdefault(args, node)
    return node


#: bits 1..0x7F of a leaf-cut mask: the ASCII cuts (0x80 is always a cut)
ASCII_CUT_POSITIONS = ((1 << 0x80) - 1) ^ 1
#: bit 0 of a leaf-cut mask (never a cut): some leaf can read a non-ASCII byte
NON_ASCII = 1


def _set_facts(node: Expr, kind: int, args: tuple) -> None:
    """Facts a new node takes from its leaves or children in constant time (most nodes are
    built while compiling and never derived, so nothing here walks):

    - ``_leaf_cuts`` (see ``.dfa.global_class_starts``), or None where ``.dfa``'s walk fills
      it in (above a text-until leaf, whose cuts take a derivative pass);
    - ``_longest``, the length of the longest string (None: unbounded), as
      ``.boolean._max_length`` defines it;
    - ``_infinite``, as ``.boolean._infinite`` defines it (sound, not complete).
    """
    if kind == _CONCAT or kind == _ALT:
        cuts: int | None = 0
        longest: int | None = 0
        infinite = False
        for child in args:
            if cuts is not None:
                child_cuts = child._leaf_cuts
                cuts = None if child_cuts is None else cuts | child_cuts
            child_longest = child._longest
            if longest is not None:
                if child_longest is None:
                    longest = None
                elif kind == _CONCAT:
                    longest += child_longest
                elif child_longest > longest:
                    longest = child_longest
            infinite = infinite or child._infinite
        node._leaf_cuts = cuts
        node._longest = longest
        node._infinite = infinite
    elif kind == _BYTES:
        mask = args[0]
        node._leaf_cuts = ((mask ^ (mask << 1)) & ASCII_CUT_POSITIONS) | (NON_ASCII if mask >> 0x80 else 0)
        node._longest = 1
        node._infinite = False
    elif kind == _UTF8:
        found = NON_ASCII
        if args[1] == 0:  # a lead byte comes first: its ASCII part is a byte set
            mask = 0
            for lo, hi in args[0]:
                if lo >= 0x80:
                    break
                mask |= ((1 << (min(hi, 0x7F) + 1)) - 1) ^ ((1 << lo) - 1)
            found |= (mask ^ (mask << 1)) & ASCII_CUT_POSITIONS
        node._leaf_cuts = found
        node._longest = 4
        node._infinite = False
    elif kind == _REPEAT:
        item, _, high = args
        node._leaf_cuts = item._leaf_cuts
        node._longest = None if item._longest is None or high == UNBOUNDED else item._longest * high
        node._infinite = (high == UNBOUNDED and item is not EPSILON) or item._infinite
    elif kind == _TAGGED:
        inner = args[0]
        node._leaf_cuts = inner._leaf_cuts
        node._longest = inner._longest
        node._infinite = inner._infinite
    elif kind == _NOTHING or kind == _EPSILON:
        node._leaf_cuts = 0
        node._longest = 0
        node._infinite = False
    elif kind == _AND:
        cuts = 0
        bounded = [m._longest for m in args if m._longest is not None]
        for child in args:
            child_cuts = child._leaf_cuts
            if child_cuts is None:
                cuts = None
                break
            cuts |= child_cuts
        node._leaf_cuts = cuts
        node._longest = min(bounded) if bounded else None
        node._infinite = False
    elif kind == _DIFF:
        first, second = args
        node._leaf_cuts = None if first._leaf_cuts is None or second._leaf_cuts is None \
            else first._leaf_cuts | second._leaf_cuts
        node._longest = first._longest
        node._infinite = first._infinite and second._longest is not None
    elif kind in _KIND_FACTS:
        _KIND_FACTS[kind](node)
    else:  # UNTIL, DECMOD: unbounded, infinite
        if kind == _DECMOD:  # its leaves: the digit and point markers after the parameters
            cuts = 0
            for child in args[5:]:
                cuts |= child._leaf_cuts
            node._leaf_cuts = cuts
        node._longest = None
        node._infinite = True


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
    return count


#: the bytes an interned expression holds on average with its table entry, its arguments and
#: its memoized derivatives (sys.getsizeof over the 71,792 nodes that 300 MaskBench schemas and
#: their instances left on Llama 3: 246 bytes): the estimate :func:`interned_bytes` counts
EXPR_BYTES = 256


def interned_bytes() -> int:
    """An estimate of the bytes the interned expressions hold (``EXPR_BYTES`` each; O(1))."""
    return EXPR_BYTES * sum(len(table) for table in _tables)


# evicted with every process cache (clear_caches()): the front ends' caches (string literals,
# character sets, natural spellings) hold expressions with their memoized derivatives, which
# clearing the tables alone would leave alive
register_process_cache("interned expressions", clear_interned, size=interned_bytes, evict=clear_caches)


def intern_node(kind: int, args: tuple, nullable: bool) -> Expr:
    """The interned node of ``kind`` over ``args`` (for the modules that define kinds of their
    own: :mod:`.boolean`); the caller has normalized ``args``."""
    return _make(kind, args, nullable)


def is_interned(kind: int, args: tuple) -> bool:
    """Whether a node of ``kind`` over ``args`` exists (was built and not cleared)."""
    return args in _tables[kind]


def equal(first: Expr, second: Expr) -> bool:
    """Whether two nodes are the same expression: the same node, or nodes of one kind over
    equal args (alternatives and intersections as sets: their members are ordered by id, which
    follows creation order). Interning makes this ``first is second`` for nodes built between
    two ``clear_interned()`` calls; a module constant built before a clear and its equal built
    after are two nodes, and code that recognizes constants by identity would change its
    decisions (and so lexer states and masks) with what the process cleared before: it
    compares with this instead. Concatenation chains are followed without recursion."""
    return _equal(first, second, {})


def _equal(a: Expr, b: Expr, memo: dict) -> bool:
    chain = []  # pairs decided by the pair followed next (the last args of a concatenation)
    result = True
    while a is not b:
        if a.kind != b.kind or len(a.args) != len(b.args) or a.nullable != b.nullable:
            result = False
            break
        key = (a.id, b.id)
        known = memo.get(key)
        if known is not None:
            result = known
            break
        chain.append(key)
        if a.kind == _ALT or a.kind == _AND:
            result = (all(any(_equal(x, y, memo) for y in b.args) for x in a.args)
                      and all(any(_equal(x, y, memo) for x in a.args) for y in b.args))
            break
        follow = None
        for i, (x, y) in enumerate(zip(a.args, b.args)):
            if not isinstance(x, Expr) or not isinstance(y, Expr):
                result = not isinstance(x, Expr) and not isinstance(y, Expr) and x == y
            elif i == len(a.args) - 1:
                follow = (x, y)
            else:
                result = _equal(x, y, memo)
            if not result:
                break
        if not result or follow is None:
            break
        a, b = follow
    for key in chain:
        memo[key] = result
    return result


def describe(node: Expr, depth: int = 0) -> str:
    """A short human-readable rendering of ``node`` (for messages)."""
    return _describe(node, depth)

#: the derivative and the description of the kinds defined by other modules (AND, DIFF and
#: DECMOD: automata/boolean.py; SUBSTRING: automata/substrings.py), registered by them when
#: imported; a node of such a kind is only ever built by its module, so its entry exists
#: before the node does. A leaf kind also registers its first bytes, cuts and facts (the
#: kinds of boolean.py have theirs written out here).
_KIND_DERIVATIVE: dict = {}
_KIND_DESCRIBE: dict = {}
_KIND_FIRST: dict = {}
_KIND_CUTS: dict = {}
_KIND_FACTS: dict = {}


def register_kind(kind: int, derivative_of, describe, first_bytes=None, cuts=None, facts=None) -> None:
    """Register how nodes of ``kind`` (>= AND) are derived (``derivative_of(node, byte)``) and
    described (``describe(node, depth)``); for a leaf kind, also its exact first-byte mask
    (``first_bytes(node)``), its cuts (``cuts(node)``) and the facts of ``_set_facts``
    (``facts(node)`` sets them on a new node)."""
    _KIND_DERIVATIVE[kind] = derivative_of
    _KIND_DESCRIBE[kind] = describe
    if first_bytes is not None:
        _KIND_FIRST[kind] = first_bytes
        _KIND_CUTS[kind] = cuts
        _KIND_FACTS[kind] = facts

_CONTINUATION_MASK = sum(1 << b for b in range(0x80, 0xC0))
CONTINUATION_BYTES = _CONTINUATION_MASK  #: the byte mask of UTF-8 continuation bytes (0x80..0xBF)
_CUT_POSITIONS = ((1 << 256) - 1) ^ 1  # bytes 1..255


def byte_mask(chars: str) -> int:
    """The 256-bit mask of the bytes named by ``chars`` (code points below 256). (Masks are
    built from range() values, which stay Python ints when this module is compiled with
    Cython: shifting a C-typed value such as ``ord(c)`` would wrap at 32 or 64 bits.)"""
    return sum(1 << b for b in range(256) if chr(b) in chars)


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
    found = node._ends
    if found is None:
        tags: set[int] = set()
        _collect_marks(node, tags)
        found = node._ends = tuple(sorted(tags))
    return found


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
    if first.kind == _CONCAT:  # keep concatenation right-nested, without recursion (chains may be long)
        heads = []
        while first.kind == _CONCAT:  # the head of a right-nested concatenation is never one
            heads.append(first.args[0])
            first = first.args[1]
        node = concat(first, second)
        for head in reversed(heads):
            node = concat(head, node)
        return node
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
    finely the enclosing state splits the bytes. (A repetition also keeps its remainder,
    the same for every class, under key -1.)
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
    if kind == _CONCAT:
        first, second = node.args
        result = concat(derivative(first, byte), second)
        if first.nullable:
            other = derivative(second, byte)
            if other is not NOTHING:
                result = other if result is NOTHING else alternation(result, other)
    elif kind == _ALT:  # only members that can read ``byte`` (a key alternation has many that cannot)
        live = [x for x in [derivative(m, byte) for m in node.args if (first_bytes(m) >> byte) & 1]
                if x is not NOTHING]
        result = NOTHING if not live else live[0] if len(live) == 1 else alternation(*live)
    elif kind == _TAGGED:
        result = tagged(derivative(node.args[0], byte), node.args[1])
    elif kind == _BYTES:
        result = EPSILON if (node.args[0] >> byte) & 1 else NOTHING
    elif kind == _REPEAT:
        head = derivative(node.args[0], byte)
        if head is NOTHING:
            result = NOTHING
        else:
            rest = memo.get(-1)  # the same for every class
            if rest is None:
                item, low, high = node.args
                rest = memo[-1] = repeat(item, max(low - 1, 0), UNBOUNDED if high == UNBOUNDED else high - 1)
            result = concat(head, rest)
    elif kind == _UTF8:
        result = _utf8_derivative(node.args[0], node.args[1], byte, _highs(node))
    elif kind == _UNTIL:
        result = _until_derivative(node.args[0], node.args[1], node.args[2], byte)
    elif kind >= _AND:
        result = _KIND_DERIVATIVE[kind](node, byte)
    else:  # NOTHING, EPSILON
        result = NOTHING
    memo[cls] = result
    return result


_LEAD_BYTES = sum(1 << b for b in range(0xC2, 0xF5))
_ANY_CHAR_FIRST = ((1 << 0x80) - 1) | _LEAD_BYTES
_DECMOD_FIRST = byte_mask("0123456789.")


def first_bytes(node: Expr) -> int:
    """A 256-bit mask containing every byte whose derivative of ``node`` is not NOTHING
    (a superset: bytes outside it surely lead nowhere), memoized on the node. Lets a
    derivative skip the members of an alternation, and a DFA the byte intervals of a state,
    that cannot read the byte."""
    found = node._first
    if found is not None:
        return found
    kind = node.kind
    if kind == _CONCAT:  # the head, and what follows while heads are nullable (no recursion along the chain)
        found = 0
        part = node
        while part.kind == _CONCAT:
            head = part.args[0]
            found |= first_bytes(head)
            if not head.nullable:
                break
            part = part.args[1]
        else:
            found |= first_bytes(part)
    elif kind == _BYTES:
        found = node.args[0]
    elif kind == _ALT:
        found = 0
        for member in node.args:
            found |= first_bytes(member)
    elif kind == _UTF8:
        if node.args[1] > 0:
            found = _CONTINUATION_MASK
        else:
            found = _LEAD_BYTES
            for lo, hi in node.args[0]:
                if lo >= 0x80:
                    break
                found |= ((1 << (min(hi, 0x7F) + 1)) - 1) ^ ((1 << lo) - 1)
    elif kind == _REPEAT or kind == _TAGGED:
        found = first_bytes(node.args[0])
    elif kind == _UNTIL:
        found = _ANY_CHAR_FIRST if node.args[2] is None else first_bytes(node.args[2])
    elif kind == _AND:  # every member must read the byte
        found = -1
        for member in node.args:
            found &= first_bytes(member)
    elif kind == _DIFF:
        found = first_bytes(node.args[0])
    elif kind == _DECMOD:
        found = _DECMOD_FIRST
    elif kind in _KIND_FIRST:
        found = _KIND_FIRST[kind](node)
    else:  # NOTHING, EPSILON
        found = 0
    node._first = found
    return found


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
        starts = []
        while changes:
            low = changes & -changes
            starts.append(low.bit_length() - 1)
            changes ^= low
        result = tuple(starts)
    elif kind == _UTF8:
        result = _utf8_cuts(node.args[0], node.args[1])
    elif kind == _CONCAT:
        first, second = node.args
        result = cuts(first)
        if first.nullable:
            result = tuple(sorted(set(result) | set(cuts(second))))
    elif kind == _ALT or kind == _AND or kind == _DIFF:
        merged: set[int] = set()
        for member in node.args:
            merged.update(cuts(member))
        result = tuple(sorted(merged))
    elif kind == _DECMOD:
        result = _DECMOD_CUTS
    elif kind in _KIND_CUTS:
        result = _KIND_CUTS[kind](node)
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
        return _KIND_DESCRIBE[kind](node, depth)
    if kind == _ALT:
        return "(" + "|".join(_describe(m, depth + 1) for m in node.args) + ")"
    item, low, high = node.args
    return f"({_describe(item, depth + 1)}){{{low},{'' if high == UNBOUNDED else high}}}"
