"""String contents: ECMA-262 patterns with search semantics, lengths in code points, and
character-level regexes lowered to JSON-escaped bytes.

Invariants:
- Every expression built here matches the *content* of a JSON string (the bytes between the
  quotes) and is closed under spelling: it is :func:`lexemes.json_char` substituted into a
  character-level language, so any escape of a character is accepted wherever the character
  is, and AND/DIFF of such expressions are exact on decoded strings.
- ``pattern`` has JSON Schema semantics: ECMA-262 syntax, unanchored (``re.search``-like) unless
  a top-level alternative starts with ``^`` / ends with ``$``; ``$`` matches only at the very
  end (no trailing-newline exception). ECMA classes are translated before Python's parser sees
  them: ``\\d`` ``\\w`` are ASCII, ``\\s`` is ECMA's white space and line terminators, ``.``
  excludes ``\\n \\r \\u2028 \\u2029``. Syntax ECMA has and Python's ``re`` lacks (``\\p{..}``,
  ``\\cX`` ...) is translated or refused with :class:`Unsupported`.
- An error in a pattern (:class:`Unsupported`, or :class:`SchemaError` for bad syntax) has the
  pattern's ``pointer``, the pattern as ``text`` and the ``span`` of the offending characters
  in it (mapped back through the translation); an Unsupported's ``keyword`` is ``pattern`` or
  ``patternProperties``, its ``reason`` the construct.
- Nothing here counts grammar symbols; regex sizes are bounded by ``Limits`` in the parser.
- A pattern the library itself writes (declared with :func:`declare_library_pattern`: a fixed
  text such as the ISO 8601 patterns of ``compile_type``, never user input) has its contents
  built once per process in each spelling, like a format's (:func:`.formats.format_content`):
  the same expressions for the same text, under the front end's own size limits rather than
  the caller's. :func:`tokamata.clear_caches` keeps them (a few expressions, bounded by the
  declared texts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from json.encoder import encode_basestring

from ...automata import charset as cs
from ...automata import derivatives as d
from ...errors import InvalidSyntax, SchemaError, Unsupported
from ...limits import Limits
from ...syntax import regex as ast
from . import lexemes as lx

__all__ = ["declare_library_pattern", "lower_json", "lower_chars", "char_regex", "pattern_content", "pattern_contents", "length_content", "ANY_CONTENT", "name_accepts"]

ANY_CONTENT = d.repeat(lx.ANY_CHAR, 0, d.UNBOUNDED)
_ECMA_SPACE = ("\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f"
               "\\u3000\\ufeff")
_DOT = "[^\\n\\r\\u2028\\u2029]"
_ASCII = "(?a)"  # translated patterns are parsed under it: ASCII \d and \w, as in ECMA-262
_LIBRARY_LIMITS = Limits(max_regex_nodes=200_000, max_pattern_length=400_000)
#: pattern texts the library writes -> their contents, by the spellings they were built in
_LIBRARY: dict[str, dict[tuple[Callable[[cs.CharSet], d.Expr], ...], list[d.Expr]]] = {}


def lower_json(node: ast.Node) -> d.Expr:
    """A character-level regex AST as JSON string content (every spelling of every match)."""
    return lower_chars(node, lx.json_char)


def lower_chars(node: ast.Node, char: Callable[[cs.CharSet], d.Expr]) -> d.Expr:
    """A character-level regex AST with each character set spelled by ``char`` (a string
    syntax's spellings of a code point set: :func:`lexemes.json_char` for JSON; a prefix
    code, so the result is closed under spelling as :func:`lower_json`'s is)."""
    if isinstance(node, ast.Chars):
        return char(node.charset)
    if isinstance(node, ast.Concat):
        return d.concat_all(lower_chars(item, char) for item in node.items)
    if isinstance(node, ast.Alternation):
        return d.alternation(*(lower_chars(option, char) for option in node.options))
    if isinstance(node, ast.Repeat):
        high = d.UNBOUNDED if node.high == ast.UNBOUNDED else node.high
        return d.repeat(lower_chars(node.item, char), node.low, high)
    raise TypeError(f"not a regex AST node: {node!r}")  # pragma: no cover


def char_regex(pattern: str, limits: Limits, char: Callable[[cs.CharSet], d.Expr] = lx.json_char) -> d.Expr:
    """A Python regex of our own (full match) as JSON string content, spelled by ``char``."""
    return lower_chars(ast.parse_regex(pattern, limits), char)


def length_content(low: int, high: int | None, char: Callable[[cs.CharSet], d.Expr] = lx.json_char) -> d.Expr:
    """Contents of ``low`` to ``high`` code points (``None``: no upper bound), spelled by ``char``."""
    return d.repeat(char(cs.ANY), low, d.UNBOUNDED if high is None else high)


def pattern_content(pattern: str, keyword: str, pointer: str | None, limits: Limits,
                    char: Callable[[cs.CharSet], d.Expr] | None = None) -> d.Expr:
    """Contents in which the ECMA-262 ``pattern`` finds a match (JSON Schema semantics),
    spelled by ``char`` (default :func:`lexemes.json_char`: JSON string content).

    ``keyword`` (``pattern`` or ``patternProperties``) and ``pointer`` say where the pattern
    is, for errors; their ``text`` is the pattern and their ``span`` the offending characters.
    """
    return pattern_contents(pattern, keyword, pointer, limits, (lx.json_char if char is None else char,))[0]


def pattern_contents(pattern: str, keyword: str, pointer: str | None, limits: Limits,
                     chars: Sequence[Callable[[cs.CharSet], d.Expr]]) -> list[d.Expr]:
    """:func:`pattern_content` in each spelling of ``chars``, the pattern read once."""
    if not isinstance(pattern, str):
        raise SchemaError(f"{keyword} must be a string, got {pattern!r}", pointer=pointer)
    built = _LIBRARY.get(pattern)
    if built is not None:
        key = tuple(chars)
        found = built.get(key)
        if found is None:
            found = built[key] = _contents(pattern, keyword, pointer, _LIBRARY_LIMITS, key)
        return list(found)
    return _contents(pattern, keyword, pointer, limits, chars)


def declare_library_pattern(pattern: str) -> None:
    """Declare ``pattern`` a fixed text the library writes into schemas (never user input):
    its contents are then built once per process (see the module docstring).

    >>> declare_library_pattern("^doctest [0-9]{4}$")
    >>> a = pattern_content("^doctest [0-9]{4}$", "pattern", None, Limits())
    >>> a is pattern_content("^doctest [0-9]{4}$", "pattern", None, Limits())
    True
    """
    _LIBRARY.setdefault(pattern, {})


def _contents(pattern: str, keyword: str, pointer: str | None, limits: Limits,
              chars: Sequence[Callable[[cs.CharSet], d.Expr]]) -> list[d.Expr]:
    options: list[list[d.Expr]] = [[] for _ in chars]
    for text, offset, anchored_start, anchored_end in _split_top_level(pattern, 0):
        translated, sources = _translate(text, range(offset, offset + len(text) + 1), pattern, keyword, pointer)
        try:
            node = ast.parse_regex(_ASCII + translated if translated else "", limits)
        except (Unsupported, InvalidSyntax) as error:
            span = _source_span(error.span, sources, offset + len(text))
            if isinstance(error, Unsupported):
                raise Unsupported(keyword, error.keyword, text=pattern, span=span, pointer=pointer) from None
            raise SchemaError(f"invalid {keyword}: {error.message}", text=pattern, span=span,
                              pointer=pointer) from None
        for char, found in zip(chars, options):
            expr = lower_chars(node, char)
            anything = d.repeat(char(cs.ANY), 0, d.UNBOUNDED)
            if not anchored_start:
                expr = d.concat(anything, expr)
            if not anchored_end:
                expr = d.concat(expr, anything)
            found.append(expr)
    return [d.alternation(*found) for found in options]


def _split_top_level(pattern: str, base: int) -> list[tuple[str, int, bool, bool]]:
    """Top-level alternatives of ``pattern``, each with its ``^`` / ``$`` stripped, and the
    offset of each in the whole pattern (``pattern`` starts at ``base`` in it)."""
    options: list[tuple[str, int]] = []
    depth, in_class, start, i = 0, False, 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if pattern.startswith("[^]", i) or pattern.startswith("[]", i):
                i += 1  # ECMA: "[]" / "[^]" close at once; the translator rewrites them
                if pattern[i] == "^":
                    i += 1
                in_class = False
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            options.append((pattern[start:i], base + start))
            start = i + 1
        i += 1
    options.append((pattern[start:], base + start))
    result = []
    for option, offset in options:
        anchored_start = option.startswith("^")
        if anchored_start:
            option = option[1:]
            offset += 1
        anchored_end = option.endswith("$") and not _escaped(option, len(option) - 1)
        if anchored_end:
            option = option[:-1]
        begin = _whole_group(option)
        inner = option[begin:-1] if begin is not None else ""
        if begin is not None and ("^" in inner or "$" in inner):
            # "(^a|b$)" or "^(a$)": the group is the whole option, so its alternatives are
            # top-level alternatives, each with its own anchors
            for text, at, start_anchor, end_anchor in _split_top_level(inner, offset + begin):
                result.append((text, at, anchored_start or start_anchor, anchored_end or end_anchor))
            continue
        result.append((option, offset, anchored_start, anchored_end))
    return result


def _whole_group(text: str) -> int | None:
    """Where the content of ``text`` starts when ``text`` is exactly one group ``(...)``,
    ``(?:...)`` or ``(?<name>...)`` / ``(?P<name>...)`` with nothing after it (the content
    ends before the last character); otherwise None."""
    if not text.startswith("("):
        return None
    if text.startswith("(?:"):
        begin = 3
    elif text.startswith("(?P<") or (text.startswith("(?<") and text[3:4] not in ("=", "!")):
        begin = text.find(">") + 1
        if begin == 0:
            return None
    elif text.startswith("(?"):
        return None
    else:
        begin = 1
    depth, in_class, i = 0, False, 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return begin if i == len(text) - 1 else None
        i += 1
    return None


def _escaped(text: str, index: int) -> bool:
    count = 0
    while index - 1 - count >= 0 and text[index - 1 - count] == "\\":
        count += 1
    return count % 2 == 1


def _source_span(span: tuple[int, int] | None, sources: list[tuple[int, int]], end: int) -> tuple[int, int]:
    """The span in the whole pattern of ``span``, a span in ``_ASCII + translated`` (the text
    :func:`ast.parse_regex` saw); ``sources[k]`` is where the ``k``-th translated character
    came from, ``end`` where the alternative ends."""
    if span is None or not sources:
        return (end, end)
    low = min(max(span[0] - len(_ASCII), 0), len(sources))
    high = min(max(span[1] - len(_ASCII), low), len(sources))
    start = sources[low][0] if low < len(sources) else end
    stop = sources[high - 1][1] if high > low else start
    return (start, max(start, stop))


def _translate(text: str, positions: Sequence[int], whole: str, keyword: str,
               pointer: str | None) -> tuple[str, list[tuple[int, int]]]:
    """ECMA-262 regex syntax -> Python ``re`` syntax with the same meaning (under ``(?a)``),
    and for each character of the result the span in ``whole`` it came from. ``positions[k]``
    is the index in ``whole`` of ``text[k]`` (one more entry: where ``text`` ends); ``whole``
    is the value of ``keyword`` at ``pointer``, for errors."""
    out: list[str] = []
    sources: list[tuple[int, int]] = []  # one per item of out
    in_class = False
    i = begin = 0
    n = len(text)

    def source(stop: int) -> tuple[int, int]:  # the span in ``whole`` of text[begin:stop]
        return positions[begin], positions[stop - 1] + 1 if stop > begin else positions[begin]

    def settle(stop: int) -> None:  # the items added since ``begin`` came from text[begin:stop]
        sources.extend([source(stop)] * (len(out) - len(sources)))

    def refuse(feature: str, stop: int) -> Unsupported:
        return Unsupported(keyword, feature, text=whole, span=source(stop), pointer=pointer)

    def invalid(message: str, stop: int) -> SchemaError:
        return SchemaError(f"invalid {keyword}: {message}", text=whole, span=source(stop), pointer=pointer)

    while i < n:
        settle(i)
        begin = i
        c = text[i]
        if c == "\\":
            if i + 1 >= n:
                raise invalid("trailing backslash", n)
            e = text[i + 1]
            i += 2
            if e == "s":
                out.append(_ECMA_SPACE if in_class else "[" + _ECMA_SPACE + "]")
            elif e == "S":
                if in_class:
                    raise refuse("\\S inside a character class", i)
                out.append("[^" + _ECMA_SPACE + "]")
            elif e in "dDwWbBnrtfv":
                out.append("\\" + e)
            elif e == "c" and i < n and text[i].isalpha():
                out.append("\\x%02x" % (ord(text[i]) % 32))
                i += 1
            elif e == "u" and i < n and text[i] == "{":
                end = text.find("}", i)
                if end < 0:
                    raise invalid("bad \\u{...}", n)
                out.append("\\U%08x" % int(text[i + 1:end], 16))
                i = end + 1
            elif e == "u":
                out.append("\\u" + text[i:i + 4])
                i += 4
            elif e == "x":
                out.append("\\x" + text[i:i + 2])
                i += 2
            elif e == "0" and not (i < n and text[i].isdigit()):
                out.append("\\x00")
            elif e in "pP":
                raise refuse(f"Unicode property escape \\{e}", i)
            elif e == "k":
                raise refuse("backreference", i)
            elif e.isdigit():
                if in_class:
                    raise refuse(f"escape \\{e} in a class", i)
                raise refuse("backreference", i)
            elif e.isalnum():
                raise invalid(f"unknown escape \\{e}", i)
            else:
                out.append("\\" + e)
            continue
        if in_class:
            if c == "]":
                in_class = False
            elif c == "[":
                out.append("\\[")
                i += 1
                continue
            out.append(c)
            i += 1
            continue
        if c == "[":
            if text.startswith("[^]", i):
                out.append("[\\s\\S]")
                i += 3
                continue
            if text.startswith("[]", i):
                raise refuse("empty class []", i + 2)
            split = _split_non_space_class(text, i)
            if split is not None:  # [..\S..]: a union of the rest of the class and \S
                rest, kept, end = split
                parts = ["[^" + _ECMA_SPACE + "]"]
                if rest:
                    inner = [positions[i]] + [positions[k] for k in kept] + [positions[end - 1], positions[end]]
                    parts.insert(0, _translate("[" + rest + "]", inner, whole, keyword, pointer)[0])
                out.append("(?:" + "|".join(parts) + ")")
                i = end
                continue
            in_class = True
            out.append(c)
            i += 1
            if i < n and text[i] == "^":
                out.append("^")
                i += 1
            if i < n and text[i] == "]":
                raise refuse("empty class []", i + 1)
            continue
        if c == ".":
            out.append(_DOT)
        elif text.startswith("(?<", i) and not text.startswith("(?<=", i) and not text.startswith("(?<!", i):
            out.append("(?P<")
            i += 3
            continue
        else:
            out.append(c)
        i += 1
    settle(i)
    translated = "".join(out)
    return translated, [source for item, source in zip(out, sources) for _ in item]


def _split_non_space_class(text: str, start: int) -> tuple[str, list[int], int] | None:
    """For a non-negated class at ``start`` containing ``\\S``: (its body without the
    ``\\S`` items, the index in ``text`` of each character of that body, the index after the
    class). None for other classes."""
    if text.startswith("[^", start):
        return None
    i = start + 1
    body: list[str] = []
    kept: list[int] = []
    found = False
    first = True
    while i < len(text):
        c = text[i]
        if c == "]" and not first:
            return ("".join(body), kept, i + 1) if found else None
        first = False
        if c == "\\" and i + 1 < len(text):
            if text[i + 1] == "S":
                found = True
            else:
                body.append(text[i:i + 2])
                kept += (i, i + 1)
            i += 2
            continue
        body.append(c)
        kept.append(i)
        i += 1
    return None


def name_accepts(language: d.Expr, name: str) -> bool:
    """Whether the JSON string ``name`` (spelled as ``json.dumps`` does) is in ``language``
    (a whole-string language, quotes included); by closure under spelling, this decides
    membership of the string whatever its spelling."""
    if language is lx.ANY_STRING and name.isascii():  # (a non-ASCII name may hold a lone surrogate)
        return True
    node = language
    for byte in encode_basestring(name).encode("utf-8", "surrogatepass"):  # (json.dumps(name, ensure_ascii=False))
        node = d.derivative(node, byte)
        if node is d.NOTHING:
            return False
    return node.nullable

