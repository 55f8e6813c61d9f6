"""Options of the schema compiler and the report of what it approximated.

Invariants:
- Every place where the compiled language differs from the schema's is a
  :class:`Approximation` in the :class:`Report`, with the JSON pointer of the keyword and a
  kind. Kinds that *widen* the language (``uniqueItems`` ignored, an unenforceable
  ``format`` ignored) happen only when the caller named them in ``approximate``; kinds that
  *narrow* it (``number-notation``: exponents not generated where bounds apply;
  ``integer-notation``: integral values of ``multipleOf``, alone or combined with ``not`` /
  ``oneOf`` / ``allOf``, spelled without a fraction, which keeps their automaton to its
  remainders; ``format-subset``) are always allowed and
  always reported. ``spelling`` (``spelling="natural"``, the default: one spelling per value,
  :mod:`..json_spelling`) narrows spellings, never values, and is reported once at ``/``; it
  subsumes ``number-notation`` and ``integer-notation``, which are then not reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import FrozenSet

from ...errors import InvalidArgument
from ..json_spelling import check_spelling

__all__ = ["Approximation", "Report", "Options", "APPROXIMATIONS"]

#: approximations a caller may opt into, by name
APPROXIMATIONS = frozenset({"uniqueItems", "format", "pretty-depth"})


@dataclass(frozen=True)
class Approximation:
    """``kind`` at ``pointer`` (a JSON pointer into the schema): ``detail`` says what."""

    kind: str
    pointer: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} at {self.pointer or '/'}: {self.detail}"


@dataclass
class Report:
    """What the compiled grammar enforces differently from the schema."""

    approximations: list[Approximation] = field(default_factory=list)
    _seen: set[Approximation] = field(default_factory=set, repr=False, compare=False)

    def add(self, kind: str, pointer: str, detail: str) -> None:
        item = Approximation(kind, pointer, detail)
        if item not in self._seen:  # (a set: a long enum adds one per member)
            self._seen.add(item)
            self.approximations.append(item)

    def __iter__(self):
        return iter(self.approximations)

    def __len__(self) -> int:
        return len(self.approximations)

    def __str__(self) -> str:
        if not self.approximations:
            return "exact"
        return "\n".join(str(a) for a in self.approximations)


@dataclass(frozen=True)
class Options:
    whitespace: str = "compact"
    strict: bool = False
    approximate: FrozenSet[str] = frozenset()
    ignore_unknown_formats: bool = False
    property_order: str = "schema"
    indent: int = 2
    max_whitespace: int = 20
    spelling: str = "natural"

    @property
    def natural(self) -> bool:
        return self.spelling == "natural"

    def __post_init__(self) -> None:
        check_spelling(self.spelling)
        if self.whitespace not in ("compact", "flexible", "pretty"):
            raise InvalidArgument(f"whitespace must be 'compact', 'flexible' or 'pretty', got {self.whitespace!r}")
        if self.property_order not in ("schema", "any"):
            raise InvalidArgument(f"property_order must be 'schema' or 'any', got {self.property_order!r}")
        unknown = set(self.approximate) - APPROXIMATIONS
        if unknown:
            raise InvalidArgument(f"unknown approximations {sorted(unknown)}; known: {sorted(APPROXIMATIONS)}")
        if not isinstance(self.indent, int) or isinstance(self.indent, bool) or self.indent < 0:
            raise InvalidArgument(f"indent must be a non-negative int, got {self.indent!r}")
        if not isinstance(self.max_whitespace, int) or isinstance(self.max_whitespace, bool) \
                or not 1 <= self.max_whitespace <= 10_000:  # (as compile_json's whitespace bound)
            raise InvalidArgument(f"max_whitespace must be an int in [1, 10000], got {self.max_whitespace!r}")
