"""JSON text pieces as byte expressions: string characters with every escape, numbers,
literals, and the punctuation of each whitespace style.

Invariants:
- :func:`json_char` of a code point set matches exactly the spellings RFC 8259 allows for
  those code points inside a string: the raw UTF-8 character where allowed (not ``"``,
  ``\\``, or a control character below U+0020), the short escapes (``\\" \\\\ \\/ \\b \\f \\n
  \\r \\t``), ``\\uXXXX`` with hex digits in either case, and surrogate pairs for code points
  above U+FFFF. Lone surrogates are not characters and are never produced.
- Escaping is a prefix code, so it commutes with intersection and difference: the string
  languages built from :func:`json_char` are closed under spelling (a string is in or out
  with all its spellings), and byte-level AND/DIFF of them is exact.
- Number languages here are sets of spellings. :data:`NUMBER` is all JSON numbers;
  :data:`PLAIN_NUMBER` those without exponent (and without fraction after more than 308
  integer digits, which overflow Python's floats). Every language the schema compiler builds
  from bounds and divisibility is closed under plain spellings (trailing fraction zeros,
  ``-0``); complements are taken inside :data:`PLAIN_NUMBER`.
- A :class:`Layout` gives the punctuation terminals of one whitespace style; structural
  whitespace lives inside them, never in value terminals.
"""

from __future__ import annotations

import functools
from typing import Callable

from ...automata import charset as cs
from ...caches import register_process_cache
from ...automata import derivatives as d

__all__ = ["literal", "json_char", "RAW_CHARS",
           "string_of", "string_literal", "string_literal_then", "string_literals", "ANY_CHAR", "ANY_STRING",
           "NUMBER", "PLAIN_NUMBER", "INTEGER", "INTEGER_DRAFT4", "NULL", "TRUE", "FALSE",
           "DIGIT", "Layout", "hex_set"]


def literal(text: str | bytes) -> d.Expr:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return d.concat_all(d.byte_set(1 << b) for b in data)


def _bytes_of(chars: str) -> d.Expr:
    return d.byte_set(d.byte_mask(chars))


DIGIT = _bytes_of("0123456789")
NONZERO_DIGIT = _bytes_of("123456789")
_HEX_DIGITS = tuple(_bytes_of("0123456789"[i] if i < 10 else "abcdef"[i - 10] + "ABCDEF"[i - 10])
                    for i in range(16))
#: the code points a JSON string may hold raw (all but ``"``, ``\\`` and controls below U+0020)
RAW_CHARS: cs.CharSet = ((0x20, 0x21), (0x23, 0x5B), (0x5D, cs.MAX_CODE_POINT))
_SHORT_ESCAPES = {0x22: "\"", 0x5C: "\\", 0x2F: "/", 0x08: "b", 0x0C: "f", 0x0A: "n", 0x0D: "r", 0x09: "t"}


@functools.lru_cache(maxsize=65536)
def _hex_set(ranges: cs.CharSet, width: int) -> d.Expr:
    """``width`` hex digits (either case) spelling a value in ``ranges``."""
    if not ranges:
        return d.NOTHING
    if width == 0:
        return d.EPSILON
    block = 16 ** (width - 1)
    groups: dict[int, tuple[d.Expr, int]] = {}  # rest expression id -> (rest, digit mask)
    for digit in range(16):
        lo = digit * block
        sub = cs.intersect(ranges, lo, lo + block - 1)
        if not sub:
            continue
        rest = _hex_set(tuple((a - lo, b - lo) for a, b in sub), width - 1)
        _, mask = groups.get(rest.id, (rest, 0))
        groups[rest.id] = (rest, mask | (1 << digit))
    options = []
    for rest, mask in groups.values():
        lead = d.alternation(*(_HEX_DIGITS[i] for i in range(16) if mask >> i & 1))
        options.append(d.concat(lead, rest))
    return d.alternation(*options)


_BACKSLASH_U = literal("\\u")


def hex_set(ranges: cs.CharSet, width: int) -> d.Expr:
    """``width`` hex digits (either case) spelling a value in ``ranges`` (code point sets
    of other string syntaxes' escapes: ``\\xhh``, ``\\uXXXX``, ``\\UXXXXXXXX``)."""
    return _hex_set(ranges, width)


def _surrogate_pairs(astral: cs.CharSet) -> d.Expr:
    """``\\uHHHH\\uLLLL`` for the astral code points in ``astral`` (after the first ``\\``
    and ``u`` of the pair: the caller adds them)."""
    by_low: dict[tuple, list[tuple[int, int]]] = {}  # low-surrogate set -> high ranges
    for lo, hi in astral:
        lo, hi = max(lo, 0x10000), min(hi, cs.MAX_CODE_POINT)
        if lo > hi:
            continue
        h_lo, h_hi = (lo - 0x10000) >> 10, (hi - 0x10000) >> 10
        l_lo, l_hi = (lo - 0x10000) & 0x3FF, (hi - 0x10000) & 0x3FF
        if h_lo == h_hi:
            by_low.setdefault(((l_lo, l_hi),), []).append((h_lo, h_lo))
            continue
        by_low.setdefault(((l_lo, 0x3FF),), []).append((h_lo, h_lo))
        if h_hi - h_lo > 1:
            by_low.setdefault(((0, 0x3FF),), []).append((h_lo + 1, h_hi - 1))
        by_low.setdefault(((0, l_hi),), []).append((h_hi, h_hi))
    options = []
    for lows, highs in by_low.items():
        high = _hex_set(cs.normalize((0xD800 + a, 0xD800 + b) for a, b in highs), 4)
        low = _hex_set(tuple((0xDC00 + a, 0xDC00 + b) for a, b in lows), 4)
        options.append(d.concat_all((high, _BACKSLASH_U, low)))
    return d.alternation(*options)


@functools.lru_cache(maxsize=4096)
def json_char(charset: cs.CharSet) -> d.Expr:
    """One code point of ``charset`` as it may be spelled inside a JSON string."""
    raw = cs.normalize(r for lo, hi in RAW_CHARS for r in cs.intersect(charset, lo, hi))
    short = 0
    for code, letter in _SHORT_ESCAPES.items():
        if cs.contains(charset, code):
            short |= d.byte_mask(letter)
    bmp = cs.intersect(charset, 0, 0xD7FF) + cs.intersect(charset, 0xE000, 0xFFFF)
    astral = cs.intersect(charset, 0x10000, cs.MAX_CODE_POINT)
    after_u = d.alternation(_hex_set(bmp, 4), _surrogate_pairs(astral))
    escaped = d.alternation(d.byte_set(short), d.concat(literal("u"), after_u))
    return d.alternation(d.utf8_char(raw), d.concat(literal("\\"), escaped))


ANY_CHAR = json_char(cs.ANY)
_QUOTE = literal('"')


def string_of(content: d.Expr) -> d.Expr:
    """A JSON string whose (escaped) content is ``content``."""
    return d.concat_all((_QUOTE, content, _QUOTE))


ANY_STRING = string_of(d.repeat(ANY_CHAR, 0, d.UNBOUNDED))


@functools.lru_cache(maxsize=65536)
def string_literal(text: str) -> d.Expr:
    """Every spelling of the JSON string ``text`` (raw or escaped, per character)."""
    return string_literal_then(text, d.EPSILON)


_char_spellings: dict[str, d.Expr] = {}  # character -> json_char of it (see json_char_of)


def json_char_of(c: str) -> d.Expr:
    """:func:`json_char` of the one character ``c`` (kept per character: keys and enum
    strings spell many). The kept expressions are never wrong after ``clear_interned``, only
    no longer shared with equal ones built later."""
    found = _char_spellings.get(c)
    if found is None:
        code = ord(c)
        found = json_char(((code, code),))
        if len(_char_spellings) < 4096:
            _char_spellings[c] = found
    return found


def string_literal_then(text: str, suffix: d.Expr) -> d.Expr:
    """Every spelling of the JSON string ``text`` followed by ``suffix`` (an object key and
    its colon, say). Built from the end, so each node of the chain is made once: appending
    to a built string would rebuild the whole chain."""
    node = d.concat(_QUOTE, suffix)
    for c in reversed(text):
        node = d.concat(json_char_of(c), node)
    return d.concat(_QUOTE, node)


def string_literals(texts, char: Callable[[cs.CharSet], d.Expr] | None = None) -> d.Expr:
    """Every spelling of any of the JSON strings ``texts``, as a trie (shared prefixes, so a
    derivative follows one branch however many strings there are). The closing quote ends
    each branch (appending it to the whole trie would rebuild every branch), so one string
    gives the same node as :func:`string_literal`. ``char`` spells each character instead of
    :func:`json_char` (the natural spelling's, say)."""
    char_of = json_char_of if char is None else (lambda c: char(((ord(c), ord(c)),)))
    words = sorted(set(texts))
    if not words:
        return d.NOTHING
    built: dict[tuple[int, int], d.Expr] = {}  # (lo, hi) -> trie of words[lo:hi] past their common prefix
    stack: list[tuple[int, int, int, list[tuple[int, int]] | None]] = [(0, len(words), 0, None)]
    while stack:  # post-order without recursion: strings may be long
        lo, hi, depth, children = stack.pop()
        first, last = words[lo], words[hi - 1]  # sorted: their common prefix is the group's
        common = depth
        limit = min(len(first), len(last))
        while common < limit and first[common] == last[common]:
            common += 1
        if children is None:  # split past the common prefix: by the next character
            children = []
            start = lo + 1 if len(first) == common else lo  # the shortest word sorts first
            while start < hi:
                c = words[start][common]
                stop = start + 1
                while stop < hi and words[stop][common] == c:
                    stop += 1
                children.append((start, stop))
                start = stop
            stack.append((lo, hi, depth, children))
            stack.extend((a, b, common, None) for a, b in children if (a, b) not in built)
            continue
        options = [_QUOTE] if len(first) == common else []
        options.extend(built[child] for child in children)
        node = options[0] if len(options) == 1 else d.alternation(*options)
        for c in reversed(first[depth:common]):
            node = d.concat(char_of(c), node)
        built[(lo, hi)] = node
    return d.concat(_QUOTE, built[(0, len(words))])


_MINUS = literal("-")
_INT_MAGNITUDE = d.alternation(literal("0"), d.concat(NONZERO_DIGIT, d.repeat(DIGIT, 0, d.UNBOUNDED)))
_CANONICAL_INT = d.concat(d.repeat(_MINUS, 0, 1), _INT_MAGNITUDE)
_FRACTION = d.concat(literal("."), d.repeat(DIGIT, 1, d.UNBOUNDED))
_EXPONENT = d.concat_all((_bytes_of("eE"), d.repeat(_bytes_of("+-"), 0, 1), d.repeat(DIGIT, 1, d.UNBOUNDED)))
_ZERO_FRACTION = d.concat(literal("."), d.repeat(literal("0"), 1, d.UNBOUNDED))

NUMBER = d.concat_all((_CANONICAL_INT, d.repeat(_FRACTION, 0, 1), d.repeat(_EXPONENT, 0, 1)))
#: plain decimal notation; a fraction only after at most 308 integer digits (longer ones
#: overflow floats in Python and most parsers, which then misjudge bounds and multiples)
_SHORT_MAGNITUDE = d.alternation(literal("0"), d.concat(NONZERO_DIGIT, d.repeat(DIGIT, 0, 307)))
_LONG_MAGNITUDE = d.concat(NONZERO_DIGIT, d.repeat(DIGIT, 308, d.UNBOUNDED))
PLAIN_NUMBER = d.concat(d.repeat(_MINUS, 0, 1),
                        d.alternation(d.concat(_SHORT_MAGNITUDE, d.repeat(_FRACTION, 0, 1)), _LONG_MAGNITUDE))
#: integer values (drafts 6 on), plain spellings with optional zero fractions (``.0+`` only
#: after at most 308 digits): exponents and long zero-fraction numbers are left out, because
#: ``1e400`` or ``1000...0.0`` is an integer to JSON Schema but overflows to a float ``inf``
#: in Python and most parsers, which then call it no integer
INTEGER = d.alternation(
    d.concat_all((d.repeat(_MINUS, 0, 1), _SHORT_MAGNITUDE, d.repeat(_ZERO_FRACTION, 0, 1))),
    d.concat_all((d.repeat(_MINUS, 0, 1), NONZERO_DIGIT, d.repeat(DIGIT, 308, d.UNBOUNDED))))
#: draft 4: an integer is a number without fraction or exponent
INTEGER_DRAFT4 = _CANONICAL_INT
PLAIN_INTEGER = INTEGER
NULL, TRUE, FALSE = literal("null"), literal("true"), literal("false")

_WS = _bytes_of(" \t\n\r")


class Layout:
    """Punctuation of one whitespace style.

    - ``compact``: no whitespace at all.
    - ``flexible``: up to ``max_whitespace`` of ``[ \\t\\n\\r]`` on each side of every
      structural character (so at most twice that between two tokens).
    - ``pretty``: exactly ``json.dumps(value, indent=indent)``'s layout: a newline and
      ``indent * depth`` spaces before each member and before the closing bracket,
      ``": "`` after keys, ``{}`` / ``[]`` when empty. Terminals depend on the depth.

    A layout belongs to one compile: it keeps each piece of punctuation it built (the
    expressions it returns are interned, so keeping them changes nothing but the time). The
    compact style's pieces, which nothing varies, are built once, like the other constants
    of this module.
    """

    __slots__ = ("style", "indent", "max_whitespace", "depth_dependent", "_built")

    def __init__(self, style: str = "compact", indent: int = 2, max_whitespace: int = 20):
        self.style = style
        self.indent = indent
        self.max_whitespace = max_whitespace
        self.depth_dependent = style == "pretty"
        self._built: dict[tuple, d.Expr] = dict(_COMPACT_PIECES) if style == "compact" else {}

    def _ws(self) -> d.Expr:
        return d.repeat(_WS, 0, self.max_whitespace) if self.style == "flexible" else d.EPSILON

    def _newline(self, depth: int) -> d.Expr:
        spaces = self.indent * depth
        if spaces <= 64:
            return literal("\n" + " " * spaces)
        # one counted repeat, not a node per space: building it costs the same for any indent
        return d.concat(literal("\n"), d.repeat(literal(" "), spaces, spaces))

    def _piece(self, key: tuple) -> d.Expr:
        kind, text, depth = key
        if kind == "open":  # a non-empty container's opening bracket (before its first item)
            if self.style == "pretty":
                return d.concat(literal(text), self._newline(depth + 1))
            return d.concat(literal(text), self._ws())
        if kind == "close":
            if self.style == "pretty":
                return d.concat(self._newline(depth), literal(text))
            return d.concat(self._ws(), literal(text))
        if kind == "empty":
            return d.concat_all((literal(text[0]), self._ws(), literal(text[1])))
        if kind == "comma":  # between two items of a container at depth
            if self.style == "pretty":
                return d.concat(literal(","), self._newline(depth + 1))
            return d.concat_all((self._ws(), literal(","), self._ws()))
        if self.style == "pretty":  # the colon after a key
            return literal(": ")
        return d.concat_all((self._ws(), literal(":"), self._ws()))

    def _get(self, key: tuple) -> d.Expr:
        found = self._built.get(key)
        if found is None:
            found = self._built[key] = self._piece(key)
        return found

    def open(self, bracket: str, depth: int) -> d.Expr:
        """The opening bracket of a non-empty container at ``depth`` (before its first item)."""
        return self._get(("open", bracket, depth if self.depth_dependent else 0))

    def close(self, bracket: str, depth: int) -> d.Expr:
        return self._get(("close", bracket, depth if self.depth_dependent else 0))

    def empty(self, brackets: str, depth: int) -> d.Expr:
        return self._get(("empty", brackets, 0))

    def comma(self, depth: int) -> d.Expr:
        """Between two items of a container at ``depth``."""
        return self._get(("comma", "", depth if self.depth_dependent else 0))

    def colon(self) -> d.Expr:
        return self._get(("colon", "", 0))


#: every piece of punctuation a compact object or array uses (filled below)
_COMPACT_PIECES: dict[tuple, d.Expr] = {}


def _build_compact_pieces() -> None:
    layout = Layout("compact")
    for bracket in "{[":
        layout.open(bracket, 0)
    for bracket in "}]":
        layout.close(bracket, 0)
    for brackets in ("{}", "[]"):
        layout.empty(brackets, 0)
    layout.comma(0)
    layout.colon()
    _COMPACT_PIECES.update(layout._built)


_build_compact_pieces()

register_process_cache("spellings of JSON string literals", string_literal.cache_clear)
