"""Natural JSON spelling: one spelling per JSON value, the one a serializer writes.

RFC 8259 gives every value many spellings: ``22``, ``22.0``, ``2.2e1``, ``220E-1``; ``"age"``,
``"ag\\u0065"``, ``"\\u0061ge"``; ``"/"`` and ``"\\/"``. A language model that wanders into
one of the long ones (``22.000000...``, a ``\\u`` escape per character) rarely finds its way
out before ``max_tokens``. ``spelling="natural"`` (the default of ``compile_json``,
``compile_json_schema`` and ``%json`` in grammars) allows exactly one spelling per value;
``spelling="any"`` allows every RFC 8259 spelling.

The natural spelling (:data:`NATURAL_STRING_PATTERN`, :data:`NATURAL_NUMBER_PATTERN`):

- **Strings and keys** are what ``json.dumps(value, ensure_ascii=False)`` writes: every
  character raw, except ``"`` and ``\\`` (written ``\\"`` and ``\\\\``), the five controls
  with a short escape (``\\b \\f \\n \\r \\t``), and the other controls below U+0020
  (``\\u00XX``, lower-case hex). Never ``\\/``, never ``\\u`` for a character that can be
  written directly (DEL, U+2028, noncharacters and astral characters are raw UTF-8). A string
  holding a lone surrogate has no natural spelling (``json.dumps`` would write it raw, which
  is not UTF-8), so it is unreachable; the schema compiler never produces one anyway.
- **Numbers** are the shortest plain decimal of the value: ``-?(0|[1-9][0-9]*)``, then a
  fraction only when the value is not an integer, without trailing zeros; no exponent; zero
  is ``0``, never ``-0``. So integers (``type: integer``, and integral values of any number)
  have no fraction and no exponent: ``22``, not ``22.0``.

Why numbers are not exactly ``json.dumps``: ``json.dumps`` spells a Python *float*, not a
number: ``2.0`` (the same JSON Schema value as ``2``, which it spells ``2``), ``1e+16`` past
16 digits, ``1e-05`` below 1e-4. Those forms depend on binary floating point (where ``repr``
switches notation, which decimals round-trip), which an automaton over decimal digits cannot
mirror exactly, and they would give one value two spellings (``2`` and ``2.0``). The rule
here is the one decimal form every value has exactly once, the one the bound and
``multipleOf`` automata of the schema compiler already speak, and what ``json.dumps`` writes
for every ``int`` and for every float whose ``repr`` has neither exponent nor ``.0`` (0.5,
-3.25, 1234.5678). The cost is length at the extremes: ``1e300`` is a 1 and 300 zeros, and
``1e-300`` a fraction of 300 digits; such values stay reachable. One exception, by the
definition of draft 4: there ``integer`` is a matter of spelling (``1.0`` is a number but no
integer), so an integral value a draft-4 schema allows only as a non-integer (``1.0`` under
``{"not": {"type": "integer"}}``) has no natural spelling and is unreachable; drafts 6 on
compare numbers by value, and ``spelling="any"`` keeps every spelling in any draft.

Invariants:
- Every JSON value (without lone surrogates) has exactly one spelling in
  :data:`NATURAL_STRING` / :data:`NATURAL_NUMBER`, the one :func:`natural_number` and
  ``json.dumps(text, ensure_ascii=False)`` write.
- A language closed under spelling (every value in with all its RFC spellings, or, for
  number languages, with all its plain ones) intersected with these sets holds exactly the
  natural spelling of each of its values: the front ends build their languages as before and
  intersect the value languages once, at the end, so every value the schema allows stays
  reachable and no other gets in.
"""

from __future__ import annotations

from decimal import Decimal
from json.encoder import encode_basestring

from ..automata import derivatives as d
from ..errors import InvalidArgument
from ..limits import DEFAULT_LIMITS
from .regex import parse_regex
from .regex_lower import lower

__all__ = ["SPELLINGS", "check_spelling", "NATURAL_STRING_PATTERN", "NATURAL_NUMBER_PATTERN",
           "NATURAL_INTEGER_PATTERN", "NATURAL_STRING", "NATURAL_NUMBER", "NATURAL_INTEGER",
           "natural_number", "natural_literal", "NATURAL_REPORT"]

#: the values of ``spelling=``
SPELLINGS = ("natural", "any")

#: a JSON string in natural spelling (quotes included)
NATURAL_STRING_PATTERN = r'"(?:[^"\\\x00-\x1f]|\\["\\bfnrt]|\\u00(?:0[0-7bef]|1[0-9a-f]))*"'
#: a JSON number in natural spelling
NATURAL_NUMBER_PATTERN = r"0|-?(?:[1-9][0-9]*(?:\.[0-9]*[1-9])?|0\.[0-9]*[1-9])"
#: an integer in natural spelling (the integral part of :data:`NATURAL_NUMBER_PATTERN`)
NATURAL_INTEGER_PATTERN = r"0|-?[1-9][0-9]*"

NATURAL_STRING = lower(parse_regex(NATURAL_STRING_PATTERN, DEFAULT_LIMITS))
NATURAL_NUMBER = lower(parse_regex(NATURAL_NUMBER_PATTERN, DEFAULT_LIMITS))
NATURAL_INTEGER = lower(parse_regex(NATURAL_INTEGER_PATTERN, DEFAULT_LIMITS))

#: the report line of a constraint in natural spelling
NATURAL_REPORT = ("natural: one spelling per value, as json.dumps(value, ensure_ascii=False) writes it, "
                  "numbers in shortest plain decimal (no exponent, no fraction on integers, no trailing "
                  "fraction zeros, 0 not -0); spelling='any' accepts every RFC 8259 spelling")


def check_spelling(spelling: object) -> str:
    """``spelling`` when it is one of :data:`SPELLINGS`, else :class:`InvalidArgument`.

    >>> check_spelling("natural")
    'natural'
    """
    if not isinstance(spelling, str) or spelling not in SPELLINGS:
        raise InvalidArgument(f"spelling must be 'natural' or 'any', got {spelling!r:.60}")
    return spelling


def natural_number(value: int | float | Decimal) -> str:
    """The natural spelling of a finite number.

    >>> [natural_number(v) for v in (22, 22.0, 2.50, -0.0, 1e16, 1e-5, Decimal("-1.10"))]
    ['22', '22', '2.5', '0', '10000000000000000', '0.00001', '-1.1']
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise InvalidArgument(f"expected a number, got {type(value).__name__}")
    exact = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if not exact.is_finite():
        raise InvalidArgument(f"a JSON number is finite, got {value!r}")
    text = format(exact, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def natural_literal(text: str, suffix: d.Expr = d.EPSILON) -> d.Expr:
    """The natural spelling of the JSON string ``text`` (quotes included) followed by
    ``suffix`` (an object key and its colon, say), or
    :data:`~tokamata.automata.derivatives.NOTHING` when ``text`` holds a lone surrogate.
    Built from the end, so each node of the chain is made once (appending ``suffix`` to the
    built string would rebuild the whole chain)."""
    try:  # (encode_basestring: what json.dumps(text, ensure_ascii=False) calls, without an encoder per call)
        data = encode_basestring(text).encode("utf-8")
    except UnicodeEncodeError:
        return d.NOTHING
    node = suffix
    for b in reversed(data):
        node = d.concat(d.byte_set(1 << b), node)
    return node
