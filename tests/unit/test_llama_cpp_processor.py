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


def test_advance_equals_sync_and_a_refused_token_keeps_the_state():
    """advance(token) is sync(ids + [token]); a refused token among several new ones leaves
    the ones before it consumed, and the next sync (fast path) starts from there."""
    vocab = llama3().vocab
    constraint = tokamata.compile_regex("[a-c]{6}", vocab)
    a, b, x = (vocab.token_bytes.index(t) for t in (b"a", b"b", b"x"))
    by_sync = LlamaLogitsProcessor(constraint, prompt_length=2)
    by_advance = LlamaLogitsProcessor(constraint, prompt_length=2)
    by_sync.sync([7, 8])
    by_advance.sync([7, 8])
    ids = [7, 8]
    for token in (a, b, a):
        ids.append(token)
        by_sync.sync(ids)
        by_advance.advance(token)
        assert by_sync.tokens == by_advance.tokens == ids[2:]
        assert np.array_equal(by_sync.row(), by_advance.row())
    with pytest.raises(tokamata.InvalidArgument, match="not allowed"):
        by_sync.sync(ids + [b, x, a])
    assert by_sync.tokens == ids[2:] + [b]
    by_sync.sync(ids + [b, a])  # the prefix it consumed, then one more token
    assert by_sync.tokens == ids[2:] + [b, a]
    reference = constraint.matcher()
    reference.consume_many(by_sync.tokens)
    expected = np.zeros((1, len(by_sync.row())), dtype=np.int32)
    reference.fill_bitmask(expected)
    assert np.array_equal(by_sync.row(), expected[0])


def test_processors_share_the_mask_threads():
    """Prefetching starts no thread per processor: the worker threads are process-wide, at
    most one per core up to 4, however many processors prefetched."""
    import os
    import threading

    vocab = llama3().vocab
    constraint = tokamata.compile_regex("[a-c]{6}", vocab)
    a = vocab.token_bytes.index(b"a")
    for _ in range(20):
        p = LlamaLogitsProcessor(constraint, prompt_length=1)
        p.sync([1, a])
        p.prefetch()
        p.row()
        p.close()
    mask_threads = [t for t in threading.enumerate() if t.name.startswith("tokamata-mask")]
    assert 1 <= len(mask_threads) <= min(4, os.cpu_count() or 1)
