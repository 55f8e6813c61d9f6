"""Random walks through token masks, the shared driver of the soundness tests.

``random_walk(matcher, vocab, rng, ...)`` takes a random allowed text token each step (a
short one with probability ``short_bias``, so that walks close their brackets) and consumes
it, asserting that the matcher takes every token its mask allowed. When EOS is allowed the
walk stops past step ``stop_after``, or before that with probability ``stop_chance``. It
returns the bytes consumed; the caller judges them (``matcher.is_accepting()`` says whether
the walk ended in the language) with its own oracle.
"""

from __future__ import annotations

import random


def random_walk(matcher, vocab, rng: random.Random, *, steps: int, stop_after: int, stop_chance: float,
                short_bytes: int = 2, short_bias: float = 0.8) -> bytes:
    eos = set(vocab.eos_token_ids)
    out = b""
    for step in range(steps):
        allowed = matcher.allowed_tokens().tolist()
        if eos & set(allowed) and (step > stop_after or rng.random() < stop_chance):
            break
        choices = [t for t in allowed if t not in eos]
        if not choices:
            break
        short = [t for t in choices if len(vocab.token_bytes[t]) <= short_bytes] or choices
        token = rng.choice(short if rng.random() < short_bias else choices)
        assert matcher.consume(token), vocab.token_bytes[token]
        out += vocab.token_bytes[token]
    return out
