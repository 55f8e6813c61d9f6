"""One engine: every front end gives the same Constraint and Matcher, and the two strategies
(regular, Earley) agree on the same language.

- The regex case table (tests/regex_cases.py; each entry is checked against ``re.fullmatch``)
  is replayed through ``compile_regex`` (regular strategy), a ``start: /re/`` Lark grammar
  (regular too: one terminal) and ``start: value`` / ``value: T`` (the Earley strategy on
  the same language), byte by byte: accepted strings are consumed to an accepting end,
  rejected ones are refused or end non-accepting, and the masks of the two strategies are
  equal at every step.
- The same seed regexes run on a real tokenizer (Qwen2): masks equal along random walks.
- The matcher contract, parametrized over every front end: fill == allowed_tokens ==
  what consume accepts; rollback and copy restore and isolate positions; EOS terminates;
  consume_many stops at the first refusal; fill_bitmasks (one or two threads, a matcher
  listed twice) writes exactly what fill_bitmask writes.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

import real_tokenizers
import tokamata
from tokamata.grammar.ir import Grammar, Rule, nonterminal
from regex_cases import SEED_000_REGEXES, TABLE

BYTES = tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])
EOS = 256


def _lark(pattern: str) -> str:
    return "/" + pattern.replace("/", "\\/") + "/"


def _three_ways(pattern: str, vocab):
    """compile_regex; the Lark grammar ``start: /re/`` (lark refuses zero-width terminals, so
    for a pattern matching "" the regex's own grammar IR instead); and that IR with the
    terminal moved one rule down, which the Earley strategy serves."""
    regex = tokamata.compile_regex(pattern, vocab)
    lexeme = regex.grammar
    if re.fullmatch(pattern, "") or "\n" in pattern:
        single = tokamata.compile_grammar_ir(lexeme, vocab)
    else:
        single = tokamata.compile_grammar(f"start: {_lark(pattern)}", vocab)
    rules = [Rule(1, rule.rhs) for rule in lexeme.rules] + [Rule(0, (nonterminal(1),))]
    earley = tokamata.compile_grammar_ir(Grammar(lexeme.terminals, ("start", "value"), tuple(rules), 0), vocab)
    return regex, single, earley


def _spell(m, data: bytes) -> bool:
    """Consume ``data`` byte by byte; False at the first refusal."""
    return all(m.consume(b) for b in data)


@pytest.mark.parametrize("pattern, accepted, rejected", TABLE, ids=[p for p, _, _ in TABLE])
def test_regex_table_through_every_strategy(pattern, accepted, rejected):
    for text in accepted:
        assert re.fullmatch(pattern, text), (pattern, text)
    for text in rejected:
        assert not re.fullmatch(pattern, text), (pattern, text)
    regex, single, earley = _three_ways(pattern, BYTES)
    expected = "regular" if regex.grammar.terminals else "earley"  # "()" is the empty output alone
    assert (regex.strategy, single.strategy, earley.strategy) == (expected, expected, "earley")
    for text in accepted + rejected:
        matchers = [c.matcher() for c in (regex, single, earley)]
        alive = True
        for byte in text.encode():  # in lockstep: the masks agree at every step
            masks = [m.allowed_tokens().tolist() for m in matchers]
            assert masks[0] == masks[1] == masks[2], (pattern, text)
            steps = [m.consume(byte) for m in matchers]
            assert steps[0] == steps[1] == steps[2], (pattern, text)
            if not steps[0]:
                alive = False
                break
        verdicts = [alive and m.is_accepting() for m in matchers]
        assert verdicts == [text in accepted] * 3, (pattern, text, verdicts)


@pytest.mark.parametrize("pattern", SEED_000_REGEXES)
def test_strategies_agree_on_a_real_tokenizer(pattern):
    vocab = real_tokenizers.qwen2().vocab
    constraints = _three_ways(pattern, vocab)
    rng = random.Random(pattern)
    for _ in range(3):
        matchers = [c.matcher() for c in constraints]
        for _step in range(8):
            masks = [m.allowed_tokens().tolist() for m in matchers]
            assert masks[0] == masks[1] == masks[2]
            assert len({m.is_accepting() for m in matchers}) == 1
            text = [t for t in masks[0] if t not in vocab.eos_token_ids]
            if not text:
                break
            token = rng.choice(text)
            assert all(m.consume(token) for m in matchers)


# ------------------------------------------------------------------------------ contract

VOCAB = tokamata.Vocabulary.from_token_bytes(
    [b"{", b"}", b'"', b"a", b"b", b":", b",", b"1", b"2", b" ", b'"a"', b'{"', b"12", b"ab", None],
    eos_token_ids=[14])

FRONT_ENDS = {
    "regex": lambda: tokamata.compile_regex(r'\{"a":(1|12)\}|ab+', VOCAB),
    "lark": lambda: tokamata.compile_grammar('start: "{" pair ("," pair)* "}"\npair: "\\"a\\":" NUM\nNUM: /[12]+/',
                                             VOCAB),
    "gbnf": lambda: tokamata.compile_gbnf('root ::= "{" pair ("," pair)* "}"\npair ::= "\\"a\\":" [12]+', VOCAB),
    "json": lambda: tokamata.compile_json(VOCAB),
    "json_schema": lambda: tokamata.compile_json_schema(
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, VOCAB),
}


def _bits(bitmask_row: np.ndarray, vocab_size: int) -> list[int]:
    bits = np.unpackbits(bitmask_row.view(np.uint8), bitorder="little")[:vocab_size]
    return np.flatnonzero(bits).tolist()


@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_matcher_contract(front_end):
    constraint = FRONT_ENDS[front_end]()
    assert isinstance(constraint, tokamata.Constraint)
    assert constraint.report() == []
    m = constraint.matcher()
    assert isinstance(m, tokamata.Matcher)
    rng = random.Random(front_end)
    bitmask = tokamata.allocate_bitmask(2, VOCAB.size)
    history = []
    while not m.is_terminated():
        m.fill_bitmask(bitmask, 1)
        allowed = m.allowed_tokens().tolist()
        assert _bits(bitmask[1], VOCAB.size) == allowed
        # consume accepts exactly the allowed tokens (tried on copies: the original is untouched)
        for token in range(VOCAB.size):
            twin = m.copy()
            assert twin.consume(token) == (token in allowed), (front_end, token)
        assert (14 in allowed) == m.is_accepting()
        assert allowed, "a live matcher always allows something"
        token = rng.choice(allowed) if len(history) < 12 else (14 if 14 in allowed else rng.choice(allowed))
        history.append((allowed, m.is_accepting()))
        assert m.consume(token)
    assert m.is_accepting() and m.allowed_tokens().tolist() == []
    m.fill_bitmask(bitmask, 0)
    assert _bits(bitmask[0], VOCAB.size) == [14]  # only EOS after termination
    assert not m.consume(3)
    # rollback walks the history back exactly
    for allowed, accepting in reversed(history):
        m.rollback(1)
        assert m.allowed_tokens().tolist() == allowed and m.is_accepting() == accepting
    assert m.num_consumed == 0
    with pytest.raises(tokamata.InvalidArgument):
        m.rollback(1)
    with pytest.raises(tokamata.InvalidArgument):
        m.consume(VOCAB.size)


@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_consume_many_stops_at_the_first_refusal(front_end):
    m = FRONT_ENDS[front_end]().matcher()
    first = m.allowed_tokens().tolist()[0]
    refused = next(t for t in range(VOCAB.size) if t not in m.allowed_tokens().tolist())
    assert m.consume_many([first, refused, first]) in (1, 2)
    assert m.num_consumed >= 1


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_fill_bitmasks_equals_single_fills(threads):
    matchers = []
    rng = random.Random(threads)
    for name in sorted(FRONT_ENDS):
        for steps in range(3):
            m = FRONT_ENDS[name]().matcher()
            for _ in range(steps):
                allowed = [t for t in m.allowed_tokens().tolist() if t != 14]
                if allowed:
                    m.consume(rng.choice(allowed))
            matchers.append(m)
    matchers.append(matchers[0])  # a matcher listed twice
    batch = tokamata.allocate_bitmask(len(matchers), VOCAB.size)
    batch[:] = -1
    tokamata.fill_bitmasks(matchers, batch, threads=threads)
    single = tokamata.allocate_bitmask(1, VOCAB.size)
    for i, m in enumerate(matchers):
        m.fill_bitmask(single, 0)
        assert np.array_equal(batch[i], single[0]), i


def test_fill_bitmasks_rejects_bad_threads():
    m = FRONT_ENDS["regex"]().matcher()
    bitmask = tokamata.allocate_bitmask(1, VOCAB.size)
    for bad in (0, -1, 1.5, True, 10_000):
        with pytest.raises(tokamata.InvalidArgument):
            tokamata.fill_bitmasks([m], bitmask, threads=bad)


def test_empty_pattern_and_nullable_patterns():
    assert tokamata.compile_regex("", BYTES).matcher().allowed_tokens().tolist() == [EOS]
    m = tokamata.compile_regex("(ab)*", BYTES).matcher()
    assert m.allowed_tokens().tolist() == [ord("a"), EOS]
    assert m.consume(ord("a")) and m.allowed_tokens().tolist() == [ord("b")]
    assert m.consume(ord("b")) and m.allowed_tokens().tolist() == [ord("a"), EOS]


def test_limit_errors_carry_name_value_and_bound():
    # Earley items and lexer configurations are limits raised in C++; both arrive as
    # LimitExceeded with the limit's name, the value reached and the bound
    limits = tokamata.Limits(max_lexer_configurations=3)
    c = tokamata.compile_grammar("start: s\ns: A s A | A\nA: /a+/", BYTES, limits=limits)
    m = c.matcher()
    with pytest.raises(tokamata.LimitExceeded) as info:
        for _ in range(10):
            m.consume(ord("a"))
    assert info.value.limit == "max_lexer_configurations" and info.value.bound == 3 and info.value.value > 3
