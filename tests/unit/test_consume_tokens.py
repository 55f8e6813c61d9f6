"""tokamata.consume_tokens: a batch's decoding step (each matcher consumes its token, then fills
its row) in one native call on the worker pool equals ``consume`` then ``fill_bitmask``, matcher
by matcher, on a real tokenizer (GPT-2).

- Matchers of every kind (regex, Lark, GBNF, JSON, JSON Schema, a canonical regex; some with a
  prefix to heal) walk in lockstep on threads 1, 2 and 3 against twins stepped one by one: instance tokens (the
  `tokenizers` encoding), random allowed tokens, random ids (mostly refused) and ``-1`` (no
  token). Accepted flags, rows, positions and termination agree at every step; without a
  bitmask the same steps consume only.
- Argument errors (a matcher listed twice, an id out of range, too few rows) raise
  InvalidArgument naming the entry, with nothing consumed and nothing written.
- A matcher whose fill fails (a limit) in the middle of a batch: the others step as without
  it; it is back where it was (nothing consumed) with its old row; LimitExceeded names its
  entry in ``index``.
- Long life: a constraint with a low ``max_parser_states`` sweeps while two threads step a
  batch over it (warm fills take no sweep lock); every row equals a constraint that never swept.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import real_tokenizers
import tokamata
from tokamata import Limits

#: (kind, source, instances): every front end, and a canonical regex (a token filter, consumed in Python)
SOURCES = [
    ("schema", {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
                "required": ["name", "n"]}, [{"name": "Ada", "n": 36}, {"name": "x y", "n": -2}]),
    ("schema", {"type": "array", "items": {"enum": ["a", "b", "cd"]}}, [["a", "cd"], []]),
    ("json", None, [{"k": [1, 2.5, None]}, "text"]),
    ("lark", 'start: expr\nexpr: term (("+" | "-") term)*\nterm: NUMBER | "(" expr ")"\n%import common.NUMBER',
     ["1+(2-30)", "12-3+4"]),
    ("gbnf", 'root ::= "say " word (" " word)*\nword ::= [a-z]+', ["say hello there", "say a"]),
    ("regex", r"\d{4}-\d{2}-\d{2}", ["2024-11-21"]),
    ("canonical", r"(red|green|blue)( and (red|green|blue))*", ["red and blue", "green"]),
]


def _compile(kind: str, source, vocab) -> tokamata.Constraint:
    if kind == "schema":
        return tokamata.compile_json_schema(source, vocab)
    if kind == "json":
        return tokamata.compile_json(vocab)
    if kind == "lark":
        return tokamata.compile_grammar(source, vocab)
    if kind == "gbnf":
        return tokamata.compile_gbnf(source, vocab)
    return tokamata.compile_regex(source, vocab, canonical=kind == "canonical")


@pytest.fixture(scope="module")
def gpt2():
    return real_tokenizers.gpt2()


@pytest.fixture(scope="module")
def cases(gpt2):
    """(constraint, instance tokens) for every instance of every source."""
    out = []
    for kind, source, instances in SOURCES:
        c = _compile(kind, source, gpt2.vocab)
        for x in instances:
            text = x if kind in ("lark", "gbnf", "regex", "canonical") else json.dumps(x, separators=(",", ":"))
            out.append((c, gpt2.encode(text)))
    return out


def _choose(rng: random.Random, twin: tokamata.Matcher, instance: list[int], vocab_size: int) -> int:
    """The next token of a step: the instance's, a random allowed one, a random id or -1."""
    r = rng.random()
    if r < 0.1:
        return -1
    if r < 0.25:
        return rng.randrange(vocab_size)
    allowed = twin.allowed_tokens()
    if r < 0.4 and len(allowed):
        return int(allowed[rng.randrange(len(allowed))])
    done = twin.num_consumed
    return instance[done] if done < len(instance) else rng.randrange(vocab_size)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("with_bitmask", [True, False])
def test_batched_steps_equal_consume_then_fill(gpt2, cases, threads: int, with_bitmask: bool):
    rng = random.Random(threads * 10 + with_bitmask)
    picks = [cases[i % len(cases)] for i in range(40)]
    rng.shuffle(picks)
    objects = {id(cases[0][0]), id(cases[4][0])}  # (the object schema and JSON: they may begin with {")
    # every fifth matcher starts with a prefix to heal (its output must begin with those bytes)
    batch = [c.matcher(prefix=b'{"' if i % 5 == 4 and id(c) in objects else b"") for i, (c, _) in enumerate(picks)]
    twins = [c.matcher(prefix=m.prefix) for m, (c, _) in zip(batch, picks)]
    assert sum(1 for m in batch if m.prefix) >= 2
    vocab_size = gpt2.vocab.size
    expected = tokamata.allocate_bitmask(len(batch), vocab_size)
    refused = 0
    for step in range(40):
        tokens = [_choose(rng, twin, instance, vocab_size) for twin, (_, instance) in zip(twins, picks)]
        want = [True if t < 0 else twin.consume(t) for twin, t in zip(twins, tokens)]
        for r, twin in enumerate(twins):
            twin.fill_bitmask(expected, r)
        rows = list(range(len(batch)))[::-1]  # (rows need not follow the batch)
        got = np.full(expected.shape, -1, dtype=np.int32)
        if with_bitmask:
            accepted = tokamata.consume_tokens(batch, tokens, got, rows, threads=threads)
            assert np.array_equal(got[rows], expected), step
        else:
            accepted = tokamata.consume_tokens(batch, np.asarray(tokens, dtype=np.int64), threads=threads)
            assert (got == -1).all()
        assert accepted.dtype == np.bool_ and accepted.tolist() == want, step
        refused += want.count(False)
        for m, twin in zip(batch, twins):
            assert m.num_consumed == twin.num_consumed and m.is_terminated() == twin.is_terminated()
            assert m._core.position() == twin._core.position()
    assert refused > 20  # the walks did meet refusals


def test_argument_errors_consume_nothing(gpt2, cases):
    batch = [c.matcher() for c, _ in cases[:4]]
    tokens = [instance[0] for _, instance in cases[:4]]
    bitmask = np.full((4, tokamata.allocate_bitmask(1, gpt2.vocab.size).shape[1]), 5, dtype=np.int32)
    bad = [
        ((batch + [batch[1]], tokens + [tokens[1]], None), 4),         # listed twice
        ((batch, tokens[:2] + [gpt2.vocab.size] + tokens[3:], bitmask), 2),
        ((batch, tokens[:3] + [-2], bitmask), 3),
        ((batch, tokens, bitmask[:3]), None),                          # too few rows
        ((batch, tokens[:3], bitmask), None),
        ((batch[:2] + ["m"] + batch[3:], tokens, bitmask), 2),
    ]
    for args, index in bad:
        with pytest.raises(tokamata.InvalidArgument) as info:
            tokamata.consume_tokens(*args, threads=2)
        assert info.value.index == index, args
        assert all(m.num_consumed == 0 for m in batch)
        assert (bitmask == 5).all()
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.consume_tokens(batch, tokens, None, [0, 1, 2, 3])  # rows without a bitmask
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.consume_tokens(batch, tokens, threads=0)
    assert tokamata.consume_tokens([], []).shape == (0,)


VOCAB_AB = tokamata.Vocabulary.from_token_bytes([b"a", b"b", None], eos_token_ids=[2])


def _about_to_fail() -> tuple[tokamata.Matcher, int]:
    """A matcher and a token it accepts after which its fill needs a lexer state past its
    constraint's max_dfa_states."""
    tight = tokamata.compile_regex("(a|b)*a(a|b){10}", VOCAB_AB, limits=Limits(max_dfa_states=64))
    m = tight.matcher()
    rng = random.Random(7)
    bitmask = tokamata.allocate_bitmask(1, VOCAB_AB.size)
    for _ in range(2000):
        token = rng.choice([0, 1])
        m.consume(token)
        try:
            m.fill_bitmask(bitmask, 0)
        except tokamata.LimitExceeded:
            m.rollback(1)
            m.fill_bitmask(bitmask, 0)  # (the row it is back at is cached)
            return m, token
    raise AssertionError("the walk never reached the limit")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("where", [0, 5, 11])
def test_a_failing_matcher_is_left_where_it_was(threads: int, where: int):
    failing, token = _about_to_fail()
    before = failing.num_consumed
    old_row = tokamata.allocate_bitmask(1, VOCAB_AB.size)
    failing.fill_bitmask(old_row, 0)
    healthy = [tokamata.compile_regex("a+b" if i % 2 else "(ab)+", VOCAB_AB).matcher() for i in range(11)]
    twins = [m.copy() for m in healthy]
    tokens = [0] * 11
    expected = tokamata.allocate_bitmask(11, VOCAB_AB.size)
    for r, (twin, t) in enumerate(zip(twins, tokens)):
        twin.consume(t)
        twin.fill_bitmask(expected, r)
    batch = healthy[:where] + [failing] + healthy[where:]
    bitmask = np.full((12, 1), 7, dtype=np.int32)
    with pytest.raises(tokamata.LimitExceeded) as info:
        tokamata.consume_tokens(batch, tokens[:where] + [token] + tokens[where:], bitmask, threads=threads)
    assert info.value.limit == "max_dfa_states" and info.value.index == where
    assert f"(batch entry {where})" in str(info.value)
    assert np.array_equal(np.delete(bitmask, where, axis=0), expected)
    assert np.array_equal(bitmask[where], old_row[0])
    assert failing.num_consumed == before
    assert [m.num_consumed for m in healthy] == [1] * 11
    # the batch goes on without it
    assert tokamata.consume_tokens(healthy, [0] * 11, bitmask[:11], threads=threads).tolist() == [
        i % 2 == 1 for i in range(11)]


SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 6},
        "children": {"type": "array", "items": {"$ref": "#"}},
        "n": {"type": "integer"},
    },
    "required": ["name"],
    "additionalProperties": False,
}


def test_sweeps_between_batched_steps_keep_masks_exact(gpt2):
    swept = tokamata.compile_json_schema(SCHEMA, gpt2.vocab, limits=Limits(max_parser_states=40))
    fresh = tokamata.compile_json_schema(SCHEMA, gpt2.vocab)
    rng = random.Random(3)
    size = 12
    expected = tokamata.allocate_bitmask(size, gpt2.vocab.size)
    got = np.zeros_like(expected)
    for _ in range(6):
        batch = [swept.matcher() for _ in range(size)]
        twins = [fresh.matcher() for _ in range(size)]
        tokens = [-1] * size
        for step in range(30):
            tokamata.consume_tokens(batch, tokens, got, threads=2)
            for r, twin in enumerate(twins):
                if tokens[r] >= 0:
                    assert twin.consume(tokens[r])
                twin.fill_bitmask(expected, r)
            assert np.array_equal(got, expected), step
            tokens = []
            for twin in twins:
                allowed = twin.allowed_tokens()
                tokens.append(int(allowed[rng.randrange(len(allowed))]) if len(allowed) and not twin.is_terminated()
                              else -1)
    assert swept._core.num_sweeps >= 1
    assert swept.num_parser_states <= 40
