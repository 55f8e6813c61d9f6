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
* ``text_depth(node)`` (``automata/analysis.py``) is sound, not complete: every string of the slice automaton of at most
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
from .automata.analysis import UNLIMITED, text_depth, universal_over_text
from .trie import core_trie

__all__ = ["SLICE_BOUNDS", "slice_automaton", "core_slices", "UNLIMITED", "text_depth", "universal_over_text"]

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
