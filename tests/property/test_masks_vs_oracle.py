"""Soundness and completeness of token masks on real tokenizers, against independent oracles.

- Along random reachable prefixes, the allowed set equals the ``regex``-package oracle's
  (tests/oracle.py): a token is allowed iff the output plus its bytes can still be extended to
  a full match; EOS iff ``re.fullmatch`` accepts the output.
- Strings drawn from each regex (hypothesis ``from_regex``), tokenized by the real
  tokenizer, are accepted token by token and end accepting.
- The C++ trie walk equals the pure-Python reference walk on every state it visits.

``make test`` runs a sample; the ``slow`` marker runs the full sweep.
"""

from __future__ import annotations

import random
import re
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import real_tokenizers
import tokamata
from oracle import Oracle, python_dfa
from regex_cases import SEED_000_REGEXES, TABLE
from tokamata.automata.reference import reference_allowed

# (?i) and (?x) patterns are checked against re directly in tests/unit; the regex package's
# case folding is not re's, so it is no oracle for them.
ORACLE_REGEXES = list(dict.fromkeys(
    SEED_000_REGEXES + [p for p, _, _ in TABLE if "(?i" not in p and "(?x" not in p]))
assert len(ORACLE_REGEXES) >= 30

TOKENIZERS = {
    "llama3": real_tokenizers.llama3,
    "gemma3": real_tokenizers.gemma3,
    "qwen2": real_tokenizers.qwen2,
}


def _tokenizer(name: str):
    return TOKENIZERS[name]()


def _walk(constraint, vocab, seed: int, steps: int):
    """Yield (matcher, prefix bytes) along a random reachable path (EOS never taken)."""
    rng = random.Random(seed)
    matcher = constraint.matcher()
    prefix = b""
    eos = set(vocab.eos_token_ids)
    for _ in range(steps):
        yield matcher, prefix
        allowed = [t for t in matcher.allowed_tokens().tolist() if t not in eos]
        if not allowed:
            return
        token = rng.choice(allowed)
        assert matcher.consume(token)
        prefix += vocab.token_bytes[token]


def _check_against_oracle(tokenizer_name: str, pattern: str, walks: int, steps: int) -> None:
    tok = _tokenizer(tokenizer_name)
    vocab = tok.vocab
    constraint = tokamata.compile_regex(pattern, vocab)
    oracle = Oracle(pattern)
    for walk in range(walks):
        seed = zlib.crc32(f"{tokenizer_name}/{pattern}/{walk}".encode())
        for matcher, prefix in _walk(constraint, vocab, seed, steps):
            ours = set(matcher.allowed_tokens().tolist())
            expected = oracle.allowed(vocab, prefix)
            unsound = sorted(ours - expected)[:5]
            incomplete = sorted(expected - ours)[:5]
            assert not unsound and not incomplete, (
                f"{tokenizer_name} {pattern!r} after {prefix!r}: "
                f"allowed but should not be {[vocab.token_bytes[t] for t in unsound]}; "
                f"forbidden but should be {[vocab.token_bytes[t] if t < len(vocab.token_bytes) else t for t in incomplete]}")
            bitmask = tokamata.allocate_bitmask(1, vocab.size)
            matcher.fill_bitmask(bitmask)
            bits = np.unpackbits(bitmask.view(np.uint8), bitorder="little")[: vocab.size]
            assert set(np.flatnonzero(bits).tolist()) == ours


@pytest.mark.parametrize("tokenizer_name", list(TOKENIZERS))
@pytest.mark.parametrize("pattern", ORACLE_REGEXES, ids=[p[:30] for p in ORACLE_REGEXES])
def test_masks_equal_oracle(tokenizer_name, pattern):
    _check_against_oracle(tokenizer_name, pattern, walks=1, steps=3)


@pytest.mark.slow
@pytest.mark.parametrize("tokenizer_name", list(TOKENIZERS) + ["gpt2"])
@pytest.mark.parametrize("pattern", ORACLE_REGEXES, ids=[p[:30] for p in ORACLE_REGEXES])
def test_masks_equal_oracle_sweep(tokenizer_name, pattern):
    TOKENIZERS.setdefault("gpt2", real_tokenizers.gpt2)
    _check_against_oracle(tokenizer_name, pattern, walks=4, steps=8)


@pytest.mark.parametrize("tokenizer_name", list(TOKENIZERS))
@pytest.mark.parametrize("pattern", ORACLE_REGEXES, ids=[p[:30] for p in ORACLE_REGEXES])
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_tokenized_instances_are_accepted(tokenizer_name, pattern, data):
    tok = _tokenizer(tokenizer_name)
    constraint = _compiled(tokenizer_name, pattern)
    text = data.draw(st.from_regex(pattern, fullmatch=True))
    assert re.fullmatch(pattern, text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return  # lone surrogates have no UTF-8 form; no tokenizer can produce them
    ids = tok.encode(text)
    if b"".join(tok.vocab.token_bytes[i] or b"" for i in ids) != text.encode("utf-8"):
        return  # the tokenizer normalizes this text; it cannot emit it verbatim
    matcher = constraint.matcher()
    for position, token in enumerate(ids):
        assert matcher.consume(token), f"refused token {position} {tok.vocab.token_bytes[token]!r} of {text!r}"
    assert matcher.is_accepting()
    assert matcher.consume(tok.vocab.eos_token_ids[0])
    assert matcher.is_terminated()


_COMPILED: dict = {}


def _compiled(tokenizer_name: str, pattern: str):
    key = (tokenizer_name, pattern)
    if key not in _COMPILED:
        _COMPILED[key] = tokamata.compile_regex(pattern, _tokenizer(tokenizer_name).vocab)
    return _COMPILED[key]


@pytest.mark.parametrize("pattern", SEED_000_REGEXES + [r"\w+", r".+", r"[\u4e00-\u9fff]{2,4}"])
def test_core_walk_equals_reference_walk(pattern):
    """Every state visited along random walks: the C++ engine's mask (native derivatives, trie
    walk) == the Python oracle's (Python derivatives and DFA, token by token)."""
    tok = real_tokenizers.qwen2()
    vocab = tok.vocab
    constraint = tokamata.compile_regex(pattern, vocab)
    dfa = python_dfa(pattern)
    seen = set()
    for walk in range(2):
        for matcher, prefix in _walk(constraint, vocab, walk, steps=4):
            state = dfa.run(prefix)
            if state in seen:
                continue
            seen.add(state)
            assert matcher.allowed_tokens().tolist() == reference_allowed(dfa, vocab, state).tolist()
    assert seen
