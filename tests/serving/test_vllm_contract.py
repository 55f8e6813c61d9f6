"""tokamata behind vLLM's own structured-output contract (vLLM 0.33.0's base classes, enums,
config and padding helper), replaying the scheduler's call pattern: compile in a thread pool,
fill -> accept each draft -> rollback for the speculative rows, validate drafts (with -1
padding), accept the verified tokens, reject-then-terminate. Every row is compared with a plain
tokamata Matcher replay. Runs in the serving environment (make serving-env); skipped elsewhere."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed here: run `make test-serving` (it builds "
                                          ".cache/venv-serving from PyPI)")

import tokamata  # noqa: E402
import tokamata.integrations.vllm as tv  # noqa: E402
from serving_cases import REQUESTS, STOP, encode, hf_tokenizer, oracle_constraint, oracle_rows  # noqa: E402
from vllm.config import StructuredOutputsConfig  # noqa: E402
from vllm.sampling_params import SamplingParams, StructuredOutputsParams  # noqa: E402
from vllm.v1.structured_output.backend_types import (StructuredOutputBackend, StructuredOutputGrammar,  # noqa: E402
                                                     StructuredOutputOptions)
from vllm.v1.structured_output.utils import strip_speculative_padding  # noqa: E402

VOCAB_SIZE = 128256
DRAFT = 4


@pytest.fixture(scope="module")
def backend():
    tv.install()
    config = StructuredOutputsConfig(backend="tokamata")
    made = tv.TokamataBackend(config, tokenizer=hf_tokenizer(), vocab_size=VOCAB_SIZE)
    yield made
    made.destroy()


def words(bitmask, row: int) -> np.ndarray:
    return bitmask[row].numpy().view(np.uint32).copy()


def test_install_makes_the_backend_name_work():
    tv.install()
    assert StructuredOutputsConfig(backend="tokamata").backend == "tokamata"
    params = SamplingParams(structured_outputs=StructuredOutputsParams(regex=r"\d+"))
    params._validate_structured_outputs(None, StructuredOutputsConfig(backend="tokamata"), hf_tokenizer())
    assert params.structured_outputs._backend == "tokamata"
    tag = SamplingParams(structured_outputs=StructuredOutputsParams(structural_tag='{"structures": []}'))
    tag._validate_structured_outputs(None, StructuredOutputsConfig(backend="tokamata"), hf_tokenizer())
    assert tag.structured_outputs._backend == "tokamata"
    assert issubclass(tv.TokamataBackend, StructuredOutputBackend)
    assert issubclass(tv.TokamataGrammar, StructuredOutputGrammar)


def test_install_refuses_other_vllm_versions(monkeypatch):
    monkeypatch.setattr(vllm, "__version__", "0.32.1")
    with pytest.raises(tokamata.Unsupported, match="0.32.1"):
        tv.install()


def replay(backend, grammar, kind, spec, text, rng):
    """The scheduler's steps for one request with drafts of DRAFT tokens (the last draft of
    a step wrong half the time), checking every row against the Matcher replay."""
    tokens = encode(text) + [128009]
    expected = oracle_rows(oracle_constraint(kind, spec, backend.vocab), tokens[:-1], STOP)
    bitmask = backend.allocate_token_bitmask(1 + DRAFT)
    done = 0
    while not grammar.is_terminated():
        drafts = tokens[done: done + DRAFT]
        if drafts and rng.random() < 0.5:
            drafts[-1] = rng.randrange(VOCAB_SIZE)  # a wrong guess (or, rarely, a right one)
        padded = drafts + [-1] * (DRAFT - len(drafts))
        valid = grammar.validate_tokens(padded)
        # validate: the accepted prefix, state unchanged
        assert grammar.num_processed_tokens == done
        checker = oracle_constraint(kind, spec, backend.vocab).matcher()
        checker.consume_many(tokens[:done])
        prefix = []
        for t in strip_speculative_padding(padded):
            if t in STOP:
                if checker.is_accepting():
                    prefix.append(t)
                break
            if not checker.consume(t):
                break
            prefix.append(t)
        assert valid == prefix
        # grammar_bitmask: fill -> accept each scheduled draft -> ..., then roll back
        advanced = 0
        for i, t in enumerate(valid):
            grammar.fill_bitmask(bitmask, i)
            assert np.array_equal(words(bitmask, i), expected[done + i]), (text, done + i)
            if grammar.is_terminated() or not grammar.accept_tokens("r", [t]):
                break
            advanced += 1
        grammar.fill_bitmask(bitmask, advanced)
        if not grammar.is_terminated():
            assert np.array_equal(words(bitmask, advanced), expected[done + advanced])
        grammar.rollback(advanced)
        assert grammar.num_processed_tokens == done and not grammar.is_terminated()
        # the model verifies: the right drafts plus one bonus token
        right = 0
        while right < len(valid) and valid[right] == tokens[done + right]:
            right += 1
        verified = tokens[done: done + right + 1]
        assert grammar.accept_tokens("r", verified)
        done += len(verified)
    assert done == len(tokens) and grammar.num_processed_tokens == len(tokens)
    # after the end: tokens are ignored, rows allow only the stop ids
    assert grammar.accept_tokens("r", [1]) and grammar.validate_tokens([1]) == []


@pytest.mark.parametrize("kind, spec, text", REQUESTS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(REQUESTS)])
def test_scheduler_call_pattern(backend, kind, spec, text):
    with ThreadPoolExecutor(2) as pool:  # vLLM compiles in a thread pool
        grammar = pool.submit(backend.compile_grammar, StructuredOutputOptions[kind], spec, STOP).result()
    replay(backend, grammar, kind, spec, text, random.Random(text))
    grammar.reset()
    assert grammar.num_processed_tokens == 0 and not grammar.is_terminated()
    assert grammar.accept_tokens("r", encode(text)) and grammar.validate_tokens([128009]) == [128009]


def test_reject_then_terminate_and_stop_ids(backend):
    grammar = backend.compile_grammar(StructuredOutputOptions.REGEX, r"[0-9]{2}", {128009, 128008})
    bitmask = backend.allocate_token_bitmask(1)
    assert grammar.accept_tokens("r", encode("1"))
    assert not grammar.accept_tokens("r", [128009])  # a stop id before the output is complete
    assert not grammar.accept_tokens("r", encode("x"))  # rejected: vLLM finishes the request
    assert grammar.accept_tokens("r", encode("2"))
    grammar.fill_bitmask(bitmask, 0)
    allowed = np.flatnonzero(np.unpackbits(words(bitmask, 0).view(np.uint8), bitorder="little")).tolist()
    assert allowed == [128008, 128009]  # the request's stop ids, not the vocabulary's other EOS
    assert grammar.accept_tokens("r", [128008, 5, 6]) and grammar.is_terminated()
    grammar.rollback(1)
    assert not grammar.is_terminated() and grammar.num_processed_tokens == 2


@pytest.mark.parametrize("kind, spec, error", [
    ("JSON", '{"type": "object", "properties": {"a": {"type": "nope"}}}', tokamata.SchemaError),
    ("JSON", '{"type": ', tokamata.SchemaError),
    ("REGEX", "a(b", tokamata.InvalidSyntax),
    ("REGEX", r"(a)\1", tokamata.Unsupported),
    ("GRAMMAR", 'root ::= "a" undefined', tokamata.InvalidSyntax),
    ("GRAMMAR", "start: (", tokamata.InvalidSyntax),
    ("CHOICE", "[]", tokamata.InvalidArgument),
    ("STRUCTURAL_TAG", '{"structures": [], "triggers": []}', tokamata.InvalidSyntax),
    ("STRUCTURAL_TAG", '{"type": "structural_tag", "format": {"type": "json_schema", "json_schema": {}, '
                       '"style": "qwen_xml"}}', tokamata.Unsupported),
])
def test_bad_specs_fail_their_request_alone(backend, kind, spec, error):
    good = backend.compile_grammar(StructuredOutputOptions.REGEX, "ok")
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(backend.compile_grammar, StructuredOutputOptions[kind], spec, STOP)
        with pytest.raises(error):
            future.result()  # (vLLM's Future carries this to that request)
    assert good.accept_tokens("r", encode("ok")) and good.validate_tokens([128009]) == [128009]


def test_out_of_range_ids_and_vocab_size_mismatch():
    config = StructuredOutputsConfig(backend="tokamata")
    tv.install()
    with pytest.raises(tokamata.VocabularyError, match="EOS"):  # no EOS id left within the logits
        tv.TokamataBackend(config, tokenizer=hf_tokenizer(), vocab_size=128000)
    for size in (128005, 128512):  # logits narrower than the tokenizer (its last ids dropped), wider (padding)
        backend = tv.TokamataBackend(config, tokenizer=hf_tokenizer(), vocab_size=size)
        bitmask = backend.allocate_token_bitmask(1)
        assert bitmask.shape == (1, (size + 31) // 32)
        grammar = backend.compile_grammar(StructuredOutputOptions.JSON_OBJECT, "")
        grammar.fill_bitmask(bitmask, 0)
        allowed = np.flatnonzero(np.unpackbits(words(bitmask, 0).view(np.uint8), bitorder="little"))
        assert allowed.max() < min(size, 128000)
        assert grammar.validate_tokens([size, 5]) == [] and not grammar.accept_tokens("r", [size + 7])
        assert not grammar.accept_tokens("r", [-3])


def test_limit_crossed_mid_generation_fails_that_request_alone():
    tv.install(limits=tokamata.Limits(max_dfa_states=40))
    try:
        backend = tv.TokamataBackend(StructuredOutputsConfig(backend="tokamata"), tokenizer=hf_tokenizer(),
                                     vocab_size=VOCAB_SIZE)
        heavy = backend.compile_grammar(StructuredOutputOptions.REGEX, "[a-z]{0,200}!", STOP)
        light = backend.compile_grammar(StructuredOutputOptions.REGEX, "ab", STOP)
        bitmask = backend.allocate_token_bitmask(2)
        failed = None
        for token in encode("abcdefghijklmnopqrstuvwxyz" * 4):
            heavy.fill_bitmask(bitmask, 0)
            if heavy.error is not None:
                failed = heavy.error
                break
            if not heavy.accept_tokens("r", [token]):
                break
        assert isinstance(failed, tokamata.LimitExceeded) and failed.limit == "max_dfa_states"
        allowed = np.flatnonzero(np.unpackbits(words(bitmask, 0).view(np.uint8), bitorder="little")).tolist()
        assert allowed == sorted(STOP)  # the row lets the request end
        assert not heavy.accept_tokens("r", encode("a"))  # vLLM finishes it with FINISHED_ERROR
        light.fill_bitmask(bitmask, 1)
        assert light.accept_tokens("r", encode("ab")) and light.validate_tokens([128009]) == [128009]
    finally:
        tv.install()


def test_64_requests_over_8_threads_share_cached_constraints(backend):
    """Each thread runs 8 requests (the 7 kinds, round robin), filling its own rows; every row
    equals the single-threaded Matcher replay, and each spec compiled once."""
    before = backend.cache.misses
    jobs = [REQUESTS[i % len(REQUESTS)] for i in range(64)]
    expected = {}
    for kind, spec, text in REQUESTS:
        tokens = encode(text)
        expected[(kind, spec)] = (tokens, oracle_rows(oracle_constraint(kind, spec, backend.vocab), tokens, STOP))

    def run(job):
        kind, spec, text = job
        grammar = backend.compile_grammar(StructuredOutputOptions[kind], spec, STOP)
        tokens, rows = expected[(kind, spec)]
        bitmask = backend.allocate_token_bitmask(1)
        for i, t in enumerate(tokens):
            grammar.fill_bitmask(bitmask, 0)
            if not np.array_equal(words(bitmask, 0), rows[i]):
                return False
            if not grammar.accept_tokens("r", [t]):
                return False
        return grammar.accept_tokens("r", [128009]) and grammar.is_terminated()

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(run, jobs))
    assert all(results)
    assert backend.cache.misses - before <= len(REQUESTS)
