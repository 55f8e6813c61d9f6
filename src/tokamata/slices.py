"""The vocabulary's slices: the tokens a dense mask may take whole (seed 001, "Slicer").

Inside a JSON string, a comment or free text, a lexer state allows almost every token, and a
trie walk would visit almost the whole vocabulary. The slicer puts aside the *sliceable*
tokens, those spelling text that such contexts take as is, split by length; per lexer state
the C++ core proves, by a small search over (slice automaton state, lexer state) pairs, up to
which length every sliceable string keeps the state live, ORs the precomputed bitsets of the
slices up to that length and walks only the rest of the vocabulary.

Invariants

* The slice automaton accepts exactly the prefixes of UTF-8 strings of the characters JSON
  lets a string hold unescaped (RFC 8259: U+0020..U+10FFFF except ``"`` and ``\\``), with no
  overlong forms and no surrogates. Its language is prefix-closed, as the core requires; a
  token is sliceable when its bytes are such a prefix (a token may end inside a character).
* Slicing never changes a mask: a slice is taken whole only when every string of the slice
  automaton up to the slice's longest token is proven live (and, for grammar walks, free of
  lexeme ends), and everything else is walked as before. ``tests/unit/test_slices.py``
  compares sliced and unsliced rows.
* Slices are built once per vocabulary and cached on it, like the trie; ``clear_caches``
  leaves them (they depend on the vocabulary alone).
* ``text_depth(node)`` is sound, not complete: every string of the slice automaton of at most
  that many bytes leads ``node`` to a non-empty derivative, proven from the expression's shape
  (repetitions of a class holding every such character, bounded or not, concatenations,
  alternations, tags, and differences with finite languages). When it proves something the
  core skips its search. The cases that matter: keys excluded by ``additionalProperties``
  (string text minus finitely many names), where the search would explore every prefix of
  every name, and strings with ``maxLength``, where it would explore every count.
"""

from __future__ import annotations

import threading

import numpy as np

from . import _core
from .automata import charset as cs
from .automata import derivatives as d
from .automata.boolean import _infinite, _max_length
from .trie import core_trie

_lock = threading.Lock()
_ATTRIBUTE = "_tokamata_core_slices"

#: upper bounds (in bytes) of the slices' token lengths; longer tokens form one more slice
SLICE_BOUNDS = (3, 5, 7, 10, 16)

# slice automaton states
_BOUNDARY = 0  # between characters
_ONE_MORE, _TWO_MORE, _THREE_MORE = 1, 2, 3  # continuation bytes still due (any of 80..BF)
_AFTER_E0, _AFTER_ED, _AFTER_F0, _AFTER_F4 = 4, 5, 6, 7  # lead bytes with a narrower second byte
_NUM_STATES = 8


def slice_automaton() -> np.ndarray:
    """The slice automaton as the core takes it: int32 [state * 256 + byte] -> state or -1."""
    table = np.full((_NUM_STATES, 256), -1, dtype=np.int32)
    for byte in range(0x20, 0x80):
        if byte not in (0x22, 0x5C):  # '"' and '\\' need escapes
            table[_BOUNDARY, byte] = _BOUNDARY
    table[_BOUNDARY, 0xC2:0xE0] = _ONE_MORE
    table[_BOUNDARY, 0xE0] = _AFTER_E0
    table[_BOUNDARY, 0xE1:0xED] = _TWO_MORE
    table[_BOUNDARY, 0xED] = _AFTER_ED
    table[_BOUNDARY, 0xEE:0xF0] = _TWO_MORE
    table[_BOUNDARY, 0xF0] = _AFTER_F0
    table[_BOUNDARY, 0xF1:0xF4] = _THREE_MORE
    table[_BOUNDARY, 0xF4] = _AFTER_F4
    table[_ONE_MORE, 0x80:0xC0] = _BOUNDARY
    table[_TWO_MORE, 0x80:0xC0] = _ONE_MORE
    table[_THREE_MORE, 0x80:0xC0] = _TWO_MORE
    table[_AFTER_E0, 0xA0:0xC0] = _ONE_MORE  # no overlong three-byte forms
    table[_AFTER_ED, 0x80:0xA0] = _ONE_MORE  # no surrogates
    table[_AFTER_F0, 0x90:0xC0] = _TWO_MORE  # no overlong four-byte forms
    table[_AFTER_F4, 0x80:0x90] = _TWO_MORE  # nothing past U+10FFFF
    return table.reshape(-1)


def core_slices(vocab) -> "_core.TokenSlices":
    """The (cached) slices of ``vocab``'s trie."""
    slices = vocab.__dict__.get(_ATTRIBUTE)
    if slices is not None:
        return slices
    trie = core_trie(vocab)
    with _lock:
        slices = vocab.__dict__.get(_ATTRIBUTE)
        if slices is None:
            slices = _core.TokenSlices(trie, slice_automaton(), np.asarray(SLICE_BOUNDS, dtype=np.int32))
            vocab.__dict__[_ATTRIBUTE] = slices
    return slices


#: the characters a JSON string takes unescaped (surrogates are no characters)
_TEXT_CHARACTERS = ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, cs.MAX_CODE_POINT))


def _covers_text_characters(node: d.Expr) -> bool:
    """True when every text character (as one whole UTF-8 sequence) is one of ``node``'s
    strings: ``node`` is a character class, or an alternation whose character classes
    together hold them all."""
    ranges: list[tuple[int, int]] = []
    for member in node.args if node.kind == d._ALT else (node,):
        if member.kind == d._BYTES:
            mask = member.args[0]
            ranges += [(b, b) for b in range(0x80) if mask >> b & 1]
        elif member.kind == d._UTF8 and member.args[1] == 0:
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


def _text_depth(node: d.Expr, memo: dict[int, tuple[int, bool]]) -> tuple[int, bool]:
    """(a length n such that every text string of at most n bytes leads ``node`` to a
    non-empty derivative, whether every text string leads it to an infinite one)."""
    known = memo.get(node.id)
    if known is not None:
        return known
    kind = node.kind
    result = (0, False)
    if kind == d._TAGGED:
        result = _text_depth(node.args[0], memo)
    elif kind == d._ALT:
        parts = [_text_depth(m, memo) for m in node.args]
        result = (max(n for n, _ in parts), any(i for _, i in parts))
    elif kind == d._CONCAT:
        first, second = node.args
        depth, infinite = _text_depth(first, memo)
        # (first second)_w contains first_w second, and second is not empty
        result = (depth, infinite or (depth == UNLIMITED and _infinite(second)))
    elif kind == d._REPEAT:
        item, _, high = node.args
        if _covers_text_characters(item):
            # after k whole characters the rest is item{..., high - k}; after part of one more,
            # its completion then that; a string of n bytes holds at most n characters
            result = (UNLIMITED, True) if high == d.UNBOUNDED else (high, False)
    elif kind == d._DIFF:
        first, second = node.args
        if _text_depth(first, memo)[1] and _finite(second):
            result = (UNLIMITED, True)  # an infinite set minus a finite one is never empty
    memo[node.id] = result
    return result


def _finite(node: d.Expr) -> bool:
    """True only if ``node`` has finitely many strings (memoized on the node)."""
    return _max_length(node) is not None


def text_depth(node: d.Expr) -> int:
    """A length n (``UNLIMITED`` for any) such that every prefix of JSON string text of at most
    n bytes (as UTF-8) leads ``node`` to a live state; 0 when nothing is proven (sound, not
    complete)."""
    return _text_depth(node, {})[0]


def universal_over_text(node: d.Expr) -> bool:
    """True only if every prefix of JSON string text leads ``node`` to a live state."""
    return text_depth(node) == UNLIMITED
