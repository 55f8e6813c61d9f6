"""Intersection, difference and decimal divisibility of byte expressions (for JSON Schema).

Invariants:
- AND (n-ary intersection) and DIFF (``first`` minus ``second``) keep the invariant of
  :mod:`.derivatives` that every node other than NOTHING is non-empty: their smart
  constructors decide emptiness in the native arena (:mod:`.native`: the members are
  imported, and C++ searches the product of their derivatives depth-first, bounded by
  ``Limits.max_dfa_states`` explored states), the one derivative engine of production.
  Decisions are cached per (kind, members) here too. :func:`reference_non_empty` is the same
  search over this module's Python derivatives: the test oracle for the native one (it
  caches nothing). Derivatives are pointwise (``d(A & B) = dA & dB``,
  ``d(A - B) = dA - dB``), so the derivatives of an AND/DIFF node are tuples of derivatives
  of its members: finitely many.
- DECMOD is a leaf: decimal digit strings with at most one ".", whose value is a multiple of
  ``p / 10**k`` (``decimal_multiple``). Its state is (phase, remainder, fraction digits
  read); a state from which no accepting string is reachable is NOTHING (decided in closed
  form). The leaf is lax about syntax (leading zeros, "5." ...): intersect it with a number
  syntax. Its args carry one byte set per digit and one for "." so that walks over ``args``
  (the DFA's global byte classes) see the leaf's cuts.
- These nodes are built only by the constructors here; :mod:`.derivatives` derives and
  describes them through the functions this module registers (``register_kind``) when it is
  imported.
- Facts about a node used to skip searches (surely infinite, longest string) are stored on
  the node, so they live exactly as long as it does.
"""

from __future__ import annotations

from typing import Dict

import numpy as np

from ..caches import register_process_cache
from ..deadline import check_deadline
from ..limits import DEFAULT_LIMITS

from . import native
from .derivatives import (NOTHING, Expr, Kind, alternation, byte_set, cuts, derivative, describe, intern_node,
                          is_interned, register_kind)

_AND, _ALT, _CONCAT, _DECMOD, _DIFF = Kind.AND, Kind.ALT, Kind.CONCAT, Kind.DECMOD, Kind.DIFF

__all__ = ["intersection", "difference", "decimal_multiple", "reference_non_empty"]

_DIGIT_MARKERS = tuple(byte_set(1 << b) for b in range(0x30, 0x3A)) + (byte_set(1 << 0x2E),)
_emptiness: Dict[tuple, bool] = {}  # (kind, members) -> True when the language is non-empty


def clear() -> None:
    """Forget the emptiness cache (with the interned expressions: ``clear_caches``)."""
    _emptiness.clear()


register_process_cache("emptiness of boolean expressions", clear)


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
    return intern_node(_AND, ordered, all(m.nullable for m in ordered))


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
    return intern_node(_DIFF, pair, first.nullable and not second.nullable)


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
    return intern_node(_DECMOD, (p, k, phase, r, t) + _DIGIT_MARKERS, nullable)


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
    """Whether the AND/DIFF of ``members`` matches some string (decided natively, cached)."""
    if is_interned(kind, members):
        return True
    key = (kind, members)
    known = _emptiness.get(key)
    if known is not None:
        return known
    if kind == _DIFF and members[0]._infinite and members[1]._longest is not None:  # (analysis.infinite, finite)
        _emptiness[key] = True  # longer strings than the subtrahend has are left over
        return True
    check_deadline()  # (each native search is bounded by its budget; many of them add up)
    budget = (limits or DEFAULT_LIMITS).max_dfa_states
    bridge = native.bridge()
    if kind == _AND:
        ids = np.fromiter((bridge.to_arena(m) for m in members), dtype=np.int32, count=len(members))
        found = bridge.arena.intersection(ids, budget) != 0
    else:
        found = bridge.arena.difference(bridge.to_arena(members[0]), bridge.to_arena(members[1]), budget) != 0
    _emptiness[key] = found
    return found


def reference_non_empty(kind: int, members: tuple, limits=None) -> bool:
    """Whether the AND (``kind == Kind.AND``) or DIFF of ``members`` matches some string, by a
    depth-first search of the product of their Python derivatives (the oracle of the native
    search; raises :class:`LimitExceeded` past ``limits.max_dfa_states`` states)."""
    budget = (limits or DEFAULT_LIMITS).max_dfa_states
    key = (kind, members)
    if _accepts(kind, members):
        return True
    visited = {key}
    path: list = [(members, _representatives(members))]  # stack of (members, remaining bytes)
    while path:
        state, pending = path[-1]
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
        if _accepts(kind, nxt):
            return True
        visited.add(nkey)
        if len(visited) > budget:
            from ..errors import LimitExceeded
            raise LimitExceeded("max_dfa_states", len(visited), budget)
        path.append((nxt, _representatives(nxt)))
    return False


def _representatives(members: tuple) -> list:
    """One byte per class of the product state, in reverse order of preference (popped from
    the end: ASCII first, the closing quote of a JSON string before anything else)."""
    merged: set[int] = set()
    for m in members:
        if m is not NOTHING:
            merged.update(cuts(m))
    firsts = sorted(merged | {0}, reverse=True)
    if 0x22 in firsts:  # try '"' first: it ends JSON strings, finding witnesses fast
        firsts.remove(0x22)
        firsts.append(0x22)
    # a divisibility leaf knows its shortest completion: follow it (every leaf's hint, smallest
    # first, so the order depends on the members' structure, never on their ids)
    hints = {hint for hint in (_hint(m, 4) for m in members) if hint is not None}
    firsts.extend(sorted(hints, reverse=True))
    return firsts


def _hint(node: Expr, depth: int):
    """The first byte of a short accepted completion of a DECMOD leaf inside ``node`` (of
    several, the smallest byte)."""
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
    if kind == _AND or kind == _ALT:  # (the smallest: independent of the members' id order)
        found = [hint for hint in (_hint(member, depth - 1) for member in node.args) if hint is not None]
        return min(found) if found else None
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
        return "(" + "&".join(describe(m, depth + 1) for m in node.args) + ")"
    if node.kind == _DIFF:
        return f"({describe(node.args[0], depth + 1)}-{describe(node.args[1], depth + 1)})"
    p, k, phase, r, t = node.args[:5]
    return f"<multiple of {p}e-{k}: phase {phase}, remainder {r}, {t} fraction digits>"


for _kind in (_AND, _DIFF, _DECMOD):
    register_kind(_kind, _boolean_derivative, _describe_boolean)
