"""Equal masks are stored once (ConstraintCore's DistinctRows): a JSON Schema whose positions
repeat the same allowed sets keeps fewer distinct masks than cached positions, and sharing never
changes a mask: each step's mask equals the one a fresh constraint computes for the same tokens
when it meets the positions in another order."""

from __future__ import annotations

import json
import random

import numpy as np

import tokamata
from real_tokenizers import llama3

ITEM = {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"], "additionalProperties": False}
SCHEMA = {"type": "object", "properties": {k: ITEM for k in ("a", "b", "c", "d", "e", "f")},
          "required": ["a", "b", "c", "d", "e", "f"], "additionalProperties": False}


def masks_along(constraint, tokens):
    m = constraint.matcher()
    buf = np.zeros((1, (constraint.vocab_size + 31) // 32), dtype=np.int32)
    out = []
    for t in tokens:
        m.fill_bitmask(buf)
        out.append(buf[0].copy())
        assert m.consume(t)
    m.fill_bitmask(buf)
    out.append(buf[0].copy())
    return out


def test_equal_masks_are_stored_once_and_never_change_a_mask():
    rt = llama3()
    vocab = rt.vocab
    rng = random.Random(5)
    docs = []
    for _ in range(4):
        value = {k: {"x": rng.randrange(-999, 999), "y": rng.randrange(1000)} for k in SCHEMA["properties"]}
        docs.append(rt.encode(json.dumps(value, separators=(",", ":"))))
    first = tokamata.compile_json_schema(SCHEMA, vocab)
    seen = [masks_along(first, d) for d in docs]
    core = first._core
    assert core.num_distinct_masks < core.num_cached_masks
    assert first.memory_bytes() < (core.num_cached_masks + core.num_lexer_states) * 4 * ((vocab.size + 31) // 32)
    second = tokamata.compile_json_schema(SCHEMA, vocab)
    for d, masks in reversed(list(zip(docs, seen))):
        again = masks_along(second, d)
        assert all(np.array_equal(a, b) for a, b in zip(masks, again))
