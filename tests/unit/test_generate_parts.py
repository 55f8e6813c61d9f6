"""The model-free parts of tokamata.generate: its imports, the enumeration behind exact
probability mass, the importance estimate, the per-step arithmetic and sampling, and the
Pipeline over a Backend written here (a bigram table: a real model of its own, small enough
that every probability is a product the test computes by hand).

The models of tests/integration/test_generate.py (transformers) and
test_generate_llama_cpp.py (Gemma 3) check the same Pipeline over real backends.
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import numpy as np
import pytest

import tokamata
from tokamata.errors import InvalidArgument, LimitExceeded
from tokamata.generate import LogProbs, Pipeline
from tokamata.generate.mass import enumerate_language, importance_estimate
from tokamata.generate.scoring import (SamplingParams, check_row, constrained_log_prob, logsumexp, sample,
                                       unconstrained_log_prob)


def test_import_loads_no_model_library():
    code = ("import sys, tokamata, tokamata.generate; "
            "print(sorted(m for m in ('torch', 'transformers', 'llama_cpp') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ------------------------------------------------------------------------- enumeration

TOKENS = [b"a", b"b", b"ab", b"ba", b"c", None, None]  # 5 and 6 are EOS


def spellings(text: bytes) -> list[list[int]]:
    """Every token sequence spelling ``text`` (brute force over sequence lengths)."""
    out = []
    for n in range(1, len(text) + 1):
        for seq in itertools.product(range(5), repeat=n):
            if b"".join(TOKENS[t] for t in seq) == text:
                out.append(list(seq))
    return out


@pytest.mark.parametrize("regex, sentences", [
    ("ab|ba|c", [b"ab", b"ba", b"c"]),
    ("(ab)?c", [b"c", b"abc"]),
    ("a{0,3}", [b"", b"a", b"aa", b"aaa"]),
    ("[ab]{2}", [b"aa", b"ab", b"ba", b"bb"]),
])
def test_enumerate_language_finds_every_tokenization(regex, sentences):
    vocab = tokamata.Vocabulary.from_token_bytes(TOKENS, eos_token_ids=[5, 6])
    matcher = tokamata.compile_regex(regex, vocab).matcher()
    found = enumerate_language(matcher, vocab.eos_token_ids, 1000)
    expected = sorted(seq for s in sentences for seq in (spellings(s) if s else [[]]))
    assert sorted(tokens for tokens, _ in found) == expected
    assert all(ends == [5, 6] for _, ends in found)
    assert matcher.num_consumed == 0  # back where it started


def test_enumerate_language_is_bounded():
    vocab = tokamata.Vocabulary.from_token_bytes(TOKENS, eos_token_ids=[5, 6])
    matcher = tokamata.compile_regex("a+", vocab).matcher()
    with pytest.raises(LimitExceeded) as e:
        enumerate_language(matcher, vocab.eos_token_ids, 50)
    assert (e.value.limit, e.value.value, e.value.bound) == ("max_enumerated_sequences", 51, 50)
    assert matcher.num_consumed == 0
    assert tokamata.Limits().max_enumerated_sequences == 100_000


def test_importance_estimate():
    rng = np.random.default_rng(0)
    weights = rng.uniform(0.1, 0.9, size=50)
    m = importance_estimate(np.log(weights).tolist(), truncated=2)
    assert m.mass == pytest.approx(weights.mean())
    assert m.standard_error == pytest.approx(weights.std(ddof=1) / math.sqrt(50))
    assert (m.method, m.sequences, m.truncated) == ("importance", 50, 2)
    tiny = importance_estimate((np.log(weights) - 800).tolist())  # exp(-800) underflows: scaled first
    assert tiny.log_mass == pytest.approx(m.log_mass - 800)
    assert importance_estimate([-math.inf, -math.inf]).log_mass == -math.inf
    assert math.isnan(importance_estimate([-1.0]).standard_error)


# ----------------------------------------------------------------------- one step's arithmetic


def test_step_arithmetic():
    row = np.array([1.0, 2.0, -np.inf, 0.5], dtype=np.float32)
    probs = np.exp(row.astype(np.float64)) / np.exp(row.astype(np.float64)).sum()
    assert unconstrained_log_prob(row, 1) == pytest.approx(math.log(probs[1]))
    allowed = np.array([True, True, False, False])
    assert constrained_log_prob(row, allowed, 1) == pytest.approx(math.log(probs[1] / probs[:2].sum()))
    assert constrained_log_prob(row, allowed, 3) == -math.inf
    assert constrained_log_prob(row, np.array([False, False, False, True]), 3) == 0.0  # exactly
    assert logsumexp(np.array([], dtype=np.float32)) == -math.inf
    check_row(row, "here")  # -inf is a model's way to forbid a token
    for bad in (np.nan, np.inf):
        with pytest.raises(InvalidArgument, match="here are not finite: token 2"):
            check_row(np.array([0.0, 1.0, bad], dtype=np.float32), "here")
    with pytest.raises(InvalidArgument, match="undefined"):
        constrained_log_prob(row, np.array([False, False, True, False]), 2)


def test_sampling_keeps_to_allowed_top_k_and_top_p():
    row = np.log(np.array([0.4, 0.3, 0.2, 0.1]))
    rng = np.random.default_rng(0)
    allowed = np.array([False, True, True, True])
    assert sample(row, allowed, SamplingParams(False, 1.0, 0, 1.0), rng) == 1  # greedy
    draws = [sample(row, allowed, SamplingParams(True, 1.0, 0, 1.0), rng) for _ in range(3000)]
    counts = np.bincount(draws, minlength=4) / 3000
    assert counts[0] == 0 and counts[1:] == pytest.approx([0.5, 1 / 3, 1 / 6], abs=0.04)
    assert set(sample(row, allowed, SamplingParams(True, 1.0, 2, 1.0), rng) for _ in range(200)) == {1, 2}
    assert set(sample(row, None, SamplingParams(True, 1.0, 0, 0.6), rng) for _ in range(200)) == {0, 1}
    hot = [sample(row, None, SamplingParams(True, 100.0, 0, 1.0), rng) for _ in range(2000)]
    assert np.bincount(hot, minlength=4) / 2000 == pytest.approx([0.25] * 4, abs=0.05)
    for args in [(1, 1.0, 0, 1.0), (True, 0.0, 0, 1.0), (True, math.inf, 0, 1.0), (True, 1.0, -1, 1.0),
                 (True, 1.0, 0, 1.5), (True, 1.0, 0, 0)]:
        with pytest.raises(InvalidArgument):
            SamplingParams(*args)


# ------------------------------------------------------------------- a bigram model backend


class Bigram:
    """A real (if tiny) language model: the next token's logits depend on the last token only."""

    def __init__(self, vocab, seed=0, context_length=64):
        self.vocab = vocab
        self.context_length = context_length
        self.table = np.random.default_rng(seed).normal(0, 2, size=(vocab.size, vocab.size)).astype(np.float32)
        self.calls = 0

    def logits(self, ids, start):
        self.calls += 1
        return np.array(self.table[list(ids)[start - 1:]], copy=True)

    def score(self, prefix, sequences):
        return [self.logits(list(prefix) + list(seq), len(prefix)) for seq in sequences]

    def encode(self, text):
        raise InvalidArgument("token ids only")

    def apply_chat_template(self, messages):
        raise InvalidArgument("no chat template")


def log_p(table, prev, token):
    row = table[prev].astype(np.float64)
    return row[token] - np.log(np.exp(row).sum())


def test_pipeline_over_a_bigram_model():
    tokens = [b"y", b"e", b"s", b"ye", b"es", b"n", b"o", b"no", b"!", None, None]
    vocab = tokamata.Vocabulary.from_token_bytes(tokens, eos_token_ids=[9], size=11)
    model = Bigram(vocab)
    pipe = Pipeline(model)
    c = tokamata.compile_regex("(yes|no)!", vocab)
    exact = pipe.compute_probability_mass([10], c)
    by_hand = []
    for text in (b"yes!", b"no!"):
        for n in range(1, 5):
            for seq in itertools.product(range(9), repeat=n):
                if b"".join(tokens[t] for t in seq) == text:
                    path = [10, *seq, 9]
                    by_hand.append(sum(log_p(model.table, a, b) for a, b in zip(path, path[1:])))
    assert exact.sequences == len(by_hand) == 5  # y-e-s, ye-s, y-es, n-o, no; each then "!"
    assert exact.log_mass == pytest.approx(float(np.logaddexp.reduce(by_hand)))
    estimate = pipe.compute_probability_mass([10], c, method="importance", samples=400, seed=1)
    assert abs(estimate.mass - exact.mass) <= 4 * estimate.standard_error
    out = pipe.generate([10], c, do_sample=True, seed=3)
    assert out.text in ("yes!", "no!") and out.finish_reason == "eos"
    path = [10, *out.token_ids]
    unc = [log_p(model.table, a, b) for a, b in zip(path, path[1:])]
    assert out.log_probs.unconstrained.per_token[0] == pytest.approx(unc)
    # "!" and the EOS after it are forced: constrained 0 exactly, and evaluated in one last call
    assert out.log_probs.constrained.per_token[0][-2:] == [0.0, 0.0]
    assert out.forced_steps == 2 and out.model_calls == len(out.token_ids) - 2 + 1
    assert out.token_strs[-1] == "<9>"
    assert LogProbs.of(out.log_probs.constrained.per_token).cumulative == out.log_probs.constrained.cumulative
