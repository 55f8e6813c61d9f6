"""Spelling a Python regex in GBNF and in JSON Schema's ECMA-262 ``pattern`` dialect, for tests.

Used to replay the regex case table (``regex_cases.TABLE``) through the GBNF and JSON Schema
front ends. The translation reads the pattern with Python's own regex parser (``re._parser``),
not tokamata's, so a bug in tokamata's regex front end cannot hide in both sides.

Invariants:
- ``to_gbnf(p)`` / ``to_ecma(p)`` return text whose language (as a whole-string match) is
  exactly ``re.fullmatch(p, ...)``'s, or None when ``p`` uses a construct whose meaning differs
  between the dialects or that the other dialect cannot spell: case-insensitivity, character
  categories (``\\d \\w \\s``: Unicode in Python, ASCII in ECMA-262), anchors, backreferences,
  lookarounds, conditionals.
- Lazy and greedy repetitions are the same language (whole-string match), so both translate.
- Every character is spelled by its code point (``\\UXXXXXXXX`` in GBNF; ``\\uXXXX`` or the
  character itself in ECMA-262), so no escaping rule of either dialect is involved.
"""

from __future__ import annotations

import re
import re._constants as C  # noqa: N812
import re._parser as sre

__all__ = ["to_gbnf", "to_ecma"]

_MAXREPEAT = C.MAXREPEAT


class _Untranslatable(Exception):
    pass


def _gbnf_char(code: int) -> str:
    return f"\\U{code:08X}"


def _ecma_char(code: int) -> str:
    if chr(code).isalnum() and code < 0x80:
        return chr(code)
    if code < 0x10000 and not 0xD800 <= code <= 0xDFFF:
        return f"\\u{code:04X}"
    return chr(code)  # astral: the character itself (one code point in a JSON string)


def _class_items(items, char) -> tuple[bool, list[str]]:
    negated, parts = False, []
    for op, av in items:
        if op is C.NEGATE:
            negated = True
        elif op is C.LITERAL:
            parts.append(char(av))
        elif op is C.RANGE:
            parts.append(f"{char(av[0])}-{char(av[1])}")
        else:  # CATEGORY and the rest
            raise _Untranslatable(op)
    return negated, parts


def _translate(tokens, flags: int, dialect: str) -> str:
    char = _gbnf_char if dialect == "gbnf" else _ecma_char
    out = []
    for op, av in tokens:
        if op is C.LITERAL:
            out.append(f'"{char(av)}"' if dialect == "gbnf" else char(av))
        elif op is C.NOT_LITERAL:
            out.append(f"[^{char(av)}]")
        elif op is C.ANY:
            if flags & re.DOTALL:
                out.append("." if dialect == "gbnf" else "[\\s\\S]")
            else:
                out.append(f"[^{char(10)}]")
        elif op is C.IN:
            negated, parts = _class_items(av, char)
            out.append(("[^" if negated else "[") + "".join(parts) + "]")
        elif op is C.BRANCH:
            options = [_translate(option, flags, dialect) for option in av[1]]
            empty = '""' if dialect == "gbnf" else ""
            out.append("(" + " | ".join(o or empty for o in options) + ")" if dialect == "gbnf"
                       else "(?:" + "|".join(options) + ")")
        elif op is C.SUBPATTERN:
            _group, add, remove, inner = av
            if add & re.IGNORECASE:
                raise _Untranslatable("(?i)")
            body = _translate(inner, (flags | add) & ~remove, dialect)
            out.append(f"({body or chr(34) * 2})" if dialect == "gbnf" else f"(?:{body})")
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
            low, high, inner = av
            body = _translate(inner, flags, dialect)
            if not body:
                continue
            if (low, high) == (0, _MAXREPEAT):
                suffix = "*"
            elif (low, high) == (1, _MAXREPEAT):
                suffix = "+"
            elif (low, high) == (0, 1):
                suffix = "?"
            elif high == _MAXREPEAT:
                suffix = f"{{{low},}}"
            else:
                suffix = f"{{{low},{high}}}"
            out.append(f"({body}){suffix}" if dialect == "gbnf" else f"(?:{body}){suffix}")
        else:  # AT (anchors), GROUPREF, ASSERT, ASSERT_NOT, GROUPREF_EXISTS, ...
            raise _Untranslatable(op)
    return " ".join(out) if dialect == "gbnf" else "".join(out)


def _parsed(pattern: str):
    tree = sre.parse(pattern)
    flags = tree.state.flags
    if flags & (re.IGNORECASE | re.ASCII | re.LOCALE):
        raise _Untranslatable("flags")
    return tree, flags


def _spelled(pattern: str, dialect: str) -> str | None:
    try:
        tree, flags = _parsed(pattern)
        return _translate(list(tree), flags, dialect)
    except _Untranslatable:
        return None


def to_gbnf(pattern: str) -> str | None:
    """``root ::= ...`` matching exactly what ``re.fullmatch(pattern, s)`` matches, or None."""
    body = _spelled(pattern, "gbnf")
    return None if body is None else f"root ::= {body or chr(34) * 2}"


def to_ecma(pattern: str) -> str | None:
    """An anchored ECMA-262 pattern matching exactly what ``re.fullmatch`` matches, or None."""
    body = _spelled(pattern, "ecma")
    return None if body is None else f"^(?:{body})$"
