"""The JSON grammar of RFC 8259, as grammar IR: any JSON value, with bounded whitespace.

Invariants:
- Strings: any Unicode text except ``"``, ``\\`` and U+0000..U+001F, plus the escapes
  ``\\" \\\\ \\/ \\b \\f \\n \\r \\t`` and ``\\uXXXX`` with any four hex digits (so surrogate
  pairs, and lone surrogates, which RFC 8259's grammar allows). Numbers: ``-?int frac? exp?``.
  That is ``spelling="any"``; ``spelling="natural"`` (the default of ``compile_json``) keeps
  one spelling per value instead: strings and numbers as :mod:`.json_spelling` defines them.
- Whitespace (space, tab, LF, CR) may appear exactly where RFC 8259 allows it (around every
  structural character and around the value), at most ``max_whitespace`` characters in each
  such place; ``max_whitespace = 0`` is compact JSON.
- Built through :class:`~tokamata.grammar.builder.GrammarBuilder` (a character-level grammar,
  checked, within ``limits.max_grammar_symbols``) like every other front end's grammar.
"""

from __future__ import annotations

from ..automata import derivatives as d
from ..errors import InvalidArgument
from ..limits import Limits
from ..grammar.builder import GrammarBuilder
from ..grammar.ir import Grammar
from .json_spelling import NATURAL_NUMBER, NATURAL_STRING, check_spelling
from .regex import parse_regex
from .regex_lower import lower

__all__ = ["json_grammar", "whitespace_bound", "STRING_PATTERN", "NUMBER_PATTERN"]

STRING_PATTERN = r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"'
NUMBER_PATTERN = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"

#: whitespace characters allowed per place by ``whitespace="flexible"``
FLEXIBLE_WHITESPACE = 20


def whitespace_bound(whitespace) -> int:
    """``"compact"`` -> 0, ``"flexible"`` -> :data:`FLEXIBLE_WHITESPACE`, an int n >= 0 -> n."""
    if whitespace == "compact":
        return 0
    if whitespace == "flexible":
        return FLEXIBLE_WHITESPACE
    if isinstance(whitespace, int) and not isinstance(whitespace, bool) and 0 <= whitespace <= 10_000:
        return whitespace
    raise InvalidArgument(f'whitespace must be "compact", "flexible" or an int in [0, 10000], got {whitespace!r}')


def _literal(text: str) -> d.Expr:
    return d.concat_all(d.byte_set(1 << b) for b in text.encode())


def json_grammar(limits: Limits, max_whitespace: int = 0, spelling: str = "any") -> Grammar:
    """Any JSON value (RFC 8259) with at most ``max_whitespace`` whitespace characters per
    place; strings and numbers in every spelling (``spelling="any"``) or in natural spelling
    only (``"natural"``, :mod:`.json_spelling`).

    >>> g = json_grammar(Limits())
    >>> g.nonterminals[g.start]
    'json'
    """
    if check_spelling(spelling) == "natural":
        string, number = NATURAL_STRING, NATURAL_NUMBER
    else:
        string, number = lower(parse_regex(STRING_PATTERN, limits)), lower(parse_regex(NUMBER_PATTERN, limits))
    b = GrammarBuilder("", limits, character_level=True)
    t = {"STRING": b.terminal("STRING", string), "NUMBER": b.terminal("NUMBER", number)}
    for text in ("true", "false", "null", "{", "}", "[", "]", ",", ":"):
        t[text] = b.terminal(repr(text), _literal(text))
    n = {name: b.nonterminal(name) for name in ("json", "value", "object", "members", "member", "array",
                                                 "elements")}
    if max_whitespace:
        n["ws"] = b.nonterminal("ws")

    def rule(lhs: str, *rhs: str) -> None:
        b.add_rule(n[lhs], [n[item] if item in n else t[item] for item in rhs if item != "ws" or max_whitespace])

    rule("json", "ws", "value", "ws")
    for option in ("object", "array", "STRING", "NUMBER", "true", "false", "null"):
        rule("value", option)
    rule("object", "{", "ws", "}")
    rule("object", "{", "ws", "members", "ws", "}")
    rule("members", "member")
    rule("members", "members", "ws", ",", "ws", "member")
    rule("member", "STRING", "ws", ":", "ws", "value")
    rule("array", "[", "ws", "]")
    rule("array", "[", "ws", "elements", "ws", "]")
    rule("elements", "value")
    rule("elements", "elements", "ws", ",", "ws", "value")
    if max_whitespace:
        rule("ws")
        b.add_rule(n["ws"], [b.terminal("WS", d.repeat(d.byte_set(d.byte_mask(" \t\n\r")), 1, max_whitespace))])
    return b.build(n["json"])
