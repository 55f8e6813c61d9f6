"""A limit reached while decoding fails that one call, not the matcher or the process.

A constraint is compiled lazily: lexer states (``max_dfa_states``) and lexing ambiguity
(``max_lexer_configurations``) can run out at any step of a decode. The call that reaches
the limit raises :class:`tokamata.LimitExceeded` naming it; the matcher keeps its position
(what it consumed before the call), ``rollback`` still works and so do masks at positions
already reached; other matchers and constraints are unaffected. This is what a server
relies on to fail one request and keep serving the rest (docs/engine.md, "Serving").
"""

from __future__ import annotations

import itertools
import random

import pytest

import tokamata
from tokamata import Limits

VOCAB = tokamata.Vocabulary.from_token_bytes([b"a", b"b", None], eos_token_ids=[2])


def _walk_until_limit(matcher: tokamata.Matcher, steps: int, seed: int) -> tokamata.LimitExceeded:
    rng = random.Random(seed)
    bitmask = tokamata.allocate_bitmask(1, VOCAB.size)
    for _ in range(steps):
        try:
            matcher.fill_bitmask(bitmask, 0)
            allowed = [t for t in matcher.allowed_tokens().tolist() if t != 2]
            matcher.consume(rng.choice(allowed))
        except tokamata.LimitExceeded as error:
            return error
    raise AssertionError("the walk never reached the limit")


@pytest.mark.parametrize("source, limits, limit", [
    ("regex:(a|b)*a(a|b){10}", Limits(max_dfa_states=64), "max_dfa_states"),
    ('lark:start: x+\nx: "a" | "aa" | "aaa" | "b"', Limits(max_lexer_configurations=2), "max_lexer_configurations"),
])
def test_a_limit_fails_one_call_and_the_matcher_stays_usable(source: str, limits: Limits, limit: str) -> None:
    kind, text = source.split(":", 1)
    compile_ = tokamata.compile_regex if kind == "regex" else tokamata.compile_grammar
    constraint = compile_(text, VOCAB, limits=limits)
    other = tokamata.compile_regex("(a|b)+", VOCAB).matcher()
    matcher = constraint.matcher()
    error = _walk_until_limit(matcher, 2000, seed=7)
    assert error.limit == limit and error.value > error.bound
    reached = matcher.num_consumed
    assert reached > 0
    # the position is what was consumed before the failing call; going back works
    matcher.rollback(reached)
    assert matcher.num_consumed == 0
    assert sorted(matcher.allowed_tokens().tolist()) == [0, 1]
    # the constraint serves new matchers, and other constraints are untouched
    assert sorted(constraint.matcher().allowed_tokens().tolist()) == [0, 1]
    assert other.consume(0) and other.allowed_tokens().tolist() == [0, 1, 2]


@pytest.mark.parametrize("threads", [1, 2])
def test_a_limit_in_a_batch_fills_the_other_rows(threads: int) -> None:
    tight = tokamata.compile_regex("(a|b)*a(a|b){10}", VOCAB, limits=Limits(max_dfa_states=64))
    failing = tight.matcher()
    _walk_until_limit(failing, 2000, seed=7)  # the next mask of `failing` needs a new state
    healthy = [tokamata.compile_regex("a+", VOCAB).matcher() for _ in range(3)]
    bitmask = tokamata.allocate_bitmask(4, VOCAB.size)
    with pytest.raises(tokamata.LimitExceeded) as info:
        tokamata.fill_bitmasks([healthy[0], failing, healthy[1], healthy[2]], bitmask, threads=threads)
    assert info.value.limit == "max_dfa_states"
    assert [int(bitmask[row, 0]) for row in (0, 2, 3)] == [1, 1, 1]  # only "a"
    assert int(bitmask[1, 0]) == 0  # the failing row is left as it was


# Every string of a and b up to 6 bytes: a token may hold several lexemes, so grammar masks
# walk the trie across lexeme boundaries (the work Limits.max_mask_work bounds).
AB_TOKENS = [bytes(p) for n in range(1, 7) for p in itertools.product(b"ab", repeat=n)]
AB_VOCAB = tokamata.Vocabulary.from_token_bytes(AB_TOKENS + [None], eos_token_ids=[len(AB_TOKENS)])
# Abutting atoms of two overlapping terminals: every split of a token is a parse.
ABUTTING = 'start: x+\nx: A | B\nA: /a+b*/\nB: /b+/'


def test_a_mask_past_its_work_budget_fails_that_call_only() -> None:
    tight = tokamata.compile_grammar(ABUTTING, AB_VOCAB, limits=Limits(max_mask_work=40))
    roomy = tokamata.compile_grammar(ABUTTING, AB_VOCAB)
    failing, healthy = tight.matcher(), roomy.matcher()
    bitmask = tokamata.allocate_bitmask(2, AB_VOCAB.size)
    with pytest.raises(tokamata.LimitExceeded) as info:
        failing.fill_bitmask(bitmask, 0)
    assert info.value.limit == "max_mask_work" and info.value.value > info.value.bound == 40
    # the matcher still consumes (consume walks no trie) and reports its position
    assert failing.consume(AB_TOKENS.index(b"ab")) and failing.num_consumed == 1
    # a batch fills the healthy row and leaves the failing one as it was
    bitmask[:] = 0
    with pytest.raises(tokamata.LimitExceeded):
        tokamata.fill_bitmasks([failing, healthy], bitmask)
    assert not bitmask[0].any()
    expected = set(range(len(AB_TOKENS)))  # x+ over a/b: every token may come first
    assert {i for i in range(AB_VOCAB.size) if bitmask[1, i // 32] >> (i % 32) & 1} == expected
    assert set(healthy.allowed_tokens().tolist()) == expected


def test_the_work_budget_is_checked_when_limits_are_made() -> None:
    with pytest.raises(tokamata.InvalidArgument):
        Limits(max_mask_work=0)
