"""The one error tree of tokamata, and where each error is.

Invariants:
- Every exception tokamata raises on purpose derives from :class:`TokamataError`.
- Where an error is, is data: every error has these attributes, ``None`` where they do not
  apply, and no raiser writes them into its message.

  - ``text``: the user text ``span`` indexes into: a regex, a grammar, a JSON Schema
    ``pattern``, or a schema's JSON text that does not parse.
  - ``span``: the offending characters of ``text``, a half-open ``(start, end)`` pair of
    string indices.
  - ``line``, ``column``: 1-based (columns in characters), where in a grammar (Lark, GBNF, or
    the ``origin`` of a grammar IR's rule or terminal).
  - ``pointer``: where in a JSON Schema, a JSON pointer (RFC 6901; ``""`` is the root,
    ``uri#/...`` is inside a document of the registry): the schema whose keyword is at fault,
    or the keyword's value where the value itself is (a ``$ref``, a ``pattern``).

  - ``path``: where in a Python type given to :func:`tokamata.compile_type`, written as
    ``Order.items[].sku`` (``[]`` an item of a sequence or set, ``[0]`` a position of a fixed
    tuple, ``{}`` a value of a dict, ``|1`` the second option of a union); for a
    :class:`ParseError`, where in the value being built.

  - ``index``: where in a batch: the position, in the list of matchers given to a batch call
    (:func:`tokamata.consume_tokens`), of the matcher the error came from.

  A schema embedded with ``%json`` in a Lark grammar gives both: ``pointer`` inside the
  schema, and ``line``, ``column`` and ``span`` of the ``%json`` in the grammar ``text``.
- ``message`` says what is wrong, never where; ``str(error)`` is the message with the place
  rendered from the attributes above, by :meth:`TokamataError.__str__` alone.
- :class:`Unsupported` names what cannot be enforced: ``keyword`` (a JSON Schema keyword
  such as ``"uniqueItems"``, a regex feature such as ``"backreference"``, a grammar construct
  such as ``"%declare"``; ``feature`` is its older name) and ``reason``, why (may be empty).
  :class:`LimitExceeded` names the ``limit`` (a field of :class:`tokamata.Limits`), the
  ``value`` reached and the ``bound``.
- Errors pickle with all their attributes (a server may send them across processes).
- Errors about arguments (bad token ids, wrong buffer shapes) are :class:`InvalidArgument`,
  which is also a ``ValueError`` so generic callers can catch them as such.
"""

from __future__ import annotations

__all__ = [
    "TokamataError",
    "InvalidSyntax",
    "Unsupported",
    "SchemaError",
    "LimitExceeded",
    "VocabularyError",
    "InvalidArgument",
    "InvalidType",
    "ParseError",
]

Span = tuple[int, int]


class TokamataError(Exception):
    """Base class of every error tokamata raises: ``message`` and where (``text``, ``span``,
    ``line``, ``column``, ``pointer``, ``path``, ``index``; see the module docstring)."""

    index: int | None = None  # (a class default: errors pickled before it existed unpickle too)

    def __init__(self, message: str = "", *, text: str | None = None, span: Span | None = None,
                 line: int | None = None, column: int | None = None, pointer: str | None = None,
                 path: str | None = None, index: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = path
        self.index = index
        self.text = text
        self.span = span
        self.line = line
        self.column = column
        self.pointer = pointer

    def __str__(self) -> str:
        subject, detail = self._subject_and_detail()
        where = ""
        if self.pointer is not None:
            where = f" at {self.pointer or '/'}"
        if self.path is not None:
            where += f" in {self.path}"
        if self.index is not None:
            where += f" (batch entry {self.index})"
        place = ""
        if self.line is not None:
            in_json = "in %json at " if self.pointer is not None else ""
            place = f" ({in_json}line {self.line}, column {self.column})"
        if self.text is not None and self.span is not None:
            start, end = self.span
            snippet = self.text[start:end]
            if len(snippet) > 60:
                snippet = snippet[:57] + "..."
            place += f" at {start}..{end} ({snippet!r}) in {_shorten(self.text)!r}"
        return f"{subject}{where}{detail}{place}"

    def _subject_and_detail(self) -> tuple[str, str]:
        """``message`` cut in two: the pointer is rendered between them."""
        return self.message, ""

    def __reduce__(self):
        return _rebuild, (type(self), self.args, dict(self.__dict__))


def _rebuild(cls: type[TokamataError], args: tuple, state: dict) -> TokamataError:
    """Unpickle an error: its attributes as they were, without calling ``__init__`` (whose
    parameters differ between classes)."""
    error = cls.__new__(cls, *args)
    error.__dict__.update(state)
    return error


def _shorten(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


class InvalidSyntax(TokamataError):
    """The constraint text is malformed (e.g. an unbalanced parenthesis in a regex)."""


class Unsupported(TokamataError):
    """The constraint uses something tokamata cannot enforce exactly (e.g. a backreference):
    ``keyword`` names it, ``reason`` says why (may be empty)."""

    def __init__(self, keyword: str, reason: str = "", *, text: str | None = None, span: Span | None = None,
                 line: int | None = None, column: int | None = None, pointer: str | None = None,
                 path: str | None = None):
        self.keyword = keyword
        self.reason = reason
        super().__init__(f"unsupported: {keyword}" + (f": {reason}" if reason else ""), text=text, span=span,
                         line=line, column=column, pointer=pointer, path=path)

    @property
    def feature(self) -> str:
        """``keyword``, under its older name."""
        return self.keyword

    def _subject_and_detail(self) -> tuple[str, str]:
        return f"unsupported: {self.keyword}", f": {self.reason}" if self.reason else ""


class SchemaError(TokamataError):
    """A JSON Schema is malformed (a keyword of the wrong type, a dangling ``$ref``, ...) or
    allows no value."""


class LimitExceeded(TokamataError):
    """A bound from :class:`tokamata.Limits` was crossed.

    ``limit`` is the name of the field of ``Limits``; ``value`` the value reached.
    """

    def __init__(self, limit: str, value: object, bound: object):
        self.limit = limit
        self.value = value
        self.bound = bound
        super().__init__(f"limit {limit} exceeded: reached {value}, the bound is {bound} "
                         f"(raise it with tokamata.Limits({limit}=...))")


class VocabularyError(TokamataError):
    """A tokenizer or vocabulary cannot be read or is inconsistent."""


class InvalidArgument(TokamataError, ValueError):
    """An argument is out of range or of the wrong shape or type (token ids, bitmasks)."""


class InvalidType(TokamataError):
    """A Python type given to :func:`tokamata.compile_type` cannot be a constraint although
    every part of it is supported: a forward reference that does not resolve, a recursive
    type without a base case (no finite value), bounds that contradict each other
    (``ge=5, le=1``). ``path`` says where in the type."""


class ParseError(TokamataError):
    """Text given to ``Constraint.parse`` is not in the constraint's language, or does not
    build a value of its type. ``text`` is the text (decoded), ``span`` the offending
    characters (also :attr:`location`), ``path`` where in the value, when known."""

    @property
    def location(self) -> Span | None:
        """``span``: the half-open character range of ``text`` where parsing failed."""
        return self.span
