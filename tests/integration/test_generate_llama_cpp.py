"""tokamata.generate over llama-cpp-python with the real Gemma 3 270M (Q4_K_M GGUF, CPU).

The oracle evaluates each sequence afresh (``Llama.reset``, the prompt, then one token per
``Llama.eval``; the pipeline's backend reuses the evaluated prefix, and evaluates forced runs
and response prefixes in one call) and
computes log-softmax and the masked renormalization over ``Matcher.allowed_tokens()`` with
numpy here. The exact probability mass is checked against a sum over every tokenization of
each sentence, found by a dynamic program over the GGUF's token bytes.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.model

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

llama_cpp = pytest.importorskip("llama_cpp", reason="needs llama-cpp-python: pip install llama-cpp-python")

import tokamata  # noqa: E402
from tokamata.bitmask import unpack_bitmask  # noqa: E402
from tokamata.errors import InvalidArgument  # noqa: E402
from tokamata.generate import Pipeline  # noqa: E402
from token_sequences import tokenizations  # noqa: E402

_TOOLS = str(Path(__file__).resolve().parents[2] / "tools")
if _TOOLS not in sys.path:
    sys.path.append(_TOOLS)
from demo_model import ModelUnavailable, gemma3_270m_path  # noqa: E402

PROMPT = "Question: Is the Pacific the largest ocean on Earth?\nAnswer:"
# llama.cpp's quantized CPU kernels give logits that depend on how tokens are batched: the same
# sequence evaluated in one batch or as a batch plus single tokens differs by up to 0.075 nats
# (measured on this model and prompt). The oracle evaluates the prompt as one batch and then
# each token alone; the pipeline batches forced runs and its final pass.
ATOL = 0.15

GEMMA_TEMPLATE = ("{{ bos_token }}{% for m in messages %}<start_of_turn>{{ m['role'] }}\n{{ m['content'] }}"
                  "{% if not loop.last %}<end_of_turn>\n{% endif %}{% endfor %}"
                  "{% if add_generation_prompt %}<end_of_turn>\n<start_of_turn>model\n{% endif %}")


@pytest.fixture(scope="module")
def llm():
    try:
        path = gemma3_270m_path(quiet=True)
    except ModelUnavailable as exc:
        pytest.skip(str(exc))
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    model = llama_cpp.Llama(model_path=str(path), n_ctx=256, n_threads=threads, n_threads_batch=threads,
                            logits_all=True, verbose=False)
    yield model
    model.close()


@pytest.fixture(scope="module")
def pipe(llm):
    return Pipeline(llm, chat_template=GEMMA_TEMPLATE)


def oracle_rows(llm, ids, prompt_length):
    llm.reset()
    llm.eval(list(ids[:prompt_length]))
    for t in ids[prompt_length:]:
        llm.eval([t])
    logits = np.array(llm.scores[: len(ids)], dtype=np.float64)
    top = logits.max(axis=1, keepdims=True)
    return logits, logits - (top + np.log(np.exp(logits - top).sum(axis=1, keepdims=True)))


def test_log_probs_equal_the_oracle(pipe, llm):
    for regex, settings in [(r"(Yes|No)\.", dict()), (r"(Yes|No), [a-z]+( [a-z]+){0,3}\.",
                                                         dict(do_sample=True, seed=1, max_new_tokens=10))]:
        c = tokamata.compile_regex(regex, pipe.vocab)
        out = pipe.generate(PROMPT, c, **settings)
        if out.finish_reason == "eos":
            assert re.fullmatch(regex, out.text)
        logits, logp = oracle_rows(llm, out.prompt_ids + out.token_ids, len(out.prompt_ids))
        n = len(out.prompt_ids)
        matcher = c.matcher()
        unc, con = [], []
        buf = tokamata.allocate_bitmask(1, c.vocab_size)
        for j, t in enumerate(out.token_ids):
            row = logits[n - 1 + j]
            if out.budget is None:
                allowed = matcher.allowed_tokens()
            else:  # (the budget's rows: budget - j tokens left, EOS included)
                matcher.fill_bitmask(buf, 0, max_tokens=out.budget - j)
                allowed = np.flatnonzero(unpack_bitmask(buf[0], c.vocab_size))
            top = row[allowed].max()
            unc.append(logp[n - 1 + j, t])
            con.append(row[t] - (top + np.log(np.exp(row[allowed] - top).sum())))
            assert matcher.consume(t)
        np.testing.assert_allclose(out.log_probs.unconstrained.per_token[0], unc, atol=ATOL, rtol=0)
        np.testing.assert_allclose(out.log_probs.constrained.per_token[0], con, atol=ATOL, rtol=0)
        assert out.model_calls <= len(out.token_ids) - out.forced_steps + 1


@pytest.mark.slow  # about 10 s on 2 busy cores: 3 x 10 sequences evaluated on llama.cpp
def test_exact_mass_and_compute_probability(pipe, llm):
    c = tokamata.compile_regex(r"No", pipe.vocab)  # "No", "N" "o", and byte-fallback spellings
    exact = pipe.compute_probability_mass(PROMPT, c)
    prompt_ids = llm.tokenize(PROMPT.encode(), add_bos=True, special=True)
    terms, sequences = [], []
    for sentence in (b"No",):
        for seq in tokenizations(pipe.vocab, sentence):
            _, logp = oracle_rows(llm, prompt_ids + seq, len(prompt_ids))
            n = len(prompt_ids)
            body = sum(logp[n - 1 + j, t] for j, t in enumerate(seq))
            terms.extend(body + logp[-1, e] for e in pipe.vocab.eos_token_ids)
            sequences.extend(seq + [e] for e in pipe.vocab.eos_token_ids)
    top = max(terms)
    expected = top + np.log(sum(np.exp(t - top) for t in terms))
    assert exact.sequences == len(terms)
    assert exact.log_mass == pytest.approx(expected, abs=ATOL)
    scored = pipe.compute_probability(PROMPT, tokens=sequences, constraint=c)
    assert len(sequences) >= 6
    for got, want, seq in zip(scored.unconstrained.cumulative, terms, sequences):
        assert got == pytest.approx(want, abs=ATOL * len(seq))


def test_messages(pipe, llm):
    messages = [{"role": "user", "content": "Is the Pacific the largest ocean?"},
                {"role": "model", "content": "Answer:"}]
    out = pipe.generate(messages[:1], tokamata.compile_regex(r"(Yes|No)", pipe.vocab))
    assert llm.detokenize(out.prompt_ids, special=True).decode().endswith("<start_of_turn>model\n")
    bare = Pipeline(llm)
    with pytest.raises(InvalidArgument, match="no tokenizer.chat_template"):
        bare.generate(messages, None)


def test_logits_all_is_required():
    try:
        path = gemma3_270m_path(quiet=True)
    except ModelUnavailable as exc:
        pytest.skip(str(exc))
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=64, n_batch=32, verbose=False)
    try:
        with pytest.raises(InvalidArgument, match="logits_all=True"):
            Pipeline(llm)
    finally:
        llm.close()


def test_speculative_decoding_with_a_second_llama(pipe, llm):
    """Gemma 3 as its own draft (a second ``Llama``): the target verifies each draft in one
    batched ``eval``. The draft evaluates one token at a time and the target in batches, and
    llama.cpp's quantized logits depend on batching (see ATOL), so near-ties may differ: the
    checks are the language, a high acceptance rate, and the log-probabilities of the tokens the
    two runs share against the plain run's."""
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    draft = llama_cpp.Llama(model_path=llm.model_path, n_ctx=256, n_threads=threads, logits_all=True, verbose=False)
    try:
        regex = r"(Yes|No), [a-z]+( [a-z]+){0,3}\."
        c = tokamata.compile_regex(regex, pipe.vocab)
        plain = pipe.generate(PROMPT, c, max_new_tokens=16)
        spec = pipe.generate(PROMPT, c, max_new_tokens=16, draft=draft, num_draft_tokens=4)
        if spec.finished:
            assert re.fullmatch(regex, spec.text)
        assert spec.draft_proposed > 0 and spec.acceptance_rate >= 0.75
        assert spec.model_calls < plain.model_calls  # one target call per round, not per token
        same = 0
        while same < min(len(plain.token_ids), len(spec.token_ids)) and plain.token_ids[same] == spec.token_ids[same]:
            same += 1
        assert same >= 1
        np.testing.assert_allclose(spec.log_probs.unconstrained.per_token[0][:same],
                                   plain.log_probs.unconstrained.per_token[0][:same], atol=ATOL, rtol=0)
        sampled = pipe.generate(PROMPT, c, max_new_tokens=16, do_sample=True, seed=2, draft=draft)
        assert c.matcher().consume_many(sampled.token_ids) == len(sampled.token_ids)
    finally:
        draft.close()
