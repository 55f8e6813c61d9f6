"""LlamaLogitsProcessor without a model: the prefetched mask (filled on a worker thread while
llama.cpp would evaluate) equals a fresh Matcher's mask at every step, including after the
input ids roll back, restart, or reach EOS; scores come back masked to -inf exactly there."""

from __future__ import annotations

import random

import numpy as np
import pytest

import tokamata
from tokamata.integrations.llama_cpp import LlamaLogitsProcessor
from real_tokenizers import llama3

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"enum": ["x", "yy"]}},
          "required": ["a", "b"], "additionalProperties": False}


@pytest.mark.parametrize("prefetch", [False, True])
def test_rows_equal_a_fresh_matcher(prefetch):
    vocab = llama3().vocab
    constraint = tokamata.compile_json_schema(SCHEMA, vocab)
    processor = LlamaLogitsProcessor(constraint, prompt_length=2)
    rng = random.Random(3)
    prompt = [100, 200]
    for walk in range(4):
        ids = list(prompt)
        reference = constraint.matcher()
        for step in range(30):
            if prefetch:
                processor.sync(ids)
                processor.prefetch()
            if walk and step == 3:  # roll back two tokens behind the processor's back
                ids = ids[:-2]
                reference.rollback(2)
            scores = np.asarray([rng.random() for _ in range(vocab.size)], dtype=np.float32)
            out = processor(np.asarray(ids, dtype=np.intc), scores)
            allowed = reference.allowed_tokens()
            expected = np.full(vocab.size, -np.inf, dtype=np.float32)
            expected[allowed] = scores[allowed]
            assert np.array_equal(out, expected)
            token = int(rng.choice(allowed.tolist()))
            if token in vocab.eos_token_ids:
                break
            assert reference.consume(token)
            ids.append(token)
    processor.close()


def test_only_eos_after_the_last_token():
    vocab = llama3().vocab
    constraint = tokamata.compile_regex("ok", vocab)
    processor = LlamaLogitsProcessor(constraint, prompt_length=1)
    ok = vocab.token_bytes.index(b"ok")
    processor.sync([1, ok])
    processor.prefetch()
    assert processor.only_eos()
    processor.sync([1])
    assert not processor.only_eos()
    processor.close()
