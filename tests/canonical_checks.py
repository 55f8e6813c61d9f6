"""Property checks of canonical masks shared by the canonical test files (byte-level BPE in
tests/unit/test_canonical_masks.py, SentencePiece in tests/unit/test_canonical_sentencepiece.py),
each against the tokenizer's own encodings (``tokenizer.encode``, the ``tokenizers`` library).

- :func:`check_encodings_accepted` (completeness): the encoding of any text of the language
  (hypothesis strings of ``texts``) walks to EOS.
- :func:`check_walks_are_encodings` (soundness): a random walk through the masks, ended by EOS,
  is the encoding of its own text, and never meets an empty mask.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def check_encodings_accepted(constraint, tokenizer, texts: str, examples: int) -> None:
    eos = tokenizer.vocab.eos_token_ids[0]

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.from_regex(texts, fullmatch=True))
    def run(text):
        ids = tokenizer.encode(text)
        m = constraint.matcher()
        assert m.consume_many(ids) == len(ids), (text, ids)
        assert m.is_accepting() and m.consume(eos), text

    run()


def check_walks_are_encodings(constraint, tokenizer, seed: int, walks: int) -> None:
    vocab = tokenizer.vocab
    eos = set(vocab.eos_token_ids)
    rng = random.Random(seed)
    for _ in range(walks):
        m = constraint.matcher()
        walk: list[int] = []
        while True:
            allowed = m.allowed_tokens().tolist()
            assert allowed, walk  # (never a dead end)
            # lean to long tokens, and to EOS once it is allowed, to keep walks short
            t = next((e for e in allowed if e in eos), None) if rng.random() < 0.3 else None
            if t is None:
                k = 4 if rng.random() < 0.5 else 1
                t = max(rng.sample(allowed, min(k, len(allowed))), key=lambda i: len(vocab.token_bytes[i] or b""))
            assert m.consume(t)
            if t in eos:
                break
            walk.append(t)
        text = vocab.decode(walk).decode("utf-8")
        assert tokenizer.encode(text) == walk, text
