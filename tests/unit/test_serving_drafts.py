"""The serving layer's draft calls (``integrations/serving.py``, no engine imported):
``fill_drafts`` and ``RequestMatcher.validate`` against the request's own step-by-step calls
(``fill``, ``accept`` one token, ..., ``rollback``) on Llama 3, with the request's stop ids
differing from the vocabulary's EOS ids (so rows are remapped), drafts mixing valid walks,
stop ids, ``-1`` padding, ids out of range and random ids; and a limit reached inside one
request's draft failing that request alone.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokamata
from real_tokenizers import llama3
from tokamata.integrations.serving import RequestMatcher, fill_drafts

STOP = {128008, 128009}  # the vocabulary's EOS ids are 128001 and 128009
SPECS = [("regex", r"\d{3}-[a-z]+(\.[a-z]+)*"),
         ("json_schema", '{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}'),
         ("grammar", 'start: "(" NUM ("," NUM)* ")"\nNUM: /[0-9]+/')]
_COMPILED: dict[str, tokamata.Constraint] = {}


def constraint(kind: str) -> tokamata.Constraint:
    if kind not in _COMPILED:
        spec = dict(SPECS)[kind]
        vocab = llama3().vocab
        _COMPILED[kind] = {"regex": tokamata.compile_regex, "grammar": tokamata.compile_grammar,
                           "json_schema": tokamata.compile_json_schema}[kind](spec, vocab)
    return _COMPILED[kind]


def stepwise(r: RequestMatcher, draft: list[int], bitmask, start: int) -> tuple[int, bool]:
    """The oracle: fill, accept one token, ..., then roll back."""
    accepted, j = 0, 0
    while True:
        r.fill(bitmask, start + j)
        if j == len(draft) or draft[j] < 0 or not r.accept([draft[j]]):
            result = (j + 1, False)
            break
        accepted += 1
        if r.is_terminated():
            result = (j + 1, True)
            break
        j += 1
    r.rollback(accepted)
    return result


def walk(r: RequestMatcher, rng: random.Random, steps: int) -> list[int]:
    twin = r.copy()
    row = tokamata.allocate_bitmask(1, r.vocab_size)
    out = []
    for _ in range(steps):
        if twin.is_terminated():
            break
        twin.fill(row, 0)
        ids = np.flatnonzero(np.unpackbits(row.view(np.uint8), bitorder="little")[: r.vocab_size])
        token = int(rng.choice(ids))
        assert twin.accept([token])
        out.append(token)
    return out


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), before=st.integers(0, 6), length=st.integers(0, 6))
def test_fill_drafts_and_validate_equal_the_stepwise_calls(seed, before, length):
    rng = random.Random(seed)
    requests, drafts = [], []
    for kind, _ in SPECS:
        r = RequestMatcher(constraint(kind), stop=STOP)
        r.accept(walk(r, rng, before))
        draft = walk(r, rng, length)
        for k in range(len(draft)):  # noise: stop ids, padding, ids out of range, random ids
            roll = rng.random()
            if roll < 0.08:
                draft[k] = rng.choice(sorted(STOP | {128001}))
            elif roll < 0.14:
                draft[k] = -1
            elif roll < 0.18:
                draft[k] = r.vocab_size + rng.randrange(3)
            elif roll < 0.28:
                draft[k] = rng.randrange(r.vocab_size)
        requests.append(r)
        drafts.append(draft)
    width = (requests[0].vocab_size + 31) // 32
    starts = [0, 8, 16]
    want = np.full((24, width), 0x5A5A5A5A, dtype=np.int32)
    expected = [stepwise(r, d, want, s) for r, d, s in zip(requests, drafts, starts)]
    state = [(r.num_processed, r.is_terminated()) for r in requests]
    got = np.full((24, width), 0x5A5A5A5A, dtype=np.int32)
    assert fill_drafts(requests, drafts, got, starts) == expected
    assert np.array_equal(got, want)
    assert [(r.num_processed, r.is_terminated()) for r in requests] == state
    for r, d in zip(requests, drafts):  # validate: the prefix the step-by-step accept takes
        twin, prefix = r.copy(), []
        for t in d:
            if t < 0 or twin.is_terminated() or not twin.accept([t]):
                break
            prefix.append(t)
        assert r.validate(d) == prefix


def test_a_limit_in_one_draft_fails_that_request_alone():
    vocab = llama3().vocab
    heavy = RequestMatcher(tokamata.compile_regex("[a-z]{0,200}!", vocab,
                                                  limits=tokamata.Limits(max_dfa_states=40)), stop=STOP)
    light = RequestMatcher(constraint("regex"), stop=STOP)
    letters = llama3().encode("abcdefghijklmnopqrstuvwxyz" * 3)
    digits = llama3().encode("123-ab")
    bitmask = np.zeros((len(letters) + len(digits) + 2, (vocab.size + 31) // 32), dtype=np.int32)
    results = fill_drafts([light, heavy], [digits, letters], bitmask, [0, len(digits) + 1])
    assert isinstance(heavy.error, tokamata.LimitExceeded) and light.error is None
    assert results == [(len(digits) + 1, False), (1, False)]
    row = bitmask[len(digits) + 1].view(np.uint32)
    assert np.flatnonzero(np.unpackbits(row.view(np.uint8), bitorder="little")).tolist() == sorted(STOP)
    expected = np.zeros_like(bitmask)
    assert stepwise(light, digits, expected, 0) == results[0]
    assert np.array_equal(bitmask[: len(digits) + 1], expected[: len(digits) + 1])
    with pytest.raises(tokamata.InvalidArgument):  # a caller's mistake is not a request's failure
        fill_drafts([light], [digits], np.zeros((2, 3), dtype=np.int32), [0])
    assert light.error is None
