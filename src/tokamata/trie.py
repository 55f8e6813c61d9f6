"""The C++ token trie of a :class:`~tokamata.vocab.Vocabulary`, built once per vocabulary.

Invariant: the trie holds exactly the text tokens (non-empty bytes, not special, not
padding); it is cached on the vocabulary object, which is immutable.
"""

from __future__ import annotations

import threading

import numpy as np

from . import _core

_lock = threading.Lock()
_ATTRIBUTE = "_tokamata_core_trie"


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
            trie = _core.TokenTrie(data, offsets, in_trie, int(vocab.size))
            vocab.__dict__[_ATTRIBUTE] = trie
    return trie
