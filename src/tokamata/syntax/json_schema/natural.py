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
- :func:`natural_char` of a code point set is its natural spellings, built directly (raw UTF-8
  where JSON allows it, else the one natural escape), and is the same expression the rewrite
  makes of :func:`~.lexemes.json_char` of the set. A character-level language lowered with it
  (:func:`~.strings.lower_chars`) is exactly the natural spellings of the one lowered with
  ``json_char`` (both spellings are prefix codes, so AND and DIFF commute with them too): the
  expander builds the languages of the string keywords (lengths, patterns, formats) and of
  string values (``enum``, ``const``) both ways, and records the natural one with
  :meth:`Naturalizer.known`, so the rewrite never walks them (a format like ``date-time`` has
  tens of thousands of nodes); the rewrite is left for what combines them (``anyOf``,
  ``allOf``, ``not``: member by member, down to recorded languages).
- Results are kept per expression for one compile (one :class:`Naturalizer` per expander).
"""

from __future__ import annotations

import functools

from ...automata import boolean
from ...automata import charset as cs
from ...automata import derivatives as d
from ...caches import register_process_cache
from ...limits import Limits
from ..json_spelling import NATURAL_INTEGER, NATURAL_NUMBER, NATURAL_STRING
from . import lexemes as lx

__all__ = ["Naturalizer", "NATURAL_ESCAPES", "natural_char"]

_SHORT = {0x08: "b", 0x09: "t", 0x0A: "n", 0x0C: "f", 0x0D: "r", 0x22: '"', 0x5C: "\\"}
#: what follows the backslash of each natural escape
NATURAL_ESCAPES: tuple[bytes, ...] = tuple(sorted(
    _SHORT[c].encode() if c in _SHORT else f"u{c:04x}".encode() for c in list(range(0x20)) + [0x22, 0x5C]))


def _next_bytes() -> dict[bytes, tuple[int, ...]]:
    following: dict[bytes, set[int]] = {}
    for word in NATURAL_ESCAPES:
        for k in range(len(word)):
            following.setdefault(word[:k], set()).add(word[k])
    return {prefix: tuple(sorted(after)) for prefix, after in following.items()}


#: proper prefix of a natural escape -> the bytes that may follow it
_NEXT = _next_bytes()
_BACKSLASH_BIT = d.byte_mask("\\")
_BACKSLASH = d.byte_set(_BACKSLASH_BIT)


@functools.lru_cache(maxsize=1024)
def _word_trie(words: frozenset) -> d.Expr:
    """The byte strings ``words`` as a trie (shared prefixes and common rests: one derivative
    follows one branch). (Kept across compiles: a kept expression is never wrong after
    ``clear_interned``, only no longer shared with equal ones built later.)"""
    options = [d.EPSILON] if b"" in words else []
    by_first: dict[int, set] = {}
    for word in words:
        if word:
            by_first.setdefault(word[0], set()).add(word[1:])
    groups: dict[int, tuple[d.Expr, int]] = {}  # rest id -> (rest, mask of first bytes)
    for byte, rests in by_first.items():
        rest = _word_trie(frozenset(rests))
        _, mask = groups.get(rest.id, (rest, 0))
        groups[rest.id] = (rest, mask | 1 << byte)
    options += [d.concat(d.byte_set(mask), rest) for rest, mask in groups.values()]
    return d.alternation(*options)


#: the code points written as an escape in natural spelling: controls, ``"`` and ``\\``
_ESCAPED: cs.CharSet = ((0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C))


@functools.lru_cache(maxsize=4096)
def natural_char(charset: cs.CharSet) -> d.Expr:
    r"""One code point of ``charset`` in natural spelling: raw UTF-8 where JSON allows it, else
    its natural escape (``\"``, ``\\``, a short escape or ``\u00xx``). (Kept per process, as
    :func:`~.lexemes.json_char` is, also across ``clear_caches``: at most 4096 code point sets,
    and a kept expression is never wrong after ``clear_interned``, only no longer shared with
    equal ones built later, such as the rewrite's.)

    >>> def spells(expr, text):
    ...     for byte in text:
    ...         expr = d.derivative(expr, byte)
    ...     return expr.nullable
    >>> [spells(natural_char(((0, 0x7F),)), text) for text in (rb"a", rb'\"', rb"\n", rb"\u000a", rb"\/")]
    [True, True, True, False, False]
    """
    raw = cs.normalize(r for lo, hi in lx.RAW_CHARS for r in cs.intersect(charset, lo, hi))
    words = frozenset(_SHORT[code].encode() if code in _SHORT else f"u{code:04x}".encode()
                      for lo, hi in _ESCAPED for a, b in cs.intersect(charset, lo, hi) for code in range(a, b + 1))
    escaped = d.concat(_BACKSLASH, _word_trie(words)) if words else d.NOTHING
    return d.alternation(d.utf8_char(raw), escaped)


class _Irregular(Exception):
    """A node the shape-keeping rewrite does not know (the caller intersects instead)."""


class Naturalizer:
    """Natural spellings of one compile's languages (memoized by expression)."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self._strings: dict[int, d.Expr] = {}  # content expression id -> natural spellings
        self._numbers: dict[int, d.Expr] = {}

    def known(self, string: d.Expr, natural: d.Expr) -> None:
        """Record ``natural`` as the natural spellings of ``string`` (both languages of whole
        JSON strings, ``string`` closed under spelling), for :meth:`string` to read."""
        self._strings[string.id] = natural

    def number(self, number: d.Expr) -> d.Expr:
        """The natural spellings in ``number`` (a language closed under plain spelling)."""
        if number is d.NOTHING:
            return number
        if d.equal(number, lx.NUMBER):  # (by structure: equal nodes built after a clear_caches() too)
            return NATURAL_NUMBER
        if d.equal(number, lx.INTEGER) or d.equal(number, lx.INTEGER_DRAFT4):
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
            if not (head.kind == d.Kind.BYTES and head.args[0] == _BACKSLASH_BIT):  # (not `is`: clear_caches)
                pieces.append((link.id, self._natural(head)))
                link = rest
                continue
            escapes = self._escape_rests(rest)  # what follows -> the natural escapes before it
            if len(escapes) == 1:  # one escaped character, then the rest of the chain
                (after, words), = escapes.values()
                pieces.append((link.id, d.concat(_BACKSLASH, _word_trie(frozenset(words)))))
                link = after
                continue
            self._strings[link.id] = d.alternation(*(
                d.concat_all((_BACKSLASH, _word_trie(frozenset(words)), self._natural(after)))
                for after, words in escapes.values()))
            break
        tail = self._natural(link)
        for link_id, head in reversed(pieces):
            tail = d.concat(head, tail)
            self._strings[link_id] = tail
        return tail

    def _escape_rests(self, rest: d.Expr) -> dict[int, tuple[d.Expr, list[bytes]]]:
        """After a backslash: what may follow each natural escape ``rest`` begins with (by
        expression id, with the escapes, backslash left out, that lead there). The escapes
        are followed as a trie: ``u`` and ``u00`` are derived once."""
        found: dict[int, tuple[d.Expr, list[bytes]]] = {}
        stack: list[tuple[d.Expr, bytes]] = [(rest, b"")]
        while stack:
            node, done = stack.pop()
            for byte in _NEXT[done]:
                after = d.derivative(node, byte)
                if after is d.NOTHING:
                    continue
                word = done + bytes((byte,))
                if word in _NEXT:
                    stack.append((after, word))
                else:
                    found.setdefault(after.id, (after, []))[1].append(word)
        return found  # (none: the characters escaped here are written raw, elsewhere)


register_process_cache("natural escapes as tries", _word_trie.cache_clear)
