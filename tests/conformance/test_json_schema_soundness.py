"""Soundness on MaskBench schemas: random walks through the masks (a random allowed token
each step, until EOS is chosen) produce JSON that ``jsonschema`` validates.

A sample of schemas (every 1500th line of each MaskBench split, those that compile) keeps
this quick; ``benchmarks/`` runs all of them. Walks prefer short tokens so that they finish.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import jsonschema
import pytest

import tokamata
from mask_walk import random_walk
from tokamata.syntax.json_schema import schema_to_grammar

MASKBENCH = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "jsonschemabench" / "maskbench"
EVERY = 1500


def sample() -> list[dict]:
    rows = []
    for path in sorted(MASKBENCH.glob("*.jsonl")):
        with path.open() as f:
            for i, line in enumerate(f):
                if i % EVERY == 0:
                    rows.append(json.loads(line))
    return rows


def walk(constraint, vocab, rng: random.Random, steps: int = 120) -> bytes | None:
    """Bytes of one random walk that ends accepting, or None."""
    matcher = constraint.matcher()
    out = random_walk(matcher, vocab, rng, steps=steps, stop_after=steps // 2, stop_chance=0.3,
                      short_bytes=2, short_bias=0.85)
    return out if matcher.is_accepting() else None


def test_random_walks_validate():
    if not MASKBENCH.exists():
        pytest.skip(f"MaskBench is not at {MASKBENCH}")
    from real_tokenizers import llama3

    vocab = llama3().vocab
    rng = random.Random(11)
    checked = 0
    for row in sample():
        schema = row["schema"]
        try:
            grammar, _ = schema_to_grammar(schema)
            constraint = tokamata.compile_grammar_ir(grammar, vocab)
        except tokamata.TokamataError:
            continue
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
        for _ in range(1):
            try:
                out = walk(constraint, vocab, rng)
            except tokamata.LimitExceeded:
                continue
            if out is None:
                continue
            value = json.loads(out.decode("utf-8"))
            errors = [e.message for e in validator.iter_errors(value)]
            assert not errors, (row["id"], out[:300], errors[:2])
            checked += 1
    assert checked >= 3
