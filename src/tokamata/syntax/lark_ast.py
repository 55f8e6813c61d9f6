"""The Lark front end's AST: statements with EBNF bodies, each node with its source span, and the
grammar text (:class:`Source`) that turns spans into line/column and located errors.

Invariants:
- Nodes are NamedTuples (immutable, one built per item of the grammar: ~3x cheaper than a
  frozen dataclass; tuples, so tell them apart by type, not by ``==`` alone); every node's
  ``span`` is a pair of character offsets into :attr:`Source.text`, and every decoded literal
  character remembers its own offset.
- ``Repeat.max`` is :data:`UNBOUNDED` for an open repetition.
- Errors made by :class:`Source` carry ``text``, ``span``, ``line`` and ``column`` (1-based, of
  the span's start).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import NamedTuple, Union

from ..errors import InvalidSyntax, Unsupported

__all__ = ["Span", "UNBOUNDED", "Source", "Literal", "Range", "Ref", "Special", "TextUntil", "Extension", "Json",
           "Seq", "Alt", "Repeat", "Node", "Definition", "Ignore", "Import", "Statement"]

Span = tuple[int, int]
UNBOUNDED = -1


class Source:
    """The grammar text with offset -> (line, column) and located errors."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def origin(self, offset: int) -> tuple[int, int]:
        line = bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    def where(self, span: Span) -> str:
        """``line L, column C`` of ``span``, for a message naming a second place."""
        line, column = self.origin(span[0])
        return f"line {line}, column {column}"

    def error(self, message: str, span: Span) -> InvalidSyntax:
        line, column = self.origin(span[0])
        return InvalidSyntax(message, text=self.text, span=span, line=line, column=column)

    def unsupported(self, keyword: str, reason: str, span: Span) -> Unsupported:
        line, column = self.origin(span[0])
        return Unsupported(keyword, reason, text=self.text, span=span, line=line, column=column)


# ------------------------------------------------------------------------------- the AST


class Literal(NamedTuple):
    """``"..."`` (``is_regex`` False) or ``/.../``: ``value`` decoded as Lark does, ``flags`` as
    written, ``offsets[i]`` the source offset of ``value[i]``."""
    span: Span
    raw: str
    value: str
    flags: str
    is_regex: bool
    offsets: tuple[int, ...]


class Range(NamedTuple):
    """``"a".."z"``: Lark builds the regex ``[a-z]`` from the literals' raw contents."""
    span: Span
    raw: str
    low: str
    high: str


class Ref(NamedTuple):
    """A rule (lowercase) or terminal (uppercase) name."""
    span: Span
    name: str

    @property
    def is_rule(self) -> bool:
        return not self.name.lstrip("_")[:1].isupper()


class Special(NamedTuple):
    """``<|name|>`` (``name`` set) or ``<[ids]>`` (``ids`` set): a special token."""
    span: Span
    raw: str
    name: str | None
    ids: tuple[int, ...]


class TextUntil(NamedTuple):
    """``%text_until "X"``: text without X, then X."""
    span: Span
    raw: str
    stop: Literal


class Extension(NamedTuple):
    """A seed 000 extension (:mod:`.extensions`): ``%text_token``, ``%paragraph_token``,
    ``%quoted_text``, ``%unquoted_text``, ``%image`` (no argument), ``%substring_of "text"``
    (``argument``), ``%delimited_list(item, delimiter[, min[, max]])`` (``items`` holds the
    item) and ``%delimited_subsequence_of([a, b, ...], delimiter)``."""
    span: Span
    name: str  # the extension's name in capitals (TEXT_TOKEN, ...)
    argument: "Literal | None" = None
    items: tuple["Node", ...] = ()
    delimiter: "Node | None" = None
    low: int = 1
    high: int = -1


class Json(NamedTuple):
    """``%json {...}``: a JSON Schema (already ``json.loads``-ed); ``%json any {...}`` or
    ``%json natural {...}`` (the default) names its spelling."""
    span: Span
    schema: object
    spelling: str = "natural"


class Seq(NamedTuple):
    span: Span
    items: tuple["Node", ...]


class Alt(NamedTuple):
    span: Span
    options: tuple["Node", ...]


class Repeat(NamedTuple):
    """``item`` ``low``..``high`` times (``high == UNBOUNDED``: no bound)."""
    span: Span
    item: "Node"
    low: int
    high: int


Node = Union[Literal, Range, Ref, Special, TextUntil, Extension, Json, Seq, Alt, Repeat]


class Definition(NamedTuple):
    """``name: body`` (rule or terminal); ``mode`` is "define", "override" or "extend"."""
    span: Span  # the name
    name: str
    is_rule: bool
    body: Node
    mode: str


class Ignore(NamedTuple):
    span: Span
    body: Node


class Import(NamedTuple):
    """``%import common...``: ``names`` are (name in common.lark, local name, span)."""
    span: Span
    names: tuple[tuple[str, str, Span], ...]


Statement = Union[Definition, Ignore, Import]
