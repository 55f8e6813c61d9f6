"""Speculative decoding under a constraint (issue 21 item 2; seed 000, section 5.3):
``Pipeline.generate(..., draft=...)``.

Models: a target LlamaForCausalLM (hidden size 64, two layers, fixed seed) over the real Llama 3
vocabulary and tokenizer, as in test_generate.py, and a draft made from it by keeping its first
layer only (its embeddings, first layer, final norm and head: a layer-skip draft that agrees
with the target often, but not always, so both acceptance and rejection run). For the
distribution checks, bigram models over a small vocabulary (fast enough for thousands of
samples).

Oracles: plain ``Pipeline.generate`` with the same target (greedy: the same tokens, the same
log-probabilities); Python ``re``, ``json`` + ``jsonschema`` and Lark for the language; the
exact constrained distribution of the target (``compute_probability`` over every token
sequence of a finite language, from ``enumerate_language``) and plain constrained sampling for
the chi-square tests; a spy over the real matcher for the one-row-per-position rule.
"""

from __future__ import annotations

import collections
import json
import math
import os
import re

import numpy as np
import pytest

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

torch = pytest.importorskip("torch", reason="needs torch: pip install 'tokamata[transformers]'")
transformers = pytest.importorskip("transformers", reason="needs transformers: pip install 'tokamata[transformers]'")

import jsonschema  # noqa: E402
import lark  # noqa: E402

import tokamata  # noqa: E402
import tokamata.generate.pipeline as pipeline_module  # noqa: E402
from tokamata.errors import InvalidArgument  # noqa: E402
from tokamata.generate import Pipeline  # noqa: E402
from tokamata.generate.mass import enumerate_language  # noqa: E402

import real_tokenizers  # noqa: E402

PROMPT = "Question: is the sky blue? Answer:"
ATOL = 2e-4  # float32 logits of two computation orders (a one-token and a k-token forward pass)

LARK = ('start: "let " NAME " = " expr ";"\nexpr: atom | atom " + " atom\natom: NUMBER | NAME\n'
        'NAME: /[a-z][a-z0-9_]{0,3}/\nNUMBER: /[0-9]{1,3}/')  # (finite: a sampled output ends)
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 120},
                                           "tag": {"enum": ["red", "green"]}},
          "required": ["name", "age", "tag"], "additionalProperties": False}

# (name, compile, language check of a finished output's text)
CONSTRAINTS = [
    ("regex", lambda v: tokamata.compile_regex(r"[a-z]{1,6}( [a-z]{1,6}){0,3}\.", v),
     lambda text: re.fullmatch(r"[a-z]{1,6}( [a-z]{1,6}){0,3}\.", text) is not None),
    ("date", lambda v: tokamata.compile_regex(r"\d{4}-[01]\d-[0-3]\d", v),
     lambda text: re.fullmatch(r"\d{4}-[01]\d-[0-3]\d", text) is not None),
    ("json_schema", lambda v: tokamata.compile_json_schema(SCHEMA, v), lambda text: _valid_json(text)),
    ("lark", lambda v: tokamata.compile_grammar(LARK, v), lambda text: _parses(text)),
]


def _valid_json(text: str) -> bool:
    try:
        jsonschema.validate(json.loads(text), SCHEMA)
    except (ValueError, jsonschema.ValidationError):
        return False
    return True


def _parses(text: str) -> bool:
    try:
        lark.Lark(LARK, parser="earley").parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tokenizer():
    path = real_tokenizers.llama3_tokenizer_json()
    return transformers.PreTrainedTokenizerFast(tokenizer_file=str(path), bos_token="<|begin_of_text|>",
                                                eos_token="<|eot_id|>")


def _config(layers: int):
    return transformers.LlamaConfig(
        vocab_size=128256, hidden_size=64, intermediate_size=128, num_hidden_layers=layers, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=256, bos_token_id=128000, eos_token_id=128009)


@pytest.fixture(scope="module")
def models():
    torch.manual_seed(0)
    target = transformers.LlamaForCausalLM(_config(2)).eval()
    with torch.no_grad():
        target.lm_head.weight.mul_(20.0)  # sharper than the tiny init: real choices, unequal weights
        for layer in target.model.layers:  # layers that matter, so the one-layer draft differs
            layer.mlp.down_proj.weight.mul_(8.0)
    draft = transformers.LlamaForCausalLM(_config(1)).eval()
    state = {k: v for k, v in target.state_dict().items() if not k.startswith("model.layers.1.")}
    draft.load_state_dict(state)
    return target, draft


@pytest.fixture(scope="module")
def pipe(models, tokenizer):
    return Pipeline(models[0], tokenizer)


@pytest.fixture(scope="module")
def constraints(pipe):
    return {name: (make(pipe.vocab), check) for name, make, check in CONSTRAINTS}


def _close(a, b):
    return np.allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), atol=ATOL, rtol=0)


# ------------------------------------------------------------------------- greedy: plain's tokens


@pytest.mark.parametrize("name", [name for name, _, _ in CONSTRAINTS])
@pytest.mark.parametrize("k", [1, 3, 6])
def test_greedy_speculative_is_greedy_plain(pipe, models, constraints, name, k):
    c, check = constraints[name]
    plain = pipe.generate(PROMPT, c, max_new_tokens=40)
    pipe.backend.reset()  # (the target evaluates afresh: nothing reused from the plain run)
    spec = pipe.generate(PROMPT, c, max_new_tokens=40, draft=models[1], num_draft_tokens=k)
    assert spec.token_ids == plain.token_ids
    assert spec.finish_reason == plain.finish_reason and spec.forced_steps == plain.forced_steps
    assert _close(spec.log_probs.unconstrained.per_token, plain.log_probs.unconstrained.per_token)
    assert _close(spec.log_probs.constrained.per_token, plain.log_probs.constrained.per_token)
    if plain.finished:
        assert check(plain.text)
    assert 0 <= spec.draft_accepted <= spec.draft_proposed <= spec.draft_calls + 0
    # every round makes at most one target call, and a round keeps at least one token
    assert spec.model_calls <= len(spec.token_ids) - spec.forced_steps + 1


def test_the_draft_is_right_often_but_not_always(pipe, models, constraints):
    accepted = proposed = 0
    for name in constraints:
        out = pipe.generate(PROMPT, constraints[name][0], max_new_tokens=40, draft=models[1], num_draft_tokens=4)
        accepted += out.draft_accepted
        proposed += out.draft_proposed
    assert 0 < accepted < proposed  # both branches of the rule ran


def test_unconstrained_greedy_and_response_prefix(pipe, models, tokenizer):
    plain = pipe.generate(PROMPT, max_new_tokens=12)
    spec = pipe.generate(PROMPT, max_new_tokens=12, draft=models[1], num_draft_tokens=3)
    assert spec.token_ids == plain.token_ids and spec.forced_steps == 0
    assert _close(spec.log_probs.unconstrained.per_token, plain.log_probs.unconstrained.per_token)
    c = tokamata.compile_regex(r"[a-z]{1,6}( [a-z]{1,6}){0,3}\.", pipe.vocab)
    prefix = tokenizer("the", add_special_tokens=False)["input_ids"]
    plain = pipe.generate(PROMPT, c, max_new_tokens=20, response_prefix=prefix)
    spec = pipe.generate(PROMPT, c, max_new_tokens=20, response_prefix=prefix, draft=models[1])
    assert spec.token_ids == plain.token_ids and spec.token_ids[: len(prefix)] == prefix


# ----------------------------------------------------------------- sampling: always in the language


@pytest.mark.parametrize("name", [name for name, _, _ in CONSTRAINTS])
def test_sampled_outputs_are_in_the_language(pipe, models, constraints, name):
    c, check = constraints[name]
    for seed in range(4):
        out = pipe.generate(PROMPT, c, max_new_tokens=64, do_sample=True, seed=seed, temperature=0.8,
                            draft=models[1], num_draft_tokens=4)
        assert c.matcher().consume_many(out.token_ids) == len(out.token_ids)
        assert out.finished and check(out.text), out.text


# --------------------------------------------------------------------------- one row per position


class Spy:
    """The real matcher, recording the position (the tokens consumed so far) of every mask row
    filled: a position must never be filled twice."""

    def __init__(self, matcher):
        self.matcher = matcher
        self.stack: list[int] = []
        self.filled: list[tuple[int, ...]] = []

    def __getattr__(self, name):
        return getattr(self.matcher, name)

    def fill_bitmask(self, bitmask, index=0, **kw):
        self.filled.append(tuple(self.stack))
        return self.matcher.fill_bitmask(bitmask, index, **kw)

    def fill_bitmask_draft(self, tokens, bitmask, start_index=0):
        tokens = list(tokens)
        written = self.matcher.fill_bitmask_draft(tokens, bitmask, start_index)
        self.filled.extend(tuple(self.stack + tokens[:i]) for i in range(written))
        return written

    def consume(self, token):
        ok = self.matcher.consume(token)
        if ok:
            self.stack.append(int(token))
        return ok

    def consume_many(self, tokens):
        count = self.matcher.consume_many(tokens)
        self.stack.extend(int(t) for t in list(tokens)[:count])
        return count

    def rollback(self, n=1):
        self.matcher.rollback(n)
        del self.stack[len(self.stack) - n:]


@pytest.mark.parametrize("name", ["regex", "json_schema", "lark"])
@pytest.mark.parametrize("settings", [dict(), dict(do_sample=True, seed=3)])
def test_every_mask_row_is_computed_once_per_position(pipe, models, constraints, monkeypatch, name, settings):
    spies = []
    real = pipeline_module.constraint_matcher

    def spying(*args, **kwargs):
        spies.append(Spy(real(*args, **kwargs)))
        return spies[-1]

    monkeypatch.setattr(pipeline_module, "constraint_matcher", spying)
    c = constraints[name][0]
    out = pipe.generate(PROMPT, c, max_new_tokens=40, draft=models[1], num_draft_tokens=4, **settings)
    (spy,) = spies
    assert spy.stack == out.token_ids  # rolled back over every rejected draft token
    counts = collections.Counter(spy.filled)
    assert max(counts.values()) == 1, [p for p, n in counts.items() if n > 1][:3]
    # and the rows were enough: every non-forced output position had its row
    assert len(spy.filled) >= len(out.token_ids) - out.forced_steps


# ---------------------------------------------------------------------------------- bad input


def test_bad_input(pipe, models, constraints):
    c = constraints["regex"][0]
    for k in (0, -1, 1.5, True):
        with pytest.raises(InvalidArgument, match="num_draft_tokens"):
            pipe.generate(PROMPT, c, draft=models[1], num_draft_tokens=k)
    with pytest.raises(InvalidArgument, match="own backend"):
        pipe.generate(PROMPT, c, draft=pipe)
    other = tokamata.Vocabulary.from_token_bytes([b"a", b"b", None], eos_token_ids=[2])
    with pytest.raises(InvalidArgument, match="the draft model is over a vocabulary of 3"):
        pipe.generate(PROMPT, c, draft=Bigram(other))
    with pytest.raises(InvalidArgument):
        pipe.generate(PROMPT, c, draft="not a model")


@pytest.mark.parametrize("name", ["regex", "json_schema", "lark"])
def test_draft_ids_of_minus_one_are_refused(constraints, name):
    m = constraints[name][0].matcher()
    bitmask = tokamata.allocate_bitmask(4, m.constraint.vocab_size)
    for bad in ([-1], [0, -1], np.array([5, -1], dtype=np.int32)):
        with pytest.raises(InvalidArgument, match="padding"):
            m.validate_tokens(bad)
        with pytest.raises(InvalidArgument):
            m.fill_bitmask_draft(bad, bitmask)
        with pytest.raises(InvalidArgument):
            tokamata.fill_bitmasks_draft([m], [bad], bitmask)
    assert m.num_consumed == 0 and not bitmask.any()


# ------------------------------------------------------------------- the distribution (bigrams)


class Bigram:
    """A tiny language model: the next token's logits depend on the last token only."""

    def __init__(self, vocab, seed=0, scale=1.5):
        self.vocab = vocab
        self.context_length = 64
        self.table = np.random.default_rng(seed).normal(0, scale, size=(vocab.size, vocab.size)).astype(np.float32)

    def logits(self, ids, start):
        return np.array(self.table[list(ids)[start - 1:]], copy=True)

    def score(self, prefix, sequences):
        return [self.logits(list(prefix) + list(seq), len(prefix)) for seq in sequences]

    def encode(self, text):
        raise InvalidArgument("token ids only")

    def apply_chat_template(self, messages):
        raise InvalidArgument("no chat template")


TOKENS = [b"y", b"e", b"s", b"ye", b"es", b"n", b"o", b"no", b"!", b"yes", None, None]
FINITE = r"(yes|no|ye)(!|!!)?"  # 9 sentences, 24 token sequences (several tokenizations each)


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for X ~ chi-square(df): 1 - P(df/2, x/2), the regularized lower gamma by its series."""
    a, z = df / 2.0, x / 2.0
    if z <= 0:
        return 1.0
    term = total = 1.0 / a
    n = 0
    while term > total * 1e-15 and n < 10_000:
        n += 1
        term *= z / (a + n)
        total += term
    return max(0.0, 1.0 - math.exp(-z + a * math.log(z) - math.lgamma(a)) * total)


def goodness_of_fit(counts: dict, probs: dict) -> float:
    """The chi-square test's p-value of ``counts`` against ``probs`` (bins of expected < 5 pooled)."""
    n = sum(counts.values())
    assert set(counts) <= set(probs)
    stat, df, pooled_obs, pooled_exp = 0.0, -1, 0, 0.0
    for key, p in probs.items():
        expected, observed = n * p, counts.get(key, 0)
        if expected < 5:
            pooled_obs += observed
            pooled_exp += expected
            continue
        stat += (observed - expected) ** 2 / expected
        df += 1
    if pooled_exp > 0:
        stat += (pooled_obs - pooled_exp) ** 2 / pooled_exp
        df += 1
    return chi2_sf(stat, df)


def two_sample(a: dict, b: dict) -> float:
    """The chi-square test's p-value that two samples of equal size come from one distribution."""
    keys = [k for k in set(a) | set(b) if a.get(k, 0) + b.get(k, 0) >= 10]
    rest = sum(v for k, v in a.items() if k not in keys), sum(v for k, v in b.items() if k not in keys)
    cells = [(a.get(k, 0), b.get(k, 0)) for k in keys] + ([rest] if sum(rest) else [])
    stat = sum((x - y) ** 2 / (x + y) for x, y in cells)
    return chi2_sf(stat, len(cells) - 1)


@pytest.fixture(scope="module")
def bigrams():
    vocab = tokamata.Vocabulary.from_token_bytes(TOKENS, eos_token_ids=[10], size=12)
    target, draft = Pipeline(Bigram(vocab, seed=0)), Bigram(vocab, seed=7)
    return vocab, target, draft


def exact_distribution(pipe, c):
    """Every token sequence of the language (EOS included) and its probability under plain
    constrained sampling at temperature 1: the constrained log-probability."""
    found = enumerate_language(c.matcher(), pipe.vocab.eos_token_ids, 10_000)
    sequences = [tuple(tokens) + (end,) for tokens, ends in found for end in ends]
    scored = pipe.compute_probability([11], [list(s) for s in sequences], c)
    probs = {s: math.exp(lp) for s, lp in zip(sequences, scored.constrained.cumulative)}
    assert sum(probs.values()) == pytest.approx(1.0)
    return probs


def frequencies(pipe, c, n, seed, **settings):
    counts = collections.Counter()
    proposed = accepted = 0
    for i in range(n):
        out = pipe.generate([11], c, do_sample=True, seed=seed * 100_000 + i, max_new_tokens=16, **settings)
        assert out.finished
        counts[tuple(out.token_ids)] += 1
        proposed += out.draft_proposed
        accepted += out.draft_accepted
    return counts, proposed, accepted


@pytest.mark.parametrize("k", [1, 3])
def test_speculative_sampling_has_the_targets_distribution(bigrams, k):
    vocab, target, draft = bigrams
    c = tokamata.compile_regex(FINITE, vocab)
    exact = exact_distribution(target, c)
    assert len(exact) == 24
    counts, proposed, accepted = frequencies(target, c, 3000, seed=k, draft=draft, num_draft_tokens=k)
    assert goodness_of_fit(counts, exact) > 1e-3
    assert 0 < accepted < proposed
    # the test has power: the draft's own constrained distribution is far from the target's
    alone = Pipeline(draft)
    wrong, _, _ = frequencies(alone, c, 3000, seed=k)
    assert goodness_of_fit(wrong, exact) < 1e-6


def test_speculative_sampling_with_temperature_and_top_k_matches_plain(bigrams):
    vocab, target, draft = bigrams
    c = tokamata.compile_regex(FINITE, vocab)
    settings = dict(temperature=0.6, top_k=2)
    plain, _, _ = frequencies(target, c, 3000, seed=5, **settings)
    spec, proposed, accepted = frequencies(target, c, 3000, seed=6, draft=draft, num_draft_tokens=2, **settings)
    assert two_sample(plain, spec) > 1e-3
    assert 0 < accepted < proposed
    alone, _, _ = frequencies(Pipeline(draft), c, 3000, seed=5, **settings)
    assert two_sample(plain, alone) < 1e-6
