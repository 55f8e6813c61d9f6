"""The one error tree of tokamata.

Invariants:
- Every exception tokamata raises on purpose derives from :class:`TokamataError`.
- Errors about user text (a regex, later a schema or grammar) carry the ``span`` of the
  offending characters as a half-open ``(start, end)`` pair of string indices, and the
  message quotes it.
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
]


class TokamataError(Exception):
    """Base class of every error tokamata raises."""


class _SpanError(TokamataError):
    """An error located in user-supplied text."""

    def __init__(self, message: str, text: str | None = None, span: tuple[int, int] | None = None):
        self.text = text
        self.span = span
        self.message = message
        super().__init__(self._render())

    def _render(self) -> str:
        if self.text is None or self.span is None:
            return self.message
        start, end = self.span
        snippet = self.text[start:end]
        if len(snippet) > 60:
            snippet = snippet[:57] + "..."
        return f"{self.message} at {start}..{end} ({snippet!r}) in {_shorten(self.text)!r}"


def _shorten(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


class InvalidSyntax(_SpanError):
    """The constraint text is malformed (e.g. an unbalanced parenthesis in a regex)."""


class Unsupported(_SpanError):
    """The constraint uses a feature tokamata cannot enforce exactly (e.g. a backreference).

    ``feature`` names it; ``span`` says where it is.
    """

    def __init__(self, feature: str, text: str | None = None, span: tuple[int, int] | None = None):
        self.feature = feature
        super().__init__(f"unsupported: {feature}", text, span)


class SchemaError(TokamataError):
    """A JSON Schema is malformed or uses a keyword that cannot be enforced."""


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
