"""fill_bitmasks on several threads (the worker pool, cpp/include/tokamata/worker_pool.hpp)
writes exactly what one thread writes, on a real tokenizer, step after step.

- 64 matchers over JSON Schemas, Lark grammars and regexes (GPT-2's vocabulary) decode their
  instances in lockstep, the batch in a shuffled order with some matchers listed twice (each
  occurrence's row gets the same mask); at every step the rows of threads=2 and 3 equal
  those of threads=1, and each row equals the matcher's own fill_bitmask. The oracle for the
  instances is the `tokenizers` encoding (every instance is accepted to the end).
- Batches of every size 0..9 with threads=2 (the pool's rounds of two items and fewer).
- A matcher that fails (a limit reached inside its fill) in the middle of a two-thread batch
  raises LimitExceeded; every other row is filled, the failing row is left as it was, and the
  pool, the failing matcher (at masks it reached) and the others stay usable.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import real_tokenizers
import tokamata
from tokamata import Limits

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
     "required": ["name", "age"]},
    {"type": "array", "items": {"type": "number"}},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["a", "b", "cd"]}}}},
    {"type": "string", "pattern": "^[a-z]+-[0-9]{2,4}$"},
    {"anyOf": [{"type": "boolean"}, {"type": "object", "properties": {"x": {"type": "null"}}}]},
]
INSTANCES = [
    [{"name": "Ada", "age": 36}, {"name": "Grace Hopper", "age": 85}],
    [[1, 2.5, -30000], [], [0.125]],
    [{"tags": ["a", "cd", "b"]}, {}],
    ["abc-123", "z-99"],
    [True, {"x": None}],
]
GRAMMARS = [
    ('start: expr\nexpr: term (("+" | "-") term)*\nterm: NUMBER | "(" expr ")"\n%import common.NUMBER',
     ["1+(2-30)", "(4)", "12-3+4"]),
    ('start: word (" " word)*\nword: /[a-z]+/', ["hello there world", "a b c"]),
]
REGEXES = [(r"\d{4}-\d{2}-\d{2}", ["2024-11-21", "1999-01-02"]),
           (r"(red|green|blue)( and (red|green|blue))*", ["red and blue", "green"])]


def _cases(tok):
    """(constraint, instance tokens) for every text of every source above."""
    cases = []
    for schema, instances in zip(SCHEMAS, INSTANCES):
        c = tokamata.compile_json_schema(schema, tok.vocab)
        cases += [(c, tok.encode(json.dumps(x, separators=(",", ":")))) for x in instances]
    for grammar, texts in GRAMMARS:
        c = tokamata.compile_grammar(grammar, tok.vocab)
        cases += [(c, tok.encode(t)) for t in texts]
    for pattern, texts in REGEXES:
        c = tokamata.compile_regex(pattern, tok.vocab)
        cases += [(c, tok.encode(t)) for t in texts]
    return cases


@pytest.fixture(scope="module")
def gpt2():
    return real_tokenizers.gpt2()


def test_lockstep_batches_equal_one_thread(gpt2):
    rng = random.Random(16)
    cases = _cases(gpt2)
    picks = [cases[i % len(cases)] for i in range(56)]
    matchers = [c.matcher() for c, _ in picks]
    tokens = [t for _, t in picks]
    width = tokamata.allocate_bitmask(1, gpt2.vocab.size).shape[1]
    single = np.zeros((1, width), dtype=np.int32)
    for step in range(max(map(len, tokens)) + 1):
        active = [i for i in range(len(matchers)) if step <= len(tokens[i])]
        batch = active + rng.sample(active, min(8, len(active)))  # some listed twice
        rng.shuffle(batch)
        rows = {}
        for threads in (1, 2, 3):
            buf = np.full((len(batch), width), -1, dtype=np.int32)
            tokamata.fill_bitmasks([matchers[i] for i in batch], buf, threads=threads)
            rows[threads] = buf
        assert np.array_equal(rows[2], rows[1]), step
        assert np.array_equal(rows[3], rows[1]), step
        for r, i in enumerate(batch):
            matchers[i].fill_bitmask(single, 0)
            assert np.array_equal(rows[1][r], single[0]), (step, i)
        for i in active:
            if step < len(tokens[i]):
                assert matchers[i].consume(tokens[i][step]), (step, i)
    assert all(m.is_accepting() for m in matchers)


def test_every_small_batch_size(gpt2):
    cases = _cases(gpt2)
    width = tokamata.allocate_bitmask(1, gpt2.vocab.size).shape[1]
    for n in range(10):
        matchers = [cases[i % len(cases)][0].matcher() for i in range(n)]
        expected = np.zeros((n, width), dtype=np.int32)
        tokamata.fill_bitmasks(matchers, expected, threads=1)
        for _ in range(20):
            got = np.full((n, width), -1, dtype=np.int32)
            tokamata.fill_bitmasks(matchers, got, threads=2)
            assert np.array_equal(got, expected), n


VOCAB_AB = tokamata.Vocabulary.from_token_bytes([b"a", b"b", None], eos_token_ids=[2])


def _failing_matcher() -> tokamata.Matcher:
    """A matcher whose next fill needs a lexer state past its constraint's max_dfa_states."""
    tight = tokamata.compile_regex("(a|b)*a(a|b){10}", VOCAB_AB, limits=Limits(max_dfa_states=64))
    m = tight.matcher()
    rng = random.Random(7)
    bitmask = tokamata.allocate_bitmask(1, VOCAB_AB.size)
    for _ in range(2000):
        try:
            m.fill_bitmask(bitmask, 0)
        except tokamata.LimitExceeded:
            return m
        m.consume(rng.choice([0, 1]))
    raise AssertionError("the walk never reached the limit")


@pytest.mark.parametrize("where", [0, 5, 11])
def test_a_failing_matcher_in_a_two_thread_batch(where: int):
    failing = _failing_matcher()
    healthy = [tokamata.compile_regex("a+" if i % 2 else "(ab)+", VOCAB_AB).matcher() for i in range(11)]
    batch = healthy[:where] + [failing] + healthy[where:]
    expected = tokamata.allocate_bitmask(len(healthy), VOCAB_AB.size)
    tokamata.fill_bitmasks(healthy, expected)
    for _ in range(5):
        bitmask = np.full((len(batch), expected.shape[1]), 7, dtype=np.int32)
        with pytest.raises(tokamata.LimitExceeded) as info:
            tokamata.fill_bitmasks(batch, bitmask, threads=2)
        assert info.value.limit == "max_dfa_states"
        assert np.array_equal(np.delete(bitmask, where, axis=0), expected)
        assert (bitmask[where] == 7).all()  # left as it was
    # the pool and the other matchers keep working; the failing one can go back
    again = tokamata.allocate_bitmask(len(healthy), VOCAB_AB.size)
    tokamata.fill_bitmasks(healthy, again, threads=2)
    assert np.array_equal(again, expected)
    failing.rollback(failing.num_consumed)
    assert sorted(failing.allowed_tokens().tolist()) == [0, 1]
