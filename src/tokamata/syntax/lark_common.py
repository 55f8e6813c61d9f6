"""Our definitions of the terminals of Lark's ``common.lark`` (``%import common.X``).

Invariant: each expression matches exactly the lexemes Lark's lexers can produce for the
terminal of the same name, i.e. the strings ``s`` for which ``re.match(lark_regex, s)``
consumes all of ``s`` (tests/unit/test_lark_front_end.py checks this by sampling). For the
greedy terminals that is ``re.fullmatch``. Two of Lark's definitions use lazy quantifiers,
and there Lark's lexers always take the shortest match, so:

- ``ESCAPED_STRING`` is a double-quoted string on one line whose inner double quotes are
  escaped by an odd run of backslashes and whose last backslash run is even (``"a\\"b"``);
  ``"a"b"`` is not one lexeme, as in Lark.
- ``C_COMMENT`` is ``/*`` followed by text up to and including the first ``*/``.

The regexes are written here in our own words (``.`` never appears: Python's ``.`` excludes
only ``\\n``, which ``[^\\n]`` says explicitly).
"""

from __future__ import annotations

from ..automata import derivatives as d
from .regex_lower import lower
from ..limits import Limits
from .regex import parse_regex

__all__ = ["COMMON_TERMINALS", "common_terminal"]

_EXP = r"[eE][+-]?[0-9]+"
_DECIMAL = r"[0-9]+\.[0-9]*|\.[0-9]+"
_FLOAT = rf"[0-9]+{_EXP}|(?:{_DECIMAL})(?:{_EXP})?"
_NUMBER = rf"{_FLOAT}|[0-9]+"

_REGEXES: dict[str, str] = {
    "DIGIT": r"[0-9]",
    "HEXDIGIT": r"[a-fA-F0-9]",
    "INT": r"[0-9]+",
    "SIGNED_INT": r"[+-]?[0-9]+",
    "DECIMAL": _DECIMAL,
    "_EXP": _EXP,
    "FLOAT": _FLOAT,
    "SIGNED_FLOAT": rf"[+-]?(?:{_FLOAT})",
    "NUMBER": _NUMBER,
    "SIGNED_NUMBER": rf"[+-]?(?:{_NUMBER})",
    "ESCAPED_STRING": r'"(?:[^"\\\n]|\\[^\n])*"',
    "LCASE_LETTER": r"[a-z]",
    "UCASE_LETTER": r"[A-Z]",
    "LETTER": r"[A-Za-z]",
    "WORD": r"[A-Za-z]+",
    "CNAME": r"[_A-Za-z][_A-Za-z0-9]*",
    "WS_INLINE": r"[ \t]+",
    "WS": r"[ \t\f\r\n]+",
    "CR": r"\r",
    "LF": r"\n",
    "NEWLINE": r"(?:\r?\n)+",
    "SH_COMMENT": r"#[^\n]*",
    "CPP_COMMENT": r"//[^\n]*",
    "SQL_COMMENT": r"--[^\n]*",
}

#: Names ``%import common.X`` accepts.
COMMON_TERMINALS: frozenset[str] = frozenset(_REGEXES) | {"C_COMMENT"}


def common_terminal(name: str, limits: Limits) -> d.Expr:
    """The byte expression of common terminal ``name`` (one of :data:`COMMON_TERMINALS`)."""
    if name == "C_COMMENT":
        return d.concat(d.concat_all(d.byte_set(1 << b) for b in b"/*"), d.text_until(b"*/"))
    return lower(parse_regex(_REGEXES[name], limits))
