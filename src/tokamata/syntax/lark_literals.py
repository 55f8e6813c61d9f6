"""Lark string and regex literals decoded exactly as Lark decodes them (its ``eval_escaping``
followed, for strings, by collapsing ``\\\\`` to ``\\``), quirks included, so that the same
literal means the same lexeme.

Invariants: every decoded character keeps the source offset it came from, so an error inside a
regex points into the grammar text; malformed escapes and empty literals raise
:class:`~tokamata.errors.InvalidSyntax` located by the :class:`~.lark_ast.Source`.
"""

from __future__ import annotations

from .lark_ast import Literal, Source, Span

__all__ = ["decode_literal", "escaping_length"]

_HEX = frozenset("0123456789abcdefABCDEF")


def decode_literal(raw: str, start: int, source: Source) -> Literal:
    """Decode a STRING or REGEXP token (``raw`` at offset ``start``) the way Lark does."""
    is_regex = raw[0] == "/"
    close = raw.rfind(raw[0])
    flags = raw[close + 1:]
    span = (start, start + len(raw))
    for f in flags:
        if f not in "imslux" or (f != "i" and not is_regex):
            raise source.error(f"unknown flag {f!r} (Lark's flags are {'imslux' if is_regex else 'i'})", span)
    if "l" in flags:
        raise source.error("regex flag 'l' is not a Python re flag (Lark rejects it too)", span)
    if not is_regex and "\n" in raw:  # pragma: no cover - the lexer stops strings at newlines
        raise source.error("newlines are not allowed in string literals", span)
    if is_regex and "\n" in raw and "x" not in flags:
        raise source.error("newlines in a regular expression need the x (verbose) flag", span)
    body_start = start + 1
    body = raw[1:close]
    if "\\" not in body:  # nothing to unescape: the characters as written (linear, at C speed)
        if not body:
            raise source.error("empty terminals are not allowed", span)
        return Literal(span, raw, body, flags, is_regex, tuple(range(body_start, body_start + len(body))))
    chars = _lark_unescape(body, body_start, source, span)
    if not is_regex:
        chars = _collapse_backslashes(chars)
    if not chars:
        raise source.error("empty terminals are not allowed", span)
    return Literal(span, raw, "".join(c for c, _ in chars), flags, is_regex, tuple(o for _, o in chars))


def _lark_unescape(body: str, base: int, source: Source, span: Span) -> list[tuple[str, int]]:
    """Lark's ``eval_escaping``, character by character with source offsets: protect every
    backslash except before ``\\`` / ``Uuxnftr``, drop the backslash of ``\\"``, then evaluate
    the Python escapes that remain."""
    staged: list[tuple[str, int]] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            staged.append((c, base + i))
            i += 1
            continue
        if i + 1 >= len(body):
            raise source.error("literal ends with a lone backslash", span)
        n2 = body[i + 1]
        staged.append(("\\", base + i))
        if n2 == "\\":
            staged += [("\\", base + i), ("\\", base + i)]
        elif n2 not in "Uuxnftr":
            staged.append(("\\", base + i))
        staged.append((n2, base + i + 1))
        i += 2
    merged: list[tuple[str, int]] = []  # Lark's w.replace('\\"', '"')
    k = 0
    while k < len(staged):
        if staged[k][0] == "\\" and k + 1 < len(staged) and staged[k + 1][0] == '"':
            merged.append(staged[k + 1])
            k += 2
        else:
            merged.append(staged[k])
            k += 1
    out: list[tuple[str, int]] = []  # Python's string-literal escapes
    k = 0
    while k < len(merged):
        c, offset = merged[k]
        if c != "\\" or k + 1 >= len(merged):
            out.append((c, offset))
            k += 1
            continue
        n2 = merged[k + 1][0]
        if n2 in "\\\"'":
            out.append((n2, offset))
            k += 2
        elif n2 in "nftr":
            out.append(({"n": "\n", "f": "\f", "t": "\t", "r": "\r"}[n2], offset))
            k += 2
        elif n2 in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[n2]
            digits = "".join(ch for ch, _ in merged[k + 2:k + 2 + width])
            if len(digits) < width or not set(digits) <= _HEX or int(digits, 16) > 0x10FFFF:
                end = merged[min(k + 1 + width, len(merged) - 1)][1] + 1
                raise source.error(f"bad \\{n2} escape (needs {width} hex digits)", (offset, end))
            out.append((chr(int(digits, 16)), offset))
            k += 2 + width
        else:  # pragma: no cover - every other backslash was protected above
            out.append((c, offset))
            k += 1
    return out


def _collapse_backslashes(chars: list[tuple[str, int]]) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []  # Lark's s.replace('\\\\', '\\') for strings
    k = 0
    while k < len(chars):
        out.append(chars[k])
        k += 2 if chars[k][0] == "\\" and k + 1 < len(chars) and chars[k + 1][0] == "\\" else 1
    return out


def escaping_length(content: str, start: int, source: Source, span: Span) -> int:
    """Length of ``content`` after Lark's ``eval_escaping`` (a range end must have length 1)."""
    return len(_lark_unescape(content, start, source, span)) if content else 0
