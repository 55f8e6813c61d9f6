"""The plain walk equals the event-indexed walk (issue 20, grammar time to first mask).

A configuration's mask is ``inside(state) | crossing(parser, state)``. The first time a lexer
state is met, ``GrammarCore`` computes it by one DFS of the whole trie stepping every
configuration together (``plain_walk``); from then on by the state's inside row and its
boundary events indexed by (event state, child byte) (``inside_row`` + ``crossing``, with its
own dense fallback). Both must give the same bits. Checked at every configuration of every
position along random walks over the benchmark grammars on Llama 3, where crossings are
frequent (operators after names, abutting atoms, keywords that are also names).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

import tokamata

from real_tokenizers import llama3

ROOT = Path(__file__).resolve().parents[2]
GRAMMARS = [
    ROOT / "tests/data/grammars/arithmetic.lark",
    ROOT / "tests/data/grammars/c_like.lark",
    ROOT / "tests/data/grammars/sql.lark",
    ROOT / "benchmarks/grammars/tool_call.lark",
    ROOT / "benchmarks/grammars/python_like.lark",
    ROOT / "benchmarks/grammars/sexp.lark",
]


def _masks(walks, parser: int, state: int, words: int) -> tuple[np.ndarray, np.ndarray]:
    indexed = np.zeros(words, dtype=np.uint32)
    walks.inside_row(state, indexed)
    walks.crossing(parser, state, indexed)
    plain = np.zeros(words, dtype=np.uint32)
    walks.plain_walk(parser, state, plain)
    return plain, indexed


@pytest.mark.parametrize("path", GRAMMARS, ids=lambda p: p.stem)
def test_plain_walk_equals_indexed_walk(path: Path) -> None:
    vocab = llama3().vocab
    constraint = tokamata.compile_grammar(path.read_text(), vocab)
    walks = constraint.grammar_core
    words = (vocab.size + 31) // 32
    rng = random.Random(path.stem)
    eos = set(vocab.eos_token_ids)
    checked = 0
    for _ in range(3):
        matcher = constraint.matcher()
        for _ in range(12):
            for parser, state, _fresh in matcher._core.position():
                if state < 0:
                    continue
                plain, indexed = _masks(walks, parser, state, words)
                assert np.array_equal(plain, indexed), (path.stem, parser, state)
                checked += 1
            allowed = [t for t in matcher.allowed_tokens().tolist() if t not in eos]
            if not allowed:
                break
            short = [t for t in allowed if len(vocab.token_bytes[t]) <= 2]
            assert matcher.consume(rng.choice(short if short and rng.random() < 0.7 else allowed))
    assert checked >= 12


@pytest.mark.parametrize("path", GRAMMARS[:3] + GRAMMARS[5:], ids=lambda p: p.stem)
def test_plain_walk_past_its_scratch_cap_gives_the_same_bits(path: Path) -> None:
    """With the scratch cap at 1 byte every first-mask walk outgrows it at its first new
    configuration set and finishes with the per-configuration walk: the bits are the same."""
    vocab = llama3().vocab
    constraint = tokamata.compile_grammar(path.read_text(), vocab)
    walks = constraint.grammar_core
    words = (vocab.size + 31) // 32
    matcher = constraint.matcher()
    rng = random.Random(path.stem)
    positions = []
    for _ in range(6):
        positions += [(p, s) for p, s, _fresh in matcher._core.position() if s >= 0]
        allowed = [t for t in matcher.allowed_tokens().tolist() if t not in set(vocab.eos_token_ids)]
        if not allowed:
            break
        assert matcher.consume(rng.choice(allowed))
    expected = []
    for parser, state in positions:
        bits = np.zeros(words, dtype=np.uint32)
        walks.plain_walk(parser, state, bits)
        expected.append(bits)
    before = walks.scratch_fallbacks
    previous = type(walks).set_plain_walk_scratch_cap(1)
    try:
        for (parser, state), bits in zip(positions, expected):
            capped = np.zeros(words, dtype=np.uint32)
            walks.plain_walk(parser, state, capped)
            assert np.array_equal(capped, bits), (path.stem, parser, state)
    finally:
        type(walks).set_plain_walk_scratch_cap(previous)
    assert walks.scratch_fallbacks - before == len(positions)
