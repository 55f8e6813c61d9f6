"""Speculative drafts (issue 21 item 2, issue 22 item 4): ``Matcher.validate_tokens``,
``Matcher.fill_bitmask_draft`` and ``tokamata.fill_bitmasks_draft`` against the step-by-step
oracle (fill, consume, ..., rollback on the same matcher through the public API), on Llama 3 and
Gemma 3, for a regex (the regular strategy), a Lark grammar and a JSON Schema (the Earley
strategy), plain and healed (a prefix phase), from the start and from inside a walk.

Drafts are hypothesis-chosen mixes of valid walks (tokens drawn from the allowed set, EOS
included) and random ids of the whole vocabulary. After every call the matcher is where it
was: the same consumed count, termination, mask and forced tokens, and rows past the last
one written are untouched. Bad drafts (-1 padding, ids out of range, floats, bools, strings)
and bad buffers raise InvalidArgument with nothing written or moved.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tokamata
from real_tokenizers import gemma3, llama3

TOKENIZERS = {"llama3": llama3, "gemma3": gemma3}
SENTINEL = 0x5A5A5A5A

# (name, kind, source, a healing prefix whose bytes begin a sentence)
CASES = [
    ("regex", "regex", r"(\+1 )?\(\d{3}\) \d{3}-\d{4}( ext\. \d{1,4})?", b"(5"),
    ("lark", "lark", 'start: "let " NAME " = " expr ";"\nexpr: NUMBER | NAME | expr " + " expr\n'
                     'NAME: /[a-z][a-z0-9_]*/\nNUMBER: /[0-9]+/', b"let x"),
    ("schema", "json_schema", '{"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, '
                              '"tags": {"type": "array", "items": {"enum": ["red", "green"]}}, '
                              '"age": {"type": "integer", "minimum": 0}}, "required": ["name", "age"], '
                              '"additionalProperties": false}', b'{"na'),
]


def _compile(kind: str, source: str, vocab):
    if kind == "regex":
        return tokamata.compile_regex(source, vocab)
    if kind == "lark":
        return tokamata.compile_grammar(source, vocab)
    import json
    return tokamata.compile_json_schema(json.loads(source), vocab)


_CONSTRAINTS: dict[tuple[str, str], tokamata.Constraint] = {}


def constraint(tokenizer: str, case: str) -> tokamata.Constraint:
    key = (tokenizer, case)
    if key not in _CONSTRAINTS:
        _, kind, source, _ = next(c for c in CASES if c[0] == case)
        _CONSTRAINTS[key] = _compile(kind, source, TOKENIZERS[tokenizer]().vocab)
    return _CONSTRAINTS[key]


def matcher(tokenizer: str, case: str, healed: bool) -> tokamata.Matcher:
    prefix = next(c for c in CASES if c[0] == case)[3]
    return constraint(tokenizer, case).matcher(prefix=prefix if healed else b"")


def oracle(m: tokamata.Matcher, draft: list[int], rows: int) -> tuple[int, np.ndarray, list[bool]]:
    """(accepted count, rows, accepting per row) by fill, consume, ..., rollback."""
    width = (m.constraint.vocab_size + 31) // 32
    out = np.full((rows, width), SENTINEL, dtype=np.int32)
    accepting = []
    consumed = 0
    for i in range(len(draft) + 1):
        m.fill_bitmask(out, i)
        accepting.append(m.is_accepting())
        if i == len(draft) or not m.consume(draft[i]):
            break
        consumed += 1
    m.rollback(consumed)
    return consumed, out, accepting


def allowed(m: tokamata.Matcher) -> np.ndarray:
    """The ids set in the matcher's mask (its bitmask row, unpacked)."""
    row = tokamata.allocate_bitmask(1, m.constraint.vocab_size)
    m.fill_bitmask(row)
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")
    return np.flatnonzero(bits[: m.constraint.vocab_size])


def snapshot(m: tokamata.Matcher) -> tuple:
    return (m.num_consumed, m.is_terminated(), m.is_accepting(), m.num_configurations,
            allowed(m).tobytes(), m.forced_tokens(8))


def walk(m: tokamata.Matcher, rng: random.Random, steps: int) -> list[int]:
    """Up to ``steps`` allowed tokens from the position (consumed on a copy)."""
    twin = m.copy()
    out = []
    for _ in range(steps):
        ids = allowed(twin)
        if not len(ids):
            break
        token = int(rng.choice(ids))
        assert twin.consume(token)
        out.append(token)
    return out


def draft_for(m: tokamata.Matcher, seed: int, length: int, noise: float) -> list[int]:
    """A valid walk of ``length`` tokens where each token is, with chance ``noise``, replaced
    by a random id (and the walk goes on from whatever stays valid)."""
    rng = random.Random(seed)
    vocab_size = m.constraint.vocab_size
    twin = m.copy()
    draft = []
    for _ in range(length):
        ids = allowed(twin)
        if len(ids) and rng.random() >= noise:
            token = int(rng.choice(ids))
        else:
            token = rng.randrange(vocab_size)
        draft.append(token)
        twin.consume(token)
    return draft


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("case", [c[0] for c in CASES])
@pytest.mark.parametrize("healed", [False, True], ids=["plain", "healed"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), before=st.integers(0, 6), length=st.integers(0, 9),
       noise=st.sampled_from([0.0, 0.0, 0.1, 0.3, 1.0]), start=st.integers(0, 3))
def test_draft_equals_step_by_step(tokenizer, case, healed, seed, before, length, noise, start):
    m = matcher(tokenizer, case, healed)
    m.consume_many(walk(m, random.Random(seed ^ 0x1234), before))
    draft = draft_for(m, seed, length, noise)
    expected_count, expected, expected_accepting = oracle(m, draft, start + length + 1)
    before_state = snapshot(m)

    assert m.validate_tokens(draft) == expected_count
    assert m.validate_tokens(np.asarray(draft, dtype=np.int64)) == expected_count
    assert snapshot(m) == before_state

    bitmask = np.full((start + length + 1, expected.shape[1]), SENTINEL, dtype=np.int32)
    assert m.fill_bitmask_draft(draft, bitmask, start) == expected_count + 1
    assert np.array_equal(bitmask[start:], expected[: length + 1])  # rows past the refusal untouched too
    assert (bitmask[:start] == SENTINEL).all()
    assert snapshot(m) == before_state

    # the batch form, with the accepting flags, for this matcher and a fresh one side by side
    other = matcher(tokenizer, case, healed)
    other_draft = draft_for(other, seed + 1, 4, noise)
    other_count, other_rows, other_accepting = oracle(other, other_draft, 5)
    batch = np.full((length + 1 + 5, expected.shape[1]), SENTINEL, dtype=np.int32)
    accepting = np.full(len(batch), 7, dtype=np.uint8)
    written = tokamata.fill_bitmasks_draft([other, m], [other_draft, draft], batch, accepting=accepting)
    assert written.tolist() == [other_count + 1, expected_count + 1]
    assert np.array_equal(batch[:5], other_rows) and np.array_equal(batch[5:], expected[: length + 1])
    assert accepting[: other_count + 1].tolist() == other_accepting
    assert accepting[5: 5 + expected_count + 1].tolist() == expected_accepting
    assert (accepting[other_count + 1: 5] == 7).all() and (accepting[5 + expected_count + 1:] == 7).all()
    assert snapshot(m) == before_state


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_walks_are_accepted_whole(tokenizer):
    """A valid walk is accepted whole (EOS included), and its rows each allow the next token."""
    for case in (c[0] for c in CASES):
        for healed in (False, True):
            m = matcher(tokenizer, case, healed)
            draft = walk(m, random.Random(case + str(healed)), 12)
            assert m.validate_tokens(draft) == len(draft)
            bitmask = tokamata.allocate_bitmask(len(draft) + 1, m.constraint.vocab_size)
            assert m.fill_bitmask_draft(draft, bitmask) == len(draft) + 1
            for row, token in zip(bitmask, draft):
                assert (int(row[token >> 5]) >> (token & 31)) & 1


def test_terminated_and_eos():
    """EOS in a draft ends the output: the rows after it allow only EOS, later tokens are
    refused; a terminated matcher refuses every draft token but still fills its row."""
    vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_token_ids=[3])
    m = tokamata.compile_regex("ab", vocab).matcher()
    bitmask = np.full((6, 1), SENTINEL, dtype=np.int32)
    assert m.fill_bitmask_draft([2, 3, 0, 1], bitmask, 1) == 3
    assert bitmask[:, 0].tolist() == [SENTINEL, 0b101, 0b1000, 0b1000, SENTINEL, SENTINEL]
    assert m.validate_tokens([2, 3, 3]) == 2 and m.validate_tokens([]) == 0
    assert m.consume_many([2, 3]) == 2 and m.is_terminated()
    assert m.validate_tokens([3]) == 0
    assert m.fill_bitmask_draft([3, 3], bitmask) == 1 and bitmask[0, 0] == 0b1000
    assert m.is_terminated() and m.num_consumed == 2


@pytest.mark.parametrize("bad", [[0, -1], [-1], [0, 4], [2**40], [0.0], [1.5], [True], ["a"], [None],
                                 "ab", b"\x00", 3, None, np.array([0, 1], dtype=np.float32),
                                 np.array([[0, 1]]), np.array([0, -1])])
def test_bad_drafts(bad):
    vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_token_ids=[3])
    m = tokamata.compile_regex("ab", vocab).matcher()
    m.consume(0)
    bitmask = np.full((8, 1), SENTINEL, dtype=np.int32)
    with pytest.raises(tokamata.InvalidArgument):
        m.validate_tokens(bad)
    with pytest.raises(tokamata.InvalidArgument):
        m.fill_bitmask_draft(bad, bitmask)
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.fill_bitmasks_draft([m], [bad], bitmask)
    assert (bitmask == SENTINEL).all() and m.num_consumed == 1


def test_padding_is_named():
    vocab = tokamata.Vocabulary.from_token_bytes([b"a", None], eos_token_ids=[1])
    m = tokamata.compile_regex("a", vocab).matcher()
    with pytest.raises(tokamata.InvalidArgument, match="padding"):
        m.validate_tokens([0, -1])


def test_bad_buffers_and_rows():
    vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", None], eos_token_ids=[2], size=40)
    m = tokamata.compile_regex("a+b", vocab).matcher()
    good = np.full((4, 2), SENTINEL, dtype=np.int32)
    for bitmask, start in [(np.zeros((4, 2), dtype=np.int64), 0), (np.zeros((4, 1), dtype=np.int32), 0),
                           (np.zeros((2, 4), dtype=np.int32).T, 0), (np.zeros(8, dtype=np.int32), 0),
                           (good, 2), (good, -1), (good, 1.0), (good, True), (good, None)]:
        with pytest.raises(tokamata.InvalidArgument):
            m.fill_bitmask_draft([0, 0], bitmask, start)  # (needs 3 rows from start)
    assert (good == SENTINEL).all()
    assert m.fill_bitmask_draft([0, 0], good, 1) == 3 and (good[0] == SENTINEL).all()
    readonly = np.zeros((3, 2), dtype=np.int32)
    readonly.setflags(write=False)
    with pytest.raises(tokamata.InvalidArgument):
        m.fill_bitmask_draft([0], readonly)
    # the batch: overlapping rows, rows past the end, a draft per matcher, the flags' buffer
    other = m.constraint.matcher()
    batch = np.full((6, 2), SENTINEL, dtype=np.int32)
    for call in (lambda: tokamata.fill_bitmasks_draft([m, other], [[0], [0]], batch, [0, 1]),
                 lambda: tokamata.fill_bitmasks_draft([m, other], [[0], [0]], batch, [0, 5]),
                 lambda: tokamata.fill_bitmasks_draft([m, other], [[0]], batch),
                 lambda: tokamata.fill_bitmasks_draft([m, "m"], [[0], [0]], batch),
                 lambda: tokamata.fill_bitmasks_draft([m], [[0]], batch, threads=0),
                 lambda: tokamata.fill_bitmasks_draft([m], [[0]], batch, accepting=np.zeros(2, dtype=np.uint8)),
                 lambda: tokamata.fill_bitmasks_draft([m], [[0]], batch, accepting=np.zeros(6, dtype=np.int8))):
        with pytest.raises(tokamata.InvalidArgument):
            call()
    assert (batch == SENTINEL).all()
    assert tokamata.fill_bitmasks_draft([], [], batch).tolist() == []


def test_limit_in_the_middle_restores_the_position():
    """A limit reached by a later draft token raises LimitExceeded with the matcher where it
    was (what the draft consumed is rolled back)."""
    import itertools

    words = [bytes(w) for n in range(1, 6) for w in itertools.product(b"ab", repeat=n)]
    small = tokamata.Vocabulary.from_token_bytes(words + [None], eos_token_ids=[len(words)])
    c = tokamata.compile_regex(r"(a|b)*a(a|b){30}", small, limits=tokamata.Limits(max_dfa_states=500))
    draft = [len(words) - 1 - i % 7 for i in range(40)]
    for call in (lambda m: m.validate_tokens(draft),
                 lambda m: m.fill_bitmask_draft(draft, tokamata.allocate_bitmask(41, small.size))):
        m = c.matcher()
        m.consume(0)
        with pytest.raises(tokamata.LimitExceeded):
            call(m)
        assert m.num_consumed == 1 and not m.is_terminated()
        assert m.consume(1)


@pytest.mark.parametrize("threads", [1, 2])
def test_batch_of_many(threads):
    """64 requests (one matcher listed twice, with disjoint rows) in one call agree with
    their single fills."""
    tok = llama3()
    c = constraint("llama3", "schema")
    matchers = [c.matcher() for _ in range(63)]
    matchers.append(matchers[5])
    drafts = [draft_for(m, i, 4, 0.2) for i, m in enumerate(matchers)]
    width = (tok.vocab.size + 31) // 32
    batch = np.full((64 * 6, width), SENTINEL, dtype=np.int32)
    starts = [6 * i for i in range(64)]
    written = tokamata.fill_bitmasks_draft(matchers, drafts, batch, starts, threads=threads)
    for i, m in enumerate(matchers):
        single = np.full((5, width), SENTINEL, dtype=np.int32)
        assert written[i] == m.fill_bitmask_draft(drafts[i], single)
        assert np.array_equal(batch[starts[i]: starts[i] + 5], single)
        assert (batch[starts[i] + 5] == SENTINEL).all()
