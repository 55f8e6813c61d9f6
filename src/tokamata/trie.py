"""Per-vocabulary C++ state: the token trie and the shared token-row cache.

Invariants: the trie holds exactly the text tokens (non-empty bytes, not special, not
padding); it and the row cache are built once and cached on the vocabulary object, which is
immutable. The row cache maps a DFA state's structural key (its expression's id) to its
token row, so every constraint over this vocabulary that reaches the same expression (the
inside of a string, say) reuses the row; it holds at most ``CacheBounds.shared_rows_bytes`` of
rows (:func:`tokamata.caches.shared_row_capacity`), and so does the boundary-event cache in lists.
"""

from __future__ import annotations

import threading

import numpy as np

from . import _core
from .caches import register_vocabulary_cache, shared_row_capacity
from .errors import VocabularyError

_lock = threading.Lock()
_ATTRIBUTE = "_tokamata_core_trie"
_ROWS_ATTRIBUTE = "_tokamata_shared_rows"
_EVENTS_ATTRIBUTE = "_tokamata_shared_events"


def _capacity(vocab) -> int:
    """Rows (and event lists) a shared cache of ``vocab`` holds: the byte bound over its row size."""
    return shared_row_capacity(((int(vocab.size) + 31) // 32) * 4)


def core_trie(vocab) -> "_core.TokenTrie":
    """The (cached) C++ trie of ``vocab``."""
    trie = vocab.__dict__.get(_ATTRIBUTE)
    if trie is not None:
        return trie
    with _lock:
        trie = vocab.__dict__.get(_ATTRIBUTE)
        if trie is None:
            tokens = vocab.token_bytes
            lengths = np.fromiter((len(t) if t else 0 for t in tokens), dtype=np.int64, count=len(tokens))
            offsets = np.zeros(len(tokens) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            data = np.frombuffer(b"".join(t for t in tokens if t), dtype=np.uint8)
            in_trie = (lengths > 0).astype(np.uint8)
            try:
                trie = _core.TokenTrie(data, offsets, in_trie, int(vocab.size))
            except ValueError as error:
                raise VocabularyError(f"cannot index this vocabulary: {error}") from None
            vocab.__dict__[_ATTRIBUTE] = trie
    return trie


def shared_rows(vocab) -> "_core.SharedRowCache":
    """The (cached) cross-constraint token-row cache of ``vocab``."""
    cache = vocab.__dict__.get(_ROWS_ATTRIBUTE)
    if cache is None:
        with _lock:
            cache = vocab.__dict__.get(_ROWS_ATTRIBUTE)
            if cache is None:
                cache = _core.SharedRowCache(_capacity(vocab))
                vocab.__dict__[_ROWS_ATTRIBUTE] = cache
    return cache


def shared_events(vocab) -> "_core.SharedEventCache":
    """The (cached) cross-grammar cache of lexeme-boundary nodes of ``vocab``."""
    cache = vocab.__dict__.get(_EVENTS_ATTRIBUTE)
    if cache is None:
        with _lock:
            cache = vocab.__dict__.get(_EVENTS_ATTRIBUTE)
            if cache is None:
                cache = _core.SharedEventCache(_capacity(vocab))
                vocab.__dict__[_EVENTS_ATTRIBUTE] = cache
    return cache


def drop_shared_rows(vocab) -> None:
    """Forget ``vocab``'s shared rows and boundary events (constraints that use them keep
    them alive)."""
    with _lock:
        vocab.__dict__.pop(_ROWS_ATTRIBUTE, None)
        vocab.__dict__.pop(_EVENTS_ATTRIBUTE, None)


register_vocabulary_cache("shared rows and boundary events", drop_shared_rows)
