"""The text of scalar values shared by both syntaxes: ISO 8601 forms of dates and times, UUIDs,
and Python string literals as byte expressions.

Invariants:
- :data:`ISO_PATTERNS` are full-match regexes (the same text is a Python ``re`` pattern and,
  wrapped in ``^...$``, an ECMA-262 one) for exactly the texts this package writes and reads
  back: what ``isoformat()`` writes (``date``: ``YYYY-MM-DD``, years 0001-9999, real calendar
  dates with Gregorian leap years; ``time``: ``HH:MM:SS`` with optional ``.ffffff`` (six
  digits) and offset; ``datetime``: date ``T`` time; offsets ``+HH:MM``/``-HH:MM`` with
  ``HH`` below 24, or ``Z``) and ``str(UUID)`` (hex digits in either case). Every text they
  match is read by ``fromisoformat`` / ``UUID`` into a value that writes back the same way
  (up to case and ``Z``).
- :func:`python_char` of a code point set matches exactly the spellings of those code points
  inside a Python string literal quoted with ``quote`` that this package accepts: the raw
  UTF-8 character (not the quote, ``\\``, a control character U+0000..U+001F or U+007F),
  ``\\\\ \\' \\" \\a \\b \\f \\n \\r \\t \\v``, ``\\xhh``, ``\\uXXXX`` and ``\\UXXXXXXXX``
  (hex in either case). Octal escapes, ``\\N{...}``, line continuations and string prefixes
  are not accepted. Surrogates are never characters. Escaping is a prefix code, so languages
  built from it are closed under spelling (as :func:`lexemes.json_char`'s are).
"""

from __future__ import annotations

import functools

from ...automata import charset as cs
from ...automata import derivatives as d
from ..json_schema import lexemes as lx

__all__ = ["ISO_PATTERNS", "python_char", "python_string", "PY_SHORT_ESCAPES"]

_YEAR = r"(?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})"
_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_DATE = (r"(?:" + _YEAR + r"-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
         r"|02-(?:0[1-9]|1[0-9]|2[0-8]))|" + _LEAP_YEAR + r"-02-29)")
_OFFSET = r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
_TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{6})?" + _OFFSET + "?"
_HEX = "[0-9a-fA-F]"

#: full-match regexes of the ISO 8601 texts of each kind (see the module docstring)
ISO_PATTERNS = {
    "date": _DATE,
    "time": _TIME,
    "datetime": _DATE + "T" + _TIME,
    "uuid": f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}",
}

#: the short escapes: escape letter -> the character it stands for
PY_SHORT_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
                    "t": "\t", "v": "\v"}
_SHORT_BY_CODE = {ord(c): letter for letter, c in PY_SHORT_ESCAPES.items()}
_NOT_RAW = ((0x00, 0x1F), (0x22, 0x22), (0x27, 0x27), (0x5C, 0x5C), (0x7F, 0x7F), (0xD800, 0xDFFF))
_NO_SURROGATES = ((0, 0xD7FF), (0xE000, cs.MAX_CODE_POINT))


@functools.lru_cache(maxsize=8192)
def python_char(charset: cs.CharSet, quote: str) -> d.Expr:
    """One code point of ``charset`` as it may be spelled in a Python string quoted with
    ``quote`` (``'`` or ``"``)."""
    charset = cs.normalize(r for lo, hi in _NO_SURROGATES for r in cs.intersect(charset, lo, hi))
    raw = charset
    for lo, hi in _NOT_RAW:
        if lo != ord(quote) and lo in (0x22, 0x27):
            continue  # the other quote is a raw character
        raw = cs.normalize(r for a, b in raw for r in _minus((a, b), (lo, hi)))
    short = 0
    for code, letter in _SHORT_BY_CODE.items():
        if cs.contains(charset, code):
            short |= d.byte_mask(letter)
    escaped = d.alternation(
        d.byte_set(short),
        d.concat(lx.literal("x"), lx.hex_set(cs.intersect(charset, 0, 0xFF), 2)),
        d.concat(lx.literal("u"), lx.hex_set(cs.intersect(charset, 0, 0xFFFF), 4)),
        d.concat(lx.literal("U"), lx.hex_set(charset, 8)))
    return d.alternation(d.utf8_char(raw), d.concat(lx.literal("\\"), escaped))


def _minus(r: tuple[int, int], cut: tuple[int, int]) -> list[tuple[int, int]]:
    lo, hi = r
    out = []
    if lo < cut[0]:
        out.append((lo, min(hi, cut[0] - 1)))
    if hi > cut[1]:
        out.append((max(lo, cut[1] + 1), hi))
    return out


def python_string(content_of) -> d.Expr:
    """A Python string literal in either quote: ``content_of(quote)`` is its content."""
    return d.alternation(*(d.concat_all((lx.literal(q), content_of(q), lx.literal(q))) for q in "'\""))
