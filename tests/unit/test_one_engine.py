"""One engine: every front end gives the same Constraint and Matcher, and the two strategies
(regular, Earley) agree on the same language.

- The regex case table (tests/regex_cases.py; each entry is checked against ``re.fullmatch``)
  is replayed through ``compile_regex`` (regular strategy), a ``start: /re/`` Lark grammar
  (regular too: one terminal) and ``start: value`` / ``value: T`` (the Earley strategy on
  the same language), byte by byte: accepted strings are consumed to an accepting end,
  rejected ones are refused or end non-accepting, and the masks of the two strategies are
  equal at every step.
- The table is replayed through the GBNF front end and JSON Schema ``pattern`` too, each
  pattern spelled in that dialect by tests/regex_dialects.py (read with Python's own regex
  parser; patterns whose meaning differs between the dialects are left out, and at least
  half of the table must translate), and through the Python derivative engine and its DFA
  (the test oracle the native engine replaced), on the lowered expression.
- The same seed regexes run on a real tokenizer (Qwen2): masks equal along random walks.
- The matcher contract, parametrized over every front end: fill == allowed_tokens ==
  what consume accepts; rollback and copy restore and isolate positions; EOS terminates;
  consume_many stops at the first refusal; fill_bitmasks (one or two threads, a matcher
  listed twice) writes exactly what fill_bitmask writes.
"""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest

import real_tokenizers
import tokamata
from tokamata.grammar.ir import Grammar, Rule, nonterminal
from regex_cases import SEED_000_REGEXES, TABLE
from regex_dialects import to_ecma, to_gbnf
from tokamata.automata.dfa import DEAD, LazyByteDfa
from tokamata.syntax.regex import parse_regex
from tokamata.syntax.regex_lower import lower

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


IDS = [p for p, _, _ in TABLE]


def test_most_of_the_table_translates_to_gbnf_and_ecma():
    assert sum(to_gbnf(p) is not None for p, _, _ in TABLE) >= len(TABLE) // 2
    assert sum(to_ecma(p) is not None for p, _, _ in TABLE) >= len(TABLE) // 2


@pytest.mark.parametrize("pattern, accepted, rejected", TABLE, ids=IDS)
def test_regex_table_through_gbnf(pattern, accepted, rejected):
    grammar = to_gbnf(pattern)
    if grammar is None:
        pytest.skip("the pattern's meaning differs in GBNF (flags, categories or anchors)")
    regex, gbnf = tokamata.compile_regex(pattern, BYTES), tokamata.compile_gbnf(grammar, BYTES)
    for text in accepted + rejected:
        matchers = [regex.matcher(), gbnf.matcher()]
        alive = True
        for byte in text.encode():
            masks = [m.allowed_tokens().tolist() for m in matchers]
            assert masks[0] == masks[1], (pattern, grammar, text)
            steps = [m.consume(byte) for m in matchers]
            assert steps[0] == steps[1], (pattern, grammar, text)
            if not steps[0]:
                alive = False
                break
        verdicts = [alive and m.is_accepting() for m in matchers]
        assert verdicts == [text in accepted] * 2, (pattern, grammar, text, verdicts)


@pytest.mark.parametrize("pattern, accepted, rejected", TABLE, ids=IDS)
def test_regex_table_through_json_schema_pattern(pattern, accepted, rejected):
    ecma = to_ecma(pattern)
    if ecma is None:
        pytest.skip("the pattern's meaning differs in ECMA-262 (flags, categories or anchors)")
    # natural spelling (raw characters) and every spelling (here: json.dumps's \u escapes)
    for spelling, ascii_only in (("natural", False), ("any", True)):
        constraint = tokamata.compile_json_schema({"type": "string", "pattern": ecma}, BYTES, spelling=spelling)
        for text in accepted + rejected:
            m = constraint.matcher()
            ok = _spell(m, json.dumps(text, ensure_ascii=ascii_only).encode()) and m.is_accepting()
            assert ok == (text in accepted), (pattern, ecma, text, spelling)


@pytest.mark.parametrize("pattern, accepted, rejected", TABLE, ids=IDS)
def test_regex_table_through_the_python_oracle(pattern, accepted, rejected):
    # the Python derivative engine and its lazy DFA on the lowered expression: the oracle
    # the native engine is tested against, held to the same table
    dfa = LazyByteDfa(lower(parse_regex(pattern, tokamata.Limits())), tokamata.Limits())
    for text in accepted + rejected:
        state = DEAD if dfa.is_empty else dfa.run(text.encode())
        assert (state != DEAD and dfa.accepting(state)) == (text in accepted), (pattern, text)


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
    # (JSON's natural spelling is reported; nothing else is approximated)
    assert [line for line in constraint.report() if not line.startswith("spelling at /: natural")] == []
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
