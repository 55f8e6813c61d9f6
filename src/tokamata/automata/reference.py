"""Pure-Python reference for the C++ trie walk: the test oracle of the core.

Invariant: ``reference_allowed(dfa, vocab, state)`` is, by definition, the set of text tokens
whose bytes lead ``state`` to a live state (token by token, no trie), plus the EOS ids when
``state`` accepts. The C++ walk must produce exactly this set.
"""

from __future__ import annotations

import numpy as np

from .dfa import DEAD, LazyByteDfa


def reference_allowed(dfa: LazyByteDfa, vocab, state: int) -> np.ndarray:
    """Sorted int32 ids of the tokens allowed in ``state``, computed one token at a time."""
    allowed = []
    for token_id, data in enumerate(vocab.token_bytes):
        if not data:
            continue
        s = state
        for byte in data:
            s = dfa.step(s, byte)
            if s == DEAD:
                break
        if s != DEAD:
            allowed.append(token_id)
    if dfa.accepting(state):
        allowed.extend(vocab.eos_token_ids)
    return np.asarray(sorted(set(allowed)), dtype=np.int32)
