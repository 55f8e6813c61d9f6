"""Hostile arguments to the public API: ``Limits``, the front doors' keyword arguments, the
matcher, ``fill_bitmasks`` and ``apply_bitmask``. Each gets :class:`InvalidArgument` naming what
is wrong, before anything changes (issue 17, part A); none is truncated, coerced or passed on
to become a nanobind ``TypeError`` or a numpy ``OverflowError``.

Also the EOS token that a grammar spells (``<|eot_id|>`` in ``start: "yes" <|eot_id|>`` over
Llama 3): the mask and ``consume`` agree on it, and a complete output can always end.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import tokamata
from tokamata import Limits
from tokamata.errors import InvalidArgument

VOCAB = tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])
EOS = 256

# ------------------------------------------------------------------ Limits

INT_FIELDS = ["max_dfa_states", "max_nesting_depth", "max_vocab_size", "max_file_bytes"]

#: (field, value) pairs Limits must refuse: the C++ core holds int32 and finite doubles
BAD_LIMITS: list[tuple[str, Any]] = [
    *[(field, value) for field in INT_FIELDS
      for value in (2**31, 2**63, 1.5, 3.0, math.inf, math.nan, True, 0, -1, "3", None)],
    *[("max_compile_seconds", value) for value in (math.inf, math.nan, -math.inf, 0, -1.0, True, "1", None)],
]


@pytest.mark.parametrize("field, value", BAD_LIMITS, ids=[f"{f}={v!r}" for f, v in BAD_LIMITS])
def test_limits_refuse_what_the_core_cannot_hold(field: str, value: Any) -> None:
    with pytest.raises(InvalidArgument, match=f"Limits.{field}"):
        Limits(**{field: value})


def test_limits_accept_the_extremes() -> None:
    limits = Limits(max_dfa_states=2**31 - 1, max_compile_seconds=1e-3, max_vocab_size=np.int64(7))
    assert limits.max_dfa_states == 2**31 - 1
    assert type(limits.max_vocab_size) is int and limits.max_vocab_size == 7
    # the largest int bound reaches the core without a nanobind TypeError
    big = Limits(**{f.name: 2**31 - 1 for f in Limits.__dataclass_fields__.values() if f.type in (int, "int")})
    m = tokamata.compile_grammar('start: "a"+', VOCAB, limits=big).matcher()
    assert m.consume(97) and m.is_accepting()


# ------------------------------------------------------------------ the front doors


@pytest.mark.parametrize("call, argument", [
    (lambda: tokamata.compile_grammar('start: "a"', VOCAB, start=5), "start"),
    (lambda: tokamata.compile_grammar('start: "a"', VOCAB, start=None), "start"),
    (lambda: tokamata.compile_gbnf('root ::= "a"', VOCAB, start=5), "start"),
    (lambda: tokamata.compile_grammar('start: "a"', VOCAB, registry=5), "registry"),
    (lambda: tokamata.compile_grammar('start: "a"', VOCAB, registry=[("a", {})]), "registry"),
    (lambda: tokamata.compile_json_schema({}, VOCAB, registry=5), "registry"),
    (lambda: tokamata.compile_json_schema({}, VOCAB, approximate=5), "approximate"),
    (lambda: tokamata.compile_json_schema({}, VOCAB, approximate=None), "approximate"),
    (lambda: tokamata.compile_json_schema({}, VOCAB, approximate="format"), "approximate"),
    (lambda: tokamata.compile_json_schema({}, VOCAB, approximate=[5]), "approximate"),
    (lambda: tokamata.compile_regex("a", VOCAB, limits=5), "limits"),
])
def test_front_door_arguments(call: Any, argument: str) -> None:
    with pytest.raises(InvalidArgument, match=argument):
        call()


def test_front_door_arguments_still_accepted() -> None:
    assert tokamata.compile_json_schema({"format": "email", "type": "string"}, VOCAB,
                                        approximate=["format"], registry={}).matcher().consume(34)
    assert tokamata.compile_grammar('s: "a"', VOCAB, start="s").matcher().consume(97)


# ------------------------------------------------------------------ the matcher


def _matcher() -> tokamata.Matcher:
    return tokamata.compile_regex("ab+", VOCAB).matcher()


FLOAT_IDS: list[Any] = [97.0, 97.5, np.float64(97.0), np.array(97.5), np.array(97.0), np.array(True),
                        np.array([97.5]), "a", b"a", None, np.array("a"), True,
                        # one-element arrays are not scalars (.item() read them; test_fuzz_matcher found it)
                        np.array([97]), np.array([[97]])]


@pytest.mark.parametrize("token", FLOAT_IDS, ids=repr)
def test_consume_refuses_non_integers(token: Any) -> None:
    """``np.array(97.5)`` was truncated to 97 and consumed."""
    m = _matcher()
    with pytest.raises(InvalidArgument):
        m.consume(token)
    assert m.num_consumed == 0


@pytest.mark.parametrize("token", [97, np.int32(97), np.uint8(97), np.array(97), np.array(97, dtype=np.uint16)],
                         ids=repr)
def test_consume_accepts_integer_scalars(token: Any) -> None:
    m = _matcher()
    assert m.consume(token) and m.num_consumed == 1


def test_consume_torch_scalars() -> None:
    torch = pytest.importorskip("torch")
    m = _matcher()
    for bad in (torch.tensor(98.7), torch.tensor(97.0), torch.tensor(True), torch.tensor([97.5])):
        with pytest.raises(InvalidArgument):
            m.consume(bad)
    assert m.num_consumed == 0
    assert m.consume(torch.tensor(97)) and m.consume_many(torch.tensor([98, 98])) == 2


@pytest.mark.parametrize("tokens", [
    [97, 98, -1], [97, 2**40], [97, 98.5], [97, None], [97, np.array(98.0)], [97, True], [97, np.array([98])],
    np.array([97, 98, 257]), None, 5, "ab", b"ab", 97.0, np.array(97),
], ids=repr)
def test_consume_many_checks_every_id_first(tokens: Any) -> None:
    """Nothing is consumed when any id is bad (``[98, -1]`` consumed 98 and then raised)."""
    m = _matcher()
    with pytest.raises(InvalidArgument):
        m.consume_many(tokens)
    assert m.num_consumed == 0 and not m.is_accepting()
    assert m.consume_many([97, 98]) == 2


@pytest.mark.parametrize("grammar", ['start: A A A A\nA: "a"+', 'start: x+\nx: "a" | "aa" | "aaa"'])
def test_consume_many_is_atomic_on_a_limit(grammar: str) -> None:
    """A LimitExceeded from the third token left two consumed, the count lost."""
    c = tokamata.compile_grammar(grammar, VOCAB, limits=Limits(max_lexer_configurations=2))
    m = c.matcher()
    m.consume(97)
    with pytest.raises(tokamata.LimitExceeded) as info:
        m.consume_many([97] * 10)
    assert info.value.limit == "max_lexer_configurations"
    assert m.num_consumed == 1
    assert m.consume_many([]) == 0 and m.num_consumed == 1


def test_consume_many_refusal_is_a_count_not_an_error() -> None:
    m = _matcher()
    assert m.consume_many([97, 98, 97, 98]) == 2 and m.num_consumed == 2


@pytest.mark.parametrize("indices", [[2**31], [2**40], [-1], [0.5], [None], np.array([2**31]),
                                     np.array([0.0]), np.array([[0]]), 5, "0"], ids=repr)
def test_fill_bitmasks_row_indices(indices: Any) -> None:
    m = _matcher()
    bitmask = tokamata.allocate_bitmask(2, VOCAB.size)
    with pytest.raises(InvalidArgument):
        tokamata.fill_bitmasks([m], bitmask, indices=indices)
    assert not bitmask.any()


def test_fill_bitmasks_other_arguments() -> None:
    bitmask = tokamata.allocate_bitmask(2, VOCAB.size)
    for matchers in (None, 5, [None], ["m"]):
        with pytest.raises(InvalidArgument):
            tokamata.fill_bitmasks(matchers, bitmask)
    with pytest.raises(InvalidArgument):
        tokamata.fill_bitmasks([_matcher()], bitmask, indices=[2])
    tokamata.fill_bitmasks([_matcher()], bitmask, indices=np.array([1], dtype=np.int64))
    assert not bitmask[0].any() and bitmask[1].any()
    with pytest.raises(InvalidArgument):
        _matcher().fill_bitmask(bitmask, 2**31)


@pytest.mark.parametrize("bitmask", [np.zeros((1, 9), dtype=np.int64), np.zeros(9, dtype=np.int32),
                                     np.zeros((2, 18), dtype=np.int32)[:, ::2], [[0] * 9]], ids=repr)
def test_fill_bitmasks_of_no_matchers_checks_the_bitmask(bitmask: Any) -> None:
    """With no matcher to name a vocabulary size, a bitmask of the wrong dtype, rank or layout
    was the core's nanobind TypeError (found by tests/fuzz/test_fuzz_matcher.py)."""
    with pytest.raises(InvalidArgument):
        tokamata.fill_bitmasks([], bitmask)
    tokamata.fill_bitmasks([], tokamata.allocate_bitmask(1, VOCAB.size))  # (a good one: nothing to do)


@pytest.mark.parametrize("batch, vocab_size", [(2**31, 257), (2**63, 257), (1, 2**31), (1, 2**63), (0, 257),
                                               (1.0, 257), (1, 257.0)])
def test_allocate_bitmask_bounds(batch: Any, vocab_size: Any) -> None:
    """2**31 rows was a MemoryError, 2**63 numpy's ValueError."""
    with pytest.raises(InvalidArgument):
        tokamata.allocate_bitmask(batch, vocab_size)


def test_token_bitmask_row_refuses_floats() -> None:
    from tokamata.bitmask import token_bitmask_row

    for bad in ([1.5], [np.float64(1.0)], [True], [None], [2**40]):
        with pytest.raises(InvalidArgument):
            token_bitmask_row(bad, 40)
    assert token_bitmask_row([np.int64(33), np.array(1)], 40).tolist() == [2, 2]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_, np.complex64])
def test_apply_bitmask_needs_float_logits(dtype: Any) -> None:
    logits = np.zeros((1, VOCAB.size), dtype=dtype)
    with pytest.raises(InvalidArgument, match="floating point"):
        tokamata.apply_bitmask(logits, tokamata.allocate_bitmask(1, VOCAB.size))
    assert not logits.any()


def test_apply_bitmask_torch_needs_float_logits() -> None:
    torch = pytest.importorskip("torch")
    for dtype in (torch.int32, torch.int64, torch.bool):
        with pytest.raises(InvalidArgument, match="floating point"):
            tokamata.apply_bitmask(torch.zeros(1, VOCAB.size, dtype=dtype),
                                   tokamata.allocate_bitmask(1, VOCAB.size))
    logits = torch.zeros(1, VOCAB.size, dtype=torch.float16)
    tokamata.apply_bitmask(logits, tokamata.allocate_bitmask(1, VOCAB.size))
    assert bool(torch.isinf(logits).all())


# ------------------------------------------------------------------ an EOS id the grammar spells


def _allowed(m: tokamata.Matcher) -> set[int]:
    return set(m.allowed_tokens().tolist())


def _sound(m: tokamata.Matcher, tokens: list[int]) -> None:
    """For each of ``tokens``: allowed by the mask iff a copy of ``m`` consumes it."""
    allowed = _allowed(m)
    for t in tokens:
        assert (t in allowed) == m.copy().consume(t), t


def test_eos_spelled_by_the_grammar_llama3() -> None:
    """``start: "yes" <|eot_id|>``: after ``yes<|eot_id|>`` the mask allowed ``<|eot_id|>``
    (the output is complete) but ``consume`` gave it to the parser, which refused it, so a
    decoding loop never ended."""
    from real_tokenizers import llama3

    tokenizer = llama3()
    vocab = tokenizer.vocab
    eot = vocab.special_token_names["<|eot_id|>"][0]
    assert eot in vocab.eos_token_ids
    watched = sorted({eot, *vocab.eos_token_ids, *tokenizer.encode("yes")})
    for compile_, text in ((tokamata.compile_grammar, 'start: "yes" <|eot_id|>'),
                           (tokamata.compile_gbnf, 'root ::= "yes" <|eot_id|>')):
        m = compile_(text, vocab).matcher()
        _sound(m, watched)
        assert eot not in _allowed(m) and not m.consume(eot)
        assert m.consume_many(tokenizer.encode("yes")) == len(tokenizer.encode("yes"))
        _sound(m, watched)
        assert _allowed(m) == {eot} and not m.is_accepting()
        assert m.consume(eot) and m.is_accepting() and not m.is_terminated()  # the grammar's
        _sound(m, watched)
        assert _allowed(m) == set(vocab.eos_token_ids)
        assert m.consume(eot) and m.is_terminated()  # the end of the output
        assert _allowed(m) == set() and not m.consume(eot)
        m.rollback(1)
        assert not m.is_terminated() and m.num_consumed == 2
        # a decoding loop that always picks <|eot_id|> when allowed ends
        m = compile_(text, vocab).matcher()
        m.consume_many(tokenizer.encode("yes"))
        steps = 0
        while not m.is_terminated() and steps < 10:
            assert m.consume(eot)
            steps += 1
        assert m.is_terminated() and steps == 2


@pytest.mark.parametrize("text, script", [
    # (tokens fed, each with whether it is accepted; "E" is the EOS id the grammar spells)
    ('start: "a" <|e|> "b"', [("E", False), ("a", True), ("E", True), ("E", False), ("b", True),
                              ("E", True), ("E", False)]),
    ('start: "a" <|e|>?', [("a", True), ("E", True), ("E", True), ("a", False)]),
    ('start: "a" <|e|>*', [("a", True), ("E", True), ("E", True), ("E", True)]),
    ('start: <|e|> | "a"', [("E", True), ("E", True), ("E", False)]),
])
def test_eos_spelled_by_the_grammar(text: str, script: list[tuple[str, bool]]) -> None:
    """The mask and consume agree at every step; the grammar takes the EOS id where it can,
    else it ends the output where the output is complete."""
    vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", None], eos_token_ids=[2],
                                                 special_tokens={"<|e|>": 2})
    ids = {"a": 0, "b": 1, "E": 2}
    m = tokamata.compile_grammar(text, vocab).matcher()
    for name, accepted in script:
        _sound(m, [0, 1, 2])
        assert m.consume(ids[name]) == accepted, (name, m)
    _sound(m, [0, 1, 2])
