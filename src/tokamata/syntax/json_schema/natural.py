"""The natural spellings (:mod:`tokamata.syntax.json_spelling`) of the schema compiler's
string and number languages.

Invariants:
- :meth:`Naturalizer.string` of a string language closed under spelling (every language the
  compiler builds from :func:`~.lexemes.json_char`) is exactly its natural spellings: the
  language intersected with :data:`~tokamata.syntax.json_spelling.NATURAL_STRING`. It keeps
  the language's shape instead of adding an intersection node: raw characters are natural as
  they are, and every escape (a ``\\`` heading a concatenation, at a character boundary) is
  replaced by the natural escapes it allows, each followed by the natural spellings of what
  may follow it (the derivative by that escape). So a content like ``[^x]{0,40}`` stays a
  repetition of one character class, which the vocabulary slices' text-depth analysis
  (:mod:`tokamata.automata.analysis`) reads: an intersection node would hide it, and every
  mask over free text would lose the sliced path. Alternatives, repetitions, intersections and
  differences are taken member by member (each member starts at a character boundary, and
  ``(A op B) & N == (A & N) op (B & N)``). A node of any other shape (none is expected) makes
  the whole language fall back to the plain intersection, which is exact too.
- :meth:`Naturalizer.number` is the number language intersected with
  :data:`~tokamata.syntax.json_spelling.NATURAL_NUMBER` (the languages of :mod:`.numbers` are
  closed under plain spelling), with shortcuts for the unbounded languages.
- Results are kept per expression for one compile (one :class:`Naturalizer` per emitter).
"""

from __future__ import annotations

from ...automata import boolean
from ...automata import derivatives as d
from ...limits import Limits
from ..json_spelling import NATURAL_INTEGER, NATURAL_NUMBER, NATURAL_STRING
from . import lexemes as lx

__all__ = ["Naturalizer", "NATURAL_ESCAPES"]

_SHORT = {0x08: "b", 0x09: "t", 0x0A: "n", 0x0C: "f", 0x0D: "r", 0x22: '"', 0x5C: "\\"}
#: what follows the backslash of each natural escape
NATURAL_ESCAPES: tuple[bytes, ...] = tuple(sorted(
    _SHORT[c].encode() if c in _SHORT else f"u{c:04x}".encode() for c in list(range(0x20)) + [0x22, 0x5C]))
_BACKSLASH_BIT = d.byte_mask("\\")
_BACKSLASH = d.byte_set(_BACKSLASH_BIT)
_ESCAPE_LITERALS = tuple(lx.literal(b"\\" + word) for word in NATURAL_ESCAPES)


class _Irregular(Exception):
    """A node the shape-keeping rewrite does not know (the caller intersects instead)."""


class Naturalizer:
    """Natural spellings of one compile's languages (memoized by expression)."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self._strings: dict[int, d.Expr] = {}  # content expression id -> natural spellings
        self._numbers: dict[int, d.Expr] = {}

    def number(self, number: d.Expr) -> d.Expr:
        """The natural spellings in ``number`` (a language closed under plain spelling)."""
        if number is d.NOTHING:
            return number
        if number is lx.NUMBER:
            return NATURAL_NUMBER
        if number is lx.INTEGER or number is lx.INTEGER_DRAFT4:
            return NATURAL_INTEGER
        found = self._numbers.get(number.id)
        if found is None:
            if number.kind == d.Kind.ALT:  # (one by one: each may have a shortcut)
                found = d.alternation(*(self.number(option) for option in number.args))
            else:
                found = boolean.intersection(number, NATURAL_NUMBER, limits=self.limits)
            self._numbers[number.id] = found
        return found

    def string(self, string: d.Expr) -> d.Expr:
        """The natural spellings in ``string`` (a language of whole JSON strings, quotes
        included, closed under spelling)."""
        if string is lx.ANY_STRING:
            return NATURAL_STRING
        try:
            return self._natural(string)
        except (_Irregular, RecursionError):
            return boolean.intersection(string, NATURAL_STRING, limits=self.limits)

    def _natural(self, node: d.Expr) -> d.Expr:
        """``node``, starting at a character boundary, in natural spelling."""
        found = self._strings.get(node.id)
        if found is not None:
            return found
        kind = node.kind
        if kind == d.Kind.CONCAT:
            return self._chain(node)
        if kind in (d.Kind.NOTHING, d.Kind.EPSILON, d.Kind.UTF8):
            found = node  # (a whole UTF-8 character class: raw characters are natural)
        elif kind == d.Kind.BYTES:
            if node.args[0] & _BACKSLASH_BIT:
                raise _Irregular("a backslash outside an escape")
            found = node
        elif kind == d.Kind.ALT:
            found = d.alternation(*(self._natural(member) for member in node.args))
        elif kind == d.Kind.REPEAT:
            item, low, high = node.args
            found = d.repeat(self._natural(item), low, high)
        elif kind == d.Kind.AND:
            found = boolean.intersection(*(self._natural(member) for member in node.args), limits=self.limits)
        elif kind == d.Kind.DIFF:
            found = boolean.difference(self._natural(node.args[0]), self._natural(node.args[1]), self.limits)
        else:
            raise _Irregular(f"expression kind {kind}")
        self._strings[node.id] = found
        return found

    def _chain(self, node: d.Expr) -> d.Expr:
        """A right-nested concatenation at a character boundary. Its links are walked from
        the start without recursion (a long key or constant is a long chain): a head is a
        whole character's spellings, or a backslash, whose escape is replaced by the natural
        escapes it allows; when all of them leave the same rest (one escaped character), the
        walk goes on there, else each rest is rewritten on its own. The pieces are then joined
        from the end."""
        pieces: list[tuple[int, d.Expr]] = []  # (id of a link at a boundary, its head made natural)
        link = node
        while link.kind == d.Kind.CONCAT and link.id not in self._strings:
            head, rest = link.args
            if head is not _BACKSLASH:
                pieces.append((link.id, self._natural(head)))
                link = rest
                continue
            escapes = self._escape_rests(rest)
            afters = {after.id for _, after in escapes}
            if len(afters) == 1:  # one escaped character, then the rest of the chain
                pieces.append((link.id, d.alternation(*(literal for literal, _ in escapes))))
                link = escapes[0][1]
                continue
            self._strings[link.id] = d.alternation(*(d.concat(literal, self._natural(after))
                                                     for literal, after in escapes))
            break
        tail = self._natural(link)
        for link_id, head in reversed(pieces):
            tail = d.concat(head, tail)
            self._strings[link_id] = tail
        return tail

    def _escape_rests(self, rest: d.Expr) -> list[tuple[d.Expr, d.Expr]]:
        """After a backslash: (natural escape with its backslash, what may follow it) for
        each natural escape ``rest`` begins with."""
        found = []
        for word, literal in zip(NATURAL_ESCAPES, _ESCAPE_LITERALS):
            after = rest
            for byte in word:
                after = d.derivative(after, byte)
                if after is d.NOTHING:
                    break
            if after is not d.NOTHING:
                found.append((literal, after))
        return found  # (none: the characters escaped here are written raw, elsewhere)
