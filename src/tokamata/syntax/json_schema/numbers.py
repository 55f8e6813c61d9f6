"""Exact number languages: bounds as digit-range automata, divisibility, constants.

Invariants:
- Every language built here is a set of *plain* JSON number spellings (optional ``-``,
  canonical integer part, optional ``.`` and digits; no exponent: :data:`PLAIN_ANY`) and is
  closed under plain spelling: a value is in with all its plain spellings (``5``, ``5.0``,
  ``5.000``; ``0``, ``-0``, ``-0.0``) or out with all of them. So intersections and
  differences of these languages (taken inside :data:`PLAIN_ANY`) are exact on values.
- The schema compiler computes with these unrestricted languages (and :data:`INTEGER_ANY`,
  :data:`lexemes.NUMBER`), and :func:`overflow_safe` applies the restriction of
  :data:`lexemes.PLAIN_NUMBER` / :data:`lexemes.INTEGER` (no fraction after more than 308
  integer digits: those overflow Python floats) once, to the final language of a value. Union,
  intersection and difference commute with intersecting every operand by one fixed set, so
  this is exact; and it keeps a 309-digit counter out of every intermediate product.
- Divisibility never meets that counter: a language holding ``multipleOf`` with more than one
  remainder (``_moduli > 1``) is a residue automaton (its states are remainders times a few
  phases, at most about the lcm of the divisors times the fraction digits), never a product
  with the number of digits. Exactly, "a fraction only after at most 308 integer digits" pairs
  every remainder with every integer-part length (``n.0`` or ``n.5`` is in only while ``n`` is
  short, and whether it is depends on ``n``'s remainder), so the restriction is replaced:
  an integral language (every string an integer: ``multipleOf`` integers, alone or under
  ``not``/``oneOf``/``allOf``) is spelled without fraction (``6``, not ``6.0``; every value
  stays in, nothing outside gets in: the ``integer-notation`` narrowing, which the natural
  spelling implies anyway); a language with non-integral values (``multipleOf: 0.25``, ``type:
  number`` under ``not: {multipleOf: 3}``) keeps its fractions after integer parts of any
  length (exact on values; a reader into binary64 overflows those 309-digit numbers, which no
  realistic generation reaches, and the exact restriction would need hundreds of thousands of
  lexer states for a divisor in the hundreds).
- Bounds are compared as exact decimals (``Decimal``), never as floats: a float from the
  schema is read back through its shortest ``repr``, which is what the schema's JSON text
  said. Integers of any size work.
- Bounds become expressions over decimal digits by the classic construction (fewer digits,
  or a common prefix then a smaller/larger digit then anything), at most quadratic in the
  number of digits of the bound; the digit count is bounded by ``Limits.max_regex_nodes``.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from ...automata import boolean

from ...automata import derivatives as d
from ...errors import LimitExceeded, SchemaError
from ...limits import Limits
from . import lexemes as lx

__all__ = ["to_decimal", "at_least", "at_most", "number_range", "number_value", "multiple_of", "PLAIN_ANY",
           "INTEGER_ANY", "overflow_safe"]

_D = lx.DIGIT
_D_STAR = d.repeat(_D, 0, d.UNBOUNDED)
_ZERO = lx.literal("0")
_ANY_FRACTION = d.repeat(d.concat(lx.literal("."), d.repeat(_D, 1, d.UNBOUNDED)), 0, 1)
_ZERO_FRACTION = d.repeat(d.concat(lx.literal("."), d.repeat(_ZERO, 1, d.UNBOUNDED)), 0, 1)
_MINUS = lx.literal("-")
_UNSIGNED = d.concat(d.alternation(_ZERO, d.concat(lx.NONZERO_DIGIT, _D_STAR)), _ANY_FRACTION)
_ZERO_FORMS = d.concat(_ZERO, _ZERO_FRACTION)  # unsigned spellings of zero
_CANONICAL = d.alternation(_ZERO, d.concat(lx.NONZERO_DIGIT, _D_STAR))

#: every plain spelling (no exponent), fractions after integer parts of any length
PLAIN_ANY = d.concat(d.repeat(_MINUS, 0, 1), _UNSIGNED)
#: integer values in plain spelling (optional zero fractions), integer parts of any length
INTEGER_ANY = d.concat_all((d.repeat(_MINUS, 0, 1), _CANONICAL, _ZERO_FRACTION))
#: plain spellings with a fraction after more than 308 integer digits (what
#: :data:`lexemes.PLAIN_NUMBER` leaves out of :data:`PLAIN_ANY`)
LONG_FRACTION = d.concat_all((d.repeat(_MINUS, 0, 1), lx.NONZERO_DIGIT, d.repeat(_D, 308, d.UNBOUNDED),
                              lx.literal("."), d.repeat(_D, 1, d.UNBOUNDED)))


def to_decimal(value: object, pointer: str) -> Decimal:
    """A schema number as an exact decimal (floats through their shortest repr)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise SchemaError(f"expected a number, got {value!r}", pointer=pointer)
    try:
        result = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation:  # pragma: no cover - repr of a float is always a decimal
        raise SchemaError(f"not a finite number: {value!r}", pointer=pointer) from None
    if not result.is_finite():
        raise SchemaError(f"not a finite number: {value!r}", pointer=pointer)
    return result


def _digits(value: Decimal, limits: Limits) -> tuple[str, str]:
    """(integer digits, fraction digits without trailing zeros) of ``abs(value)``."""
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    size = len(value.as_tuple().digits) + abs(exponent)
    if size > limits.max_regex_nodes:
        raise LimitExceeded("max_regex_nodes", size, limits.max_regex_nodes)
    text = format(abs(value), "f")
    whole, _, fraction = text.partition(".")
    whole = whole.lstrip("0") or "0"
    return whole, fraction.rstrip("0")


def _digit_range(lo: int, hi: int) -> d.Expr:
    if lo > hi:
        return d.NOTHING
    return d.byte_set(sum(1 << (0x30 + i) for i in range(lo, hi + 1)))


def _int_less(h: str) -> d.Expr:
    """Canonical unsigned integers below ``h``."""
    n = len(h)
    options = []
    if n >= 2:  # every shorter integer
        options.append(_ZERO)
        options.append(d.concat(lx.NONZERO_DIGIT, d.repeat(_D, 0, n - 2)))
    for i in range(n):
        first = 1 if (i == 0 and n >= 2) else 0
        options.append(d.concat_all((lx.literal(h[:i]), _digit_range(first, int(h[i]) - 1),
                                     d.repeat(_D, n - i - 1, n - i - 1))))
    return d.alternation(*options)


def _int_greater(l: str) -> d.Expr:
    """Canonical unsigned integers above ``l``."""
    n = len(l)
    options = [d.concat(lx.NONZERO_DIGIT, d.repeat(_D, n, d.UNBOUNDED))]
    for i in range(n):
        options.append(d.concat_all((lx.literal(l[:i]), _digit_range(int(l[i]) + 1, 9),
                                     d.repeat(_D, n - i - 1, n - i - 1))))
    return d.alternation(*options)


def _fraction_at_most(g: str, strict: bool) -> d.Expr:
    """The optional fraction (``""`` or ``.digits``) with value <= 0.g (< when strict)."""
    m = len(g)
    if m == 0:
        tail = d.NOTHING if strict else d.repeat(_ZERO, 1, d.UNBOUNDED)
    else:
        tail = d.NOTHING if strict else d.repeat(_ZERO, 0, d.UNBOUNDED)
        for i in range(m - 1, -1, -1):
            digit = int(g[i])
            tail = d.alternation(d.EPSILON if i >= 1 else d.NOTHING,
                                 d.concat(_digit_range(0, digit - 1), _D_STAR),
                                 d.concat(lx.literal(g[i]), tail))
    absent = d.EPSILON if (m > 0 or not strict) else d.NOTHING
    return d.alternation(absent, d.concat(lx.literal("."), tail))


def _fraction_at_least(g: str, strict: bool) -> d.Expr:
    """The optional fraction with value >= 0.g (> when strict)."""
    m = len(g)
    some_nonzero = d.concat_all((d.repeat(_ZERO, 0, d.UNBOUNDED), lx.NONZERO_DIGIT, _D_STAR))
    if m == 0:
        tail = some_nonzero if strict else d.repeat(_D, 1, d.UNBOUNDED)
    else:
        tail = some_nonzero if strict else _D_STAR
        for i in range(m - 1, -1, -1):
            digit = int(g[i])
            tail = d.alternation(d.concat(_digit_range(digit + 1, 9), _D_STAR),
                                 d.concat(lx.literal(g[i]), tail))
    absent = d.EPSILON if (m == 0 and not strict) else d.NOTHING
    return d.alternation(absent, d.concat(lx.literal("."), tail))


def _magnitude_at_most(value: Decimal, strict: bool, limits: Limits) -> d.Expr:
    whole, fraction = _digits(value, limits)
    return d.alternation(d.concat(_int_less(whole), _ANY_FRACTION),
                         d.concat(lx.literal(whole), _fraction_at_most(fraction, strict)))


def _magnitude_at_least(value: Decimal, strict: bool, limits: Limits) -> d.Expr:
    whole, fraction = _digits(value, limits)
    return d.alternation(d.concat(_int_greater(whole), _ANY_FRACTION),
                         d.concat(lx.literal(whole), _fraction_at_least(fraction, strict)))


_NON_NEGATIVE = d.alternation(_UNSIGNED, d.concat(_MINUS, _ZERO_FORMS))
_NON_POSITIVE = d.alternation(d.concat(_MINUS, _UNSIGNED), _ZERO_FORMS)


def at_least(bound: Decimal, strict: bool, limits: Limits) -> d.Expr:
    """Plain numbers ``>= bound`` (``> bound`` when ``strict``)."""
    if bound > 0:
        return _magnitude_at_least(bound, strict, limits)
    if bound == 0:
        return _magnitude_at_least(bound, True, limits) if strict else _NON_NEGATIVE
    return d.alternation(_NON_NEGATIVE, d.concat(_MINUS, _magnitude_at_most(-bound, strict, limits)))


def at_most(bound: Decimal, strict: bool, limits: Limits) -> d.Expr:
    """Plain numbers ``<= bound`` (``< bound`` when ``strict``)."""
    if bound < 0:
        return d.concat(_MINUS, _magnitude_at_least(-bound, strict, limits))
    if bound == 0:
        return d.concat(_MINUS, _magnitude_at_least(bound, True, limits)) if strict else _NON_POSITIVE
    return d.alternation(_NON_POSITIVE, _magnitude_at_most(bound, strict, limits))


def number_range(low: Decimal | None, low_strict: bool, high: Decimal | None, high_strict: bool,
                 limits: Limits) -> d.Expr:
    """Plain numbers between the bounds (``None``: unbounded on that side)."""
    parts = [PLAIN_ANY]
    if low is not None:
        parts.append(at_least(low, low_strict, limits))
    if high is not None:
        parts.append(at_most(high, high_strict, limits))
    return boolean.intersection(*parts, limits=limits)


def number_value(value: Decimal, limits: Limits) -> d.Expr:
    """Every plain spelling of ``value``."""
    whole, fraction = _digits(value, limits)
    if whole == "0" and not fraction:
        return d.concat(d.repeat(_MINUS, 0, 1), _ZERO_FORMS)
    sign = _MINUS if value < 0 else d.EPSILON
    if fraction:
        tail = d.concat(lx.literal("." + fraction), d.repeat(_ZERO, 0, d.UNBOUNDED))
    else:
        tail = _ZERO_FRACTION
    return d.concat_all((sign, lx.literal(whole), tail))


def multiple_of(step: Decimal, limits: Limits) -> d.Expr:
    """Plain numbers that are an integer multiple of ``step`` (``step > 0``)."""
    sign, digits, exponent = step.as_tuple()
    assert isinstance(exponent, int)
    if exponent > 0 and exponent + len(digits) > limits.max_regex_nodes:
        raise LimitExceeded("max_regex_nodes", exponent + len(digits), limits.max_regex_nodes)
    p = int("".join(map(str, digits)) or "0")
    k = -exponent
    if k < 0:
        p, k = p * 10 ** (-k), 0
    while k > 0 and p % 10 == 0:
        p, k = p // 10, k - 1
    lax = d.concat(d.repeat(_MINUS, 0, 1), boolean.decimal_multiple(p, k))
    return boolean.intersection(PLAIN_ANY, lax, limits=limits)


def overflow_safe(number: d.Expr, limits: Limits, narrowed: list | None = None) -> d.Expr:
    """The final language of a value's number part: ``number`` (built from the unrestricted
    languages of this module, :data:`INTEGER_ANY` and :data:`lexemes.NUMBER`) with the
    plain spellings of :data:`LONG_FRACTION` left out, except where ``number`` is all of
    :data:`lexemes.NUMBER` (``type: number`` alone accepts every JSON number) or holds
    divisibility (see the module docstring).

    Exact: for ``X`` inside :data:`PLAIN_ANY` the result is ``X & lexemes.PLAIN_NUMBER``, in
    the form cheapest for the lexer: ``INTEGER_ANY & PLAIN_NUMBER`` is ``lexemes.INTEGER``;
    an intersection with at most one member holding set operations takes the restricted
    universe as a member; a deeper combination becomes ``X - LONG_FRACTION``; alternatives
    are restricted one by one. Divisibility: an integral ``X`` becomes ``X`` without
    fractions (its number of remainders is appended to ``narrowed``, for the caller's
    report), any other stays ``X``."""
    if number is d.NOTHING or d.equal(number, lx.NUMBER):
        return number
    kind = number.kind
    if kind == d.Kind.ALT:
        if any(d.equal(m, lx.NUMBER) for m in number.args):
            return lx.NUMBER  # NUMBER | X == NUMBER
        return d.alternation(*(overflow_safe(m, limits, narrowed) for m in number.args))
    restricted = _restricted(number)
    if restricted is not None:
        return restricted
    remainders = _moduli(number, {})
    if remainders > 1:  # divisibility: residues, never times a 309-digit counter (module docstring)
        if not _integral(number):
            return number
        if narrowed is not None:  # the caller reports it
            narrowed.append(remainders)
        return boolean.intersection(number, _NO_FRACTION, limits=limits)
    if kind == d.Kind.AND and sum(1 for m in number.args if _combined(m, 3)) <= 1:
        members = [_restricted(m) or m for m in number.args]
        if all(_restricted(m) is None for m in number.args):
            members.append(lx.PLAIN_NUMBER)
        return boolean.intersection(*members, limits=limits)
    if kind == d.Kind.AND or kind == d.Kind.DIFF:
        return boolean.difference(number, LONG_FRACTION, limits)
    if not _may_spell_point(number, {}) or boolean.intersection(number, LONG_FRACTION, limits=limits) is d.NOTHING:
        return number  # (no '.' anywhere: no fraction, so nothing of LONG_FRACTION; cheap first)
    return boolean.intersection(number, lx.PLAIN_NUMBER, limits=limits)


_OPTIONAL_MINUS = d.repeat(_MINUS, 0, 1)
_NO_FRACTION = d.concat(_OPTIONAL_MINUS, _CANONICAL)
#: the unrestricted universes and their restrictions; recognized by structure (d.equal), not
#: identity: equal nodes built after a clear_interned() are other objects, and the decisions
#: here (so the lexer's states) must not depend on what the process did before
_RESTRICTIONS = ((INTEGER_ANY, lx.INTEGER), (PLAIN_ANY, lx.PLAIN_NUMBER))
_INTEGRAL = (INTEGER_ANY, _NO_FRACTION, lx.INTEGER, lx.INTEGER_DRAFT4)


def _restricted(node: d.Expr) -> d.Expr | None:
    """The restricted form of an unrestricted universe, or None for any other node."""
    for universe, restriction in _RESTRICTIONS:
        if d.equal(node, universe):
            return restriction
    return None


def _integral(node: d.Expr) -> bool:
    """True only when every string of ``node`` spells an integer (a sound syntactic test)."""
    kind = node.kind
    if any(d.equal(node, known) for known in _INTEGRAL):
        return True
    if kind == d.Kind.DECMOD:
        return node.args[1] == 0
    if kind == d.Kind.CONCAT:
        return d.equal(node.args[0], _OPTIONAL_MINUS) and _integral(node.args[1])
    if kind == d.Kind.AND:
        return any(_integral(m) for m in node.args)
    if kind == d.Kind.ALT:
        return all(_integral(m) for m in node.args)
    if kind == d.Kind.DIFF:
        return _integral(node.args[0])
    return False


def _may_spell_point(node: d.Expr, seen: dict) -> bool:
    """False only when no string of ``node`` holds a '.' (a sound syntactic test: no leaf
    spells one). Draft 4 integers, say, need no emptiness check against fractions."""
    found = seen.get(node.id)
    if found is None:
        kind = node.kind
        if kind == d.Kind.BYTES:
            found = bool(node.args[0] >> 0x2E & 1)
        elif kind == d.Kind.UTF8:
            found = node.args[1] > 0 or any(lo <= 0x2E <= hi for lo, hi in node.args[0])
        elif kind in (d.Kind.NOTHING, d.Kind.EPSILON):
            found = False
        elif kind in (d.Kind.CONCAT, d.Kind.ALT, d.Kind.REPEAT, d.Kind.TAGGED, d.Kind.AND, d.Kind.DIFF):
            found = any(_may_spell_point(m, seen) for m in node.args if isinstance(m, d.Expr))
        else:  # divisibility, text-until: may well
            found = True
        seen[node.id] = found
    return found


def _moduli(node: d.Expr, seen: dict) -> int:
    """The least common multiple of the divisibility moduli in ``node``: how many remainders
    its automaton may have to tell apart."""
    if node.id in seen:
        return seen[node.id]
    result = 1
    if node.kind == d.Kind.DECMOD:
        result = node.args[0]
    else:
        for m in node.args:
            if isinstance(m, d.Expr):
                other = _moduli(m, seen)
                result = result * other // _gcd(result, other)
    seen[node.id] = result
    return result


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def _combined(node: d.Expr, depth: int) -> bool:
    """Whether ``node`` holds divisibility or an intersection/difference (looking ``depth``
    levels down)."""
    if node.kind in (d.Kind.AND, d.Kind.DIFF, d.Kind.DECMOD):
        return True
    return depth > 0 and any(isinstance(m, d.Expr) and _combined(m, depth - 1) for m in node.args)
