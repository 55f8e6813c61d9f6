"""Lexer states and masks do not depend on what the process compiled before.

A constraint's lexer is built lazily from hash-consed expressions, so two compiles of one
schema share nodes with whatever the process built before, and ``tokamata.clear_caches()``
makes equal expressions built before and after it two objects. Decisions taken on
expressions (which restriction a number language gets, how a product is normalized) must be
taken by structure, never by identity or id order: otherwise the same schema gets other
lexer states, other masks, or hits ``max_dfa_states``, depending on history. These tests
compile target schemas after shuffled sets of other schemas (fixed seeds; one order followed
by ``clear_caches()``, one by ``clear_caches(vocab)``) and compare every mask along seeded
walks, and the lexer state counts, with a fresh compile in a subprocess. (Token rows cached
for the vocabulary are keyed by state structure and shared between constraints, so a later
compile may build fewer lexer states than a fresh one, never more; with the vocabulary's
caches dropped it builds exactly as many.)

Run as a script (``python test_compile_determinism.py NAME SPELLING``) it prints the fresh
fingerprint of one target, as JSON.
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

_TESTS = Path(__file__).resolve().parents[1]
if str(_TESTS) not in sys.path:  # (run as a script)
    sys.path.insert(0, str(_TESTS))

import real_tokenizers  # noqa: E402
import tokamata  # noqa: E402
from schema_walks import Walker  # noqa: E402

MASKBENCH = _TESTS.parents[1] / "shared" / "data" / "jsonschemabench" / "maskbench"

#: the schemas whose fingerprints are compared (MaskBench Handwritten---allone4 is the first
#: with its $refs inlined: a multiple of 3 and not of 5, 7 or 8)
TARGETS = {
    "multiples-of-24": {
        "type": "number", "allOf": [
            {"minimum": 1}, {"oneOf": [{"multipleOf": 3}, {"multipleOf": 5}, {"multipleOf": 7}]},
            {"oneOf": [{"allOf": [{"not": {"multipleOf": 5}}, {"not": {"multipleOf": 7}}]}, {"multipleOf": 24}]},
            {"oneOf": [{"not": {"multipleOf": 8}}, {"multipleOf": 11}]}, {"not": {"multipleOf": 8}}]},
    "if-9-then-4-else-11": {"type": "integer", "if": {"multipleOf": 9}, "then": {"multipleOf": 4},
                            "else": {"multipleOf": 11}},
    "bounded-decimal": {"type": "number", "multipleOf": 0.25, "minimum": -10, "exclusiveMaximum": 1000},
}

#: compiled before the targets, in shuffled orders: they share sub-languages with the targets
#: (the same multiples, bounds and universes), so they create those nodes first
OTHERS = [
    {"type": "integer"}, {"type": "number"}, {"type": "integer", "multipleOf": 3},
    {"type": "number", "multipleOf": 8}, {"type": "integer", "not": {"multipleOf": 5}},
    {"type": "number", "minimum": 1}, {"type": "integer", "minimum": 1, "multipleOf": 24},
    {"oneOf": [{"multipleOf": 7}, {"multipleOf": 11}]}, {"type": "number", "not": {"multipleOf": 8}},
    {"allOf": [{"multipleOf": 4}, {"not": {"multipleOf": 9}}]}, {"type": "number", "multipleOf": 0.25},
    {"type": "number", "minimum": -10, "exclusiveMaximum": 1000},
    {"type": "object", "properties": {"a": {"type": "integer", "multipleOf": 5}, "b": {"type": "string"}},
     "required": ["a"]},
    {"type": "array", "items": {"type": "integer", "multipleOf": 11}, "maxItems": 3},
    {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "number", "multipleOf": 0.5}]},
]

WALKS = 4


def fingerprint(schema, spelling: str) -> list:
    """[lexer states after each walk, sha-256 of every mask along the walks] of a fresh
    compile of ``schema`` (seeded walks: a pure function of the masks)."""
    vocab = real_tokenizers.llama3().vocab
    walker = Walker(vocab)
    constraint = tokamata.compile_json_schema(schema, vocab, spelling=spelling)
    digest = hashlib.sha256()
    counts = []
    for seed in range(WALKS):
        rng = random.Random(seed)
        matcher = constraint.matcher()
        for step in range(30):
            allowed = matcher.allowed_tokens()
            digest.update(allowed.tobytes())
            others = allowed[~np.isin(allowed, walker.eos)]
            if not len(others):
                break
            assert matcher.consume(walker.pick(rng, others, step >= 20))
        counts.append(constraint.num_lexer_states)
    return [counts, digest.hexdigest()]


def _maskbench_allone4():
    path = MASKBENCH / "Handwritten.jsonl"
    if not path.is_file():
        return None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith('{"id":"Handwritten---allone4",'):
            return json.loads(line)["schema"]
    return None


def _target(name: str):
    if name == "allone4":
        schema = _maskbench_allone4()
        if schema is None:
            pytest.skip(f"MaskBench Handwritten---allone4 not found under {MASKBENCH} (../shared/data)")
        return schema
    return TARGETS[name]


def _fresh(name: str, spelling: str) -> list:
    done = subprocess.run([sys.executable, __file__, name, spelling], capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _compile_others(seed: int, spelling: str) -> None:
    vocab = real_tokenizers.llama3().vocab
    others = list(OTHERS)
    random.Random(seed).shuffle(others)
    for schema in others:
        tokamata.compile_json_schema(schema, vocab, spelling=spelling).matcher().allowed_tokens()


@pytest.mark.parametrize("name,spelling", [(name, "natural") for name in list(TARGETS) + ["allone4"]]
                         + [("multiples-of-24", "any")])
def test_states_and_masks_do_not_depend_on_history(name, spelling):
    schema = _target(name)
    fresh_counts, fresh_masks = _fresh(name, spelling)
    vocab = real_tokenizers.llama3().vocab
    # (order, what is cleared after the others): token rows shared through the vocabulary's
    # caches spare a later compile the lexer states behind them, so with them kept the count
    # may only be lower; with them dropped (clear_caches(vocab)) it is the fresh count
    for seed, clear in ((1, None), (2, "interned"), (3, "vocab")):
        _compile_others(seed, spelling)
        if clear == "interned":
            tokamata.clear_caches()
        elif clear == "vocab":
            tokamata.clear_caches(vocab)
        counts, masks = fingerprint(schema, spelling)
        where = f"{name}, {spelling} spelling, after order {seed} (cleared: {clear})"
        assert masks == fresh_masks, f"{where}: masks differ from a fresh compile's"
        if clear == "vocab":
            assert counts == fresh_counts, f"{where}: lexer states {counts}, fresh {fresh_counts}"
        else:
            assert all(a <= b for a, b in zip(counts, fresh_counts)), \
                f"{where}: lexer states {counts}, fresh {fresh_counts}"


if __name__ == "__main__":
    target = _maskbench_allone4() if sys.argv[1] == "allone4" else TARGETS[sys.argv[1]]
    print(json.dumps(fingerprint(target, sys.argv[2])))
