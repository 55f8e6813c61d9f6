"""Facts about expressions that other layers read (the lexer's native import, the slicer, the
JSON Schema front end): sound, not complete, and cheap (most are read off fields set when a
node is built, ``derivatives._set_facts``).

Invariants:
- ``infinite(node)`` is True only when ``node`` surely matches infinitely many strings;
  ``max_length(node)`` is the length of its longest string, or None when unbounded (or
  unknown); ``finite(node)`` is ``max_length(node) is not None``.
- ``inside_character(node)`` is True only when every string of ``node`` starts with a UTF-8
  continuation byte (the node is mid-character).
- ``text_depth(node)`` is a length n (``UNLIMITED`` for any) such that every prefix of JSON
  string text of at most n bytes (as UTF-8) leads ``node`` to a live state; 0 when nothing is
  proven. It is what lets the C++ core take the vocabulary's slices whole (``slices.py``).
"""

from __future__ import annotations

from . import charset as cs
from . import derivatives as d

__all__ = ["infinite", "max_length", "finite", "inside_character", "UNLIMITED", "text_depth", "text_depth_facts",
           "universal_over_text", "covers_text_characters"]


def infinite(node: d.Expr) -> bool:
    """True only when ``node`` surely matches infinitely many strings."""
    return node._infinite is True


def max_length(node: d.Expr):
    """The length of the longest string of ``node``, or None when unbounded (or unknown)."""
    return node._longest


def inside_character(node: d.Expr) -> bool:
    """True when every string of ``node`` starts with a UTF-8 continuation byte."""
    kind = node.kind
    if kind == d.Kind.UTF8:
        return node.args[1] > 0
    if kind == d.Kind.BYTES:
        return (node.args[0] & ~d.CONTINUATION_BYTES) == 0
    if kind == d.Kind.CONCAT:
        return inside_character(node.args[0])
    if kind == d.Kind.ALT:
        return all(inside_character(m) for m in node.args)
    if kind == d.Kind.UNTIL:
        return node.args[2] is not None and inside_character(node.args[2])
    if kind == d.Kind.SUBSTRING:  # (automaton, state, pending bytes of a character)
        return bool(node.args[2])
    if kind == d.Kind.TAGGED:
        return inside_character(node.args[0])
    return False


#: the characters a JSON string takes unescaped (surrogates are no characters)
_TEXT_CHARACTERS = ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, cs.MAX_CODE_POINT))


def covers_text_characters(node: d.Expr) -> bool:
    """True when every text character (as one whole UTF-8 sequence) is one of ``node``'s
    strings: ``node`` is a character class, or an alternation whose character classes
    together hold them all."""
    ranges: list[tuple[int, int]] = []
    for member in node.args if node.kind == d.Kind.ALT else (node,):
        if member.kind == d.Kind.BYTES:
            mask = member.args[0]
            ranges += [(b, b) for b in range(0x80) if mask >> b & 1]
        elif member.kind == d.Kind.UTF8 and member.args[1] == 0:
            ranges += list(member.args[0])
    ranges.sort()
    for lo, hi in _TEXT_CHARACTERS:  # each needed range must lie in the union of ``ranges``
        reach = lo - 1
        for a, b in ranges:
            if a > reach + 1:
                if a <= hi:
                    break
                continue
            reach = max(reach, b)
            if reach >= hi:
                break
        if reach < hi:
            return False
    return True


#: "every sliceable string, however long"
UNLIMITED = 1 << 30


def text_depth_facts(node: d.Expr, memo: dict[int, tuple[int, bool]]) -> tuple[int, bool]:
    """(a length n such that every text string of at most n bytes leads ``node`` to a
    non-empty derivative, whether every text string leads it to an infinite one)."""
    known = memo.get(node.id)
    if known is not None:
        return known
    kind = node.kind
    result = (0, False)
    if kind == d.Kind.TAGGED:
        result = text_depth_facts(node.args[0], memo)
    elif kind == d.Kind.ALT:
        parts = [text_depth_facts(m, memo) for m in node.args]
        result = (max(n for n, _ in parts), any(i for _, i in parts))
    elif kind == d.Kind.CONCAT:
        first, second = node.args
        depth, unbounded = text_depth_facts(first, memo)
        # (first second)_w contains first_w second, and second is not empty
        result = (depth, unbounded or (depth == UNLIMITED and infinite(second)))
    elif kind == d.Kind.REPEAT:
        item, _, high = node.args
        if covers_text_characters(item):
            # after k whole characters the rest is item{..., high - k}; after part of one more,
            # its completion then that; a string of n bytes holds at most n characters
            result = (UNLIMITED, True) if high == d.UNBOUNDED else (high, False)
    elif kind == d.Kind.DIFF:
        first, second = node.args
        if text_depth_facts(first, memo)[1] and finite(second):
            result = (UNLIMITED, True)  # an infinite set minus a finite one is never empty
    memo[node.id] = result
    return result


def finite(node: d.Expr) -> bool:
    """True only if ``node`` has finitely many strings (memoized on the node)."""
    return max_length(node) is not None


def text_depth(node: d.Expr) -> int:
    """A length n (``UNLIMITED`` for any) such that every prefix of JSON string text of at most
    n bytes (as UTF-8) leads ``node`` to a live state; 0 when nothing is proven (sound, not
    complete)."""
    return text_depth_facts(node, {})[0]


def universal_over_text(node: d.Expr) -> bool:
    """True only if every prefix of JSON string text leads ``node`` to a live state."""
    return text_depth(node) == UNLIMITED
