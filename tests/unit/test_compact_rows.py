"""Token rows and masks are stored compactly (cpp/include/tokamata/compact_row.hpp): dense, or
a base (zeros, ones, or one of the vocabulary's slice rows) plus the words that differ. The
forms are checked against their dense words in the C++ unit tests (test_compact_row.cpp);
here, on Llama 3: a JSON string's masks equal an independent oracle (the ``regex`` package
with partial matching) along random walks, and
``ConstraintCore.row_bytes`` / ``Constraint.memory_bytes()`` count the compact sizes, a fraction
of the dense ones for string-heavy schemas."""

from __future__ import annotations

import json
import random

import numpy as np

import tokamata
from oracle import Oracle
from real_tokenizers import llama3

# the JSON string a top-level {"type": "string"} schema takes, as a regex for the oracle
JSON_STRING = r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'

# many string-like states: each property's string, its key, and the masks around them
KEYS = [f"field_{i}" for i in range(24)]
STRINGS = {"type": "object", "properties": {k: {"type": "string"} for k in KEYS},
           "required": KEYS, "additionalProperties": False}


def dense_bytes(constraint) -> int:
    core = constraint._core
    return (core.num_distinct_masks + core.num_cached_rows) * ((constraint.vocab_size + 31) // 32) * 4


def test_json_string_masks_equal_the_oracle():
    rt = llama3()
    vocab = rt.vocab
    constraint = tokamata.compile_json_schema({"type": "string"}, vocab, spelling="any")
    oracle = Oracle(JSON_STRING)
    eos = set(vocab.eos_token_ids)
    rng = random.Random(20)
    checked = 0
    for walk in range(2):
        m = constraint.matcher()
        prefix = b""
        for step in range(4):
            ours = set(m.allowed_tokens().tolist())
            expected = oracle.allowed(vocab, prefix)
            assert ours == expected, (prefix, sorted(ours ^ expected)[:5])
            checked += 1
            choices = sorted(ours - eos)
            if step == 0:  # the opening quote, then text tokens of every length
                token = rt.encode('"')[0]
            else:
                token = rng.choice([t for t in choices if b'"' not in vocab.token_bytes[t]])
            assert m.consume(token)
            prefix += vocab.token_bytes[token]
    assert checked == 8


def test_row_bytes_count_compact_sizes():
    rt = llama3()
    vocab = rt.vocab
    constraint = tokamata.compile_json_schema(STRINGS, vocab)
    rng = random.Random(4)
    words = ["alpha", "beta gamma", "δέλτα", "x" * 40, "1, 2, 3", "tab\there", "quote \" inside"]
    for _ in range(3):
        doc = {k: " ".join(rng.choice(words) for _ in range(rng.randrange(1, 4))) for k in STRINGS["properties"]}
        m = constraint.matcher()
        buf = tokamata.allocate_bitmask(1, vocab.size)
        for t in rt.encode(json.dumps(doc, separators=(",", ":"), ensure_ascii=False)):
            m.fill_bitmask(buf)
            assert np.unpackbits(buf.view(np.uint8), bitorder="little")[t]
            assert m.consume(t)
        assert m.is_accepting()
    core = constraint._core
    assert core.num_cached_rows > 0 and core.num_distinct_masks > 0
    dense = dense_bytes(constraint)
    assert 0 < core.row_bytes < dense / 4
    # memory_bytes counts the rows at their compact size: below the dense count of rows alone
    assert constraint.memory_bytes() < dense + core.num_lexer_states * 1024 + constraint.num_parser_states * 512
    assert constraint.memory_bytes() >= core.row_bytes
