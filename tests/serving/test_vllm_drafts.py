"""vLLM's speculative-decoding bitmask through tokamata's native draft path: after
``install()``, ``StructuredOutputManager.grammar_bitmask`` fills a tokamata engine's rows with
one native call per batch (``TokamataBackend.fill_bitmask_rows``). vLLM's own method (kept as
``grammar_bitmask.__wrapped__``: fill, accept each draft token, roll back, through the
grammars) is the oracle: on twin managers over twin grammars, every row of the batch must be
equal, for drafts that are right, wrong in their last token, padded with ``-1``, ended by a
stop id, holding ids out of range or ``-3``, and for grammars that had terminated or failed;
the grammars end where they began. Runs in the serving environment (make serving-env).

The managers are vLLM's real class with the few config fields ``grammar_bitmask`` reads set
on a plain namespace (a real ``VllmConfig`` needs a model).
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed here: run `make test-serving` (it builds "
                                          ".cache/venv-serving from PyPI)")

import tokamata  # noqa: E402
import tokamata.integrations.vllm as tv  # noqa: E402
from serving_cases import REQUESTS, STOP, encode, hf_tokenizer  # noqa: E402
from vllm.config import StructuredOutputsConfig  # noqa: E402
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402
from vllm.v1.structured_output.backend_types import StructuredOutputOptions  # noqa: E402

VOCAB_SIZE = 128256
SPEC = 4
MAX_SEQS = 64


@pytest.fixture(scope="module")
def backend():
    tv.install()
    made = tv.TokamataBackend(StructuredOutputsConfig(backend="tokamata"), tokenizer=hf_tokenizer(),
                              vocab_size=VOCAB_SIZE)
    yield made
    made.destroy()


@pytest.fixture(autouse=True)
def native_calls(backend, monkeypatch) -> list[int]:
    """How many batches went through TokamataBackend.fill_bitmask_rows (the native path)."""
    calls: list[int] = []
    original = type(backend).fill_bitmask_rows

    def counted(self, grammars, *args):
        calls.append(len(grammars))
        return original(self, grammars, *args)

    monkeypatch.setattr(type(backend), "fill_bitmask_rows", counted)
    return calls


def manager(backend, spec: int = SPEC) -> StructuredOutputManager:
    made = StructuredOutputManager.__new__(StructuredOutputManager)
    made.backend = backend
    made.backend_name = tv.BACKEND_NAME
    made.reasoner_cls = None
    made.enable_in_reasoning = False
    made._grammar_bitmask = None
    made._full_mask = __import__("torch").tensor(-1, dtype=__import__("torch").int32)
    made.fill_bitmask_parallel_threshold = 128
    made.vllm_config = SimpleNamespace(num_speculative_tokens=spec,
                                       model_config=SimpleNamespace(is_diffusion=False),
                                       scheduler_config=SimpleNamespace(max_num_seqs=MAX_SEQS))
    return made


def request(grammar) -> SimpleNamespace:
    return SimpleNamespace(use_structured_output=True,
                           structured_output_request=SimpleNamespace(grammar=grammar, reasoning_ended=None,
                                                                     reasoner=None))


def drafts_for(tokens: list[int], done: int, rng: random.Random) -> list[list[int]]:
    """Draft shapes at position ``done`` of a valid output (``tokens`` ends with a stop id)."""
    right = tokens[done: done + SPEC]
    wrong = right[:-1] + [rng.randrange(VOCAB_SIZE)] if right else [rng.randrange(VOCAB_SIZE)]
    return [right, wrong, right[:2] + [-1] * (SPEC - 2), [-1] * SPEC, [], right[:1] + [VOCAB_SIZE + 3],
            right[:1] + [-3, 5], [rng.randrange(VOCAB_SIZE) for _ in range(SPEC)], right[:1] + [128009, 128001]]


def state(grammar) -> tuple:
    return grammar.num_processed_tokens, grammar.is_terminated(), grammar.error is None


@pytest.mark.parametrize("seed", range(3))
def test_rows_equal_vllms_own_loop(backend, seed, native_calls):
    rng = random.Random(seed)
    theirs, ours = manager(backend), manager(backend)
    batch: list[tuple[str, object, object, list[int]]] = []
    for n, (kind, spec, text) in enumerate(REQUESTS):
        tokens = encode(text) + [128009]
        for done in sorted({0, rng.randrange(len(tokens)), len(tokens) - 2, len(tokens) - 1}):
            for draft in drafts_for(tokens, done, rng):
                twins = []
                for _ in range(2):
                    grammar = backend.compile_grammar(StructuredOutputOptions[kind], spec, STOP)
                    assert grammar.accept_tokens("r", tokens[:done])
                    twins.append(grammar)
                batch.append((f"{n}-{done}-{len(batch)}", twins[0], twins[1], draft))
    # a grammar that has ended, and one that failed (as a limit reached mid-generation leaves it)
    ended = [backend.compile_grammar(StructuredOutputOptions.REGEX, "ab", STOP) for _ in range(2)]
    failed = [backend.compile_grammar(StructuredOutputOptions.REGEX, "ab", STOP) for _ in range(2)]
    for g in ended:
        assert g.accept_tokens("r", encode("ab") + [128009]) and g.is_terminated()
    for g in failed:
        assert not g.accept_tokens("r", encode("x"))
        g.request.error = tokamata.LimitExceeded("max_dfa_states", 41, 40)
    batch += [("ended", ended[0], ended[1], [5, 6]), ("failed", failed[0], failed[1], [5, -1])]
    rng.shuffle(batch)
    for start in range(0, len(batch), MAX_SEQS):
        chunk = batch[start: start + MAX_SEQS]
        ids = [name for name, *_ in chunk]
        spec_tokens = {name: draft for name, _, _, draft in chunk if draft}
        before = {name: state(b) for name, _, b, _ in chunk}
        want = StructuredOutputManager.grammar_bitmask.__wrapped__(
            theirs, {name: request(a) for name, a, _, _ in chunk}, ids, spec_tokens).copy()
        got = ours.grammar_bitmask({name: request(b) for name, _, b, _ in chunk}, ids, spec_tokens)
        assert got.shape == want.shape == (len(chunk) * (SPEC + 1), (VOCAB_SIZE + 31) // 32)
        for k, (name, a, b, draft) in enumerate(chunk):
            block = slice(k * (SPEC + 1), k * (SPEC + 1) + len(draft) + 1)
            assert np.array_equal(got[block], want[block]), (name, draft)
            assert state(b) == before[name] == state(a), name
    assert native_calls == [len(batch[s: s + MAX_SEQS]) for s in range(0, len(batch), MAX_SEQS)]


def test_without_speculation_and_large_batches(backend, native_calls):
    """No drafts (one row per request), past vLLM's 128-request threshold for its thread pool."""
    theirs, ours = manager(backend, spec=0), manager(backend, spec=0)
    theirs.vllm_config.scheduler_config.max_num_seqs = ours.vllm_config.scheduler_config.max_num_seqs = 160
    from concurrent.futures import ThreadPoolExecutor

    theirs.fill_bitmask_parallel_batch_size = 16
    theirs.executor_for_fillmask = ThreadPoolExecutor(2)
    pairs = {}
    for i in range(150):
        kind, spec, text = REQUESTS[i % len(REQUESTS)]
        tokens = encode(text)
        done = i % len(tokens)
        twins = [backend.compile_grammar(StructuredOutputOptions[kind], spec, STOP) for _ in range(2)]
        for g in twins:
            g.accept_tokens("r", tokens[:done])
        pairs[str(i)] = twins
    ids = list(pairs)
    want = StructuredOutputManager.grammar_bitmask.__wrapped__(
        theirs, {k: request(v[0]) for k, v in pairs.items()}, ids, {}).copy()
    got = ours.grammar_bitmask({k: request(v[1]) for k, v in pairs.items()}, ids, {})
    assert np.array_equal(got, want) and native_calls == [150]
    theirs.executor_for_fillmask.shutdown()


def test_validate_tokens_with_padding_and_stops(backend):
    """The native validate: the accepted prefix, up to -1 padding, a stop id kept only where
    the output is complete; the grammar does not move."""
    grammar = backend.compile_grammar(StructuredOutputOptions.REGEX, r"[0-9]{2}", STOP)
    one, two = encode("1"), encode("2")
    assert grammar.validate_tokens(one + two + [128009, 5]) == one + two + [128009]
    assert grammar.validate_tokens(one + [128009]) == one
    assert grammar.validate_tokens(one + [-1] + two) == one
    assert grammar.validate_tokens([VOCAB_SIZE, 5]) == [] and grammar.validate_tokens([]) == []
    assert grammar.num_processed_tokens == 0 and not grammar.is_terminated()
