"""``tokamata.compile_type`` on the type table (tests/type_cases.py), both syntaxes:

- round trip: hypothesis values written with ``tokamata.dumps`` are accepted token by token
  (the real tokenizer's own encoding of the text) on Llama 3 (and Gemma 3 for a subset), the
  matcher accepts at the end, and ``parse`` gives the value back;
- random walks through the masks end in texts that parse into valid instances (pydantic
  models validate again; everything else is checked by the package's own deep type check
  and by writing the value back and parsing it again);
- texts outside the language are refused by the matcher and by ``parse``.
"""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tokamata
from tokamata.syntax.types import describe
from tokamata.syntax.types.values import fits

import real_tokenizers
from type_cases import BY_NAME, CASES, Chain, Color, Point, Tree

SYNTAXES = ("json", "python")


@functools.lru_cache(maxsize=None)
def constraint(name: str, syntax: str, tokenizer: str = "llama3") -> tokamata.Constraint:
    case = BY_NAME[name]
    vocab = getattr(real_tokenizers, tokenizer)().vocab
    approximate = case.python_approximate if syntax == "python" else frozenset()
    return tokamata.compile_type(case.tp, vocab, syntax=syntax, approximate=approximate)


def _accepts_tokens(c: tokamata.Constraint, tokens: list[int]) -> bool:
    m = c.matcher()
    for token in tokens:
        if not m.consume(token):
            return False
    return m.is_accepting()


def _round_trip(name: str, syntax: str, tokenizer: str, data) -> None:
    case = BY_NAME[name]
    c = constraint(name, syntax, tokenizer)
    value = data.draw(case.values)
    text = tokamata.dumps(value, case.tp, syntax=syntax)
    tokens = getattr(real_tokenizers, tokenizer)().encode(text)
    assert _accepts_tokens(c, tokens), text
    assert c.parse(text) == value, text
    assert c.parse(text.encode()) == value


@pytest.mark.parametrize("syntax", SYNTAXES)
@pytest.mark.parametrize("name", [case.name for case in CASES])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_round_trip_llama3(name: str, syntax: str, data) -> None:
    _round_trip(name, syntax, "llama3", data)


@pytest.mark.parametrize("syntax", SYNTAXES)
@pytest.mark.parametrize("name", [case.name for case in CASES if case.gemma])
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_round_trip_gemma3(name: str, syntax: str, data) -> None:
    _round_trip(name, syntax, "gemma3", data)


def _check_instance(value, name: str, syntax: str) -> None:
    case = BY_NAME[name]
    node = describe(case.tp, tokamata.Limits())
    assert fits(value, node), value
    if hasattr(type(value), "model_validate"):
        type(value).model_validate(value.model_dump(by_alias=True))  # pydantic's own validation
    text = tokamata.dumps(value, case.tp, syntax=syntax)
    assert constraint(name, syntax).parse(text) == value


@functools.lru_cache(maxsize=None)
def _token_lengths() -> np.ndarray:
    return np.array([len(b) if b else 0 for b in real_tokenizers.llama3().vocab.token_bytes], dtype=np.int64)


def _walk(m: tokamata.Matcher, rng: random.Random, steps: int) -> bytes:
    """A random walk through the masks (tests/mask_walk.py's policy, with numpy filters: inside
    strings the masks hold most of the vocabulary): short tokens mostly, EOS once past half."""
    vocab = real_tokenizers.llama3().vocab
    eos = np.asarray(sorted(vocab.eos_token_ids))
    lengths = _token_lengths()
    out = b""
    for step in range(steps):
        allowed = m.allowed_tokens()
        texts = allowed[~np.isin(allowed, eos)]
        if len(texts) < len(allowed) and (step > steps // 2 or rng.random() < 0.3) or not len(texts):
            break
        short = texts[lengths[texts] <= 2]
        pool = short if len(short) and rng.random() < 0.9 else texts
        token = int(pool[rng.randrange(len(pool))])
        assert m.consume(token)
        out += vocab.token_bytes[token]
    return out


@pytest.mark.parametrize("syntax", SYNTAXES)
@pytest.mark.parametrize("name", [case.name for case in CASES])
def test_random_walks_parse(name: str, syntax: str) -> None:
    c = constraint(name, syntax)
    rng = random.Random(f"{name}/{syntax}")
    finished = 0
    for _ in range(4):
        m = c.matcher()
        out = _walk(m, rng, 60)
        if m.is_accepting():
            finished += 1
            if syntax == "python" and "uniqueItems" in BY_NAME[name].python_approximate:
                try:  # (the grammar lets set items repeat; parse refuses a repeat)
                    value = c.parse(out)
                except tokamata.ParseError as error:
                    assert "twice" in error.message
                    continue
            else:
                value = c.parse(out)
            _check_instance(value, name, syntax)
        else:
            with pytest.raises(tokamata.ParseError):
                c.parse(out)


INVALID = [  # (case, syntax, text outside the language)
    ("int_range", "json", "301"), ("int_range", "json", "-6"), ("int_range", "python", "1.0"),
    ("int_multiple", "json", "4"), ("float_range", "python", "1"), ("str_len", "json", '""'),
    ("str_len", "python", "'123456789'"), ("str_pattern", "json", '"abc"'), ("str_pattern", "python", "'a1 '"),
    ("bool", "python", "true"), ("none", "json", "None"), ("date", "json", '"2023-02-29"'),
    ("date", "python", "date.fromisoformat('2024-13-01')"), ("time", "json", '"24:00:00"'),
    ("enum", "json", '"RED"'), ("enum", "python", "Color.PURPLE"), ("enum", "python", "'red'"),
    ("literal", "python", "'c'"), ("tuple_fixed", "json", '[1,"a"]'), ("tuple_fixed", "python", "(1, 'a', True, 2)"),
    ("tuple_variadic", "python", "(1)"), ("set_literal", "json", "[1,1]"), ("dataclass", "json", '{"x":1}'),
    ("dataclass", "json", '{"y":1.5,"x":1}'), ("dataclass", "python", "Point(1, 2.5)"),
    ("dataclass", "python", "Point(x=1,y=2)"), ("dataclass", "python", "Point(y=2, x=1)"),
    ("dataclass", "python", "Point(x=1, y=2, z=3)"), ("dataclass_defaults", "python", "Defaults()"),
    ("recursive_chain", "python", "Chain(value=1, next=Chain(next=None))"),
    ("namedtuple", "json", "[91,0]"), ("pydantic_tool", "json", '{"query":"x"}'),
    ("pydantic_tool", "json", '{"q":"x","limit":0}'), ("pydantic_tool", "python", "SearchTool(query='x')"),
    ("pydantic_discriminated", "json", '{"shapes":[],"main":{"kind":"circle","side":3}}'),
    ("typeddict", "json", '{"title":"x"}'), ("nested_class", "python", "Inner(flag=True)"),
    ("str", "python", "'a\\qb'"), ("str", "python", "'a\nb'"), ("str", "json", '"a" '),
    ("int", "python", "007"), ("int", "python", " 7"),
]


@pytest.mark.parametrize("name,syntax,text", INVALID)
def test_invalid_texts_refused(name: str, syntax: str, text: str) -> None:
    c = constraint(name, syntax)
    tokens = real_tokenizers.llama3().encode(text)
    assert not _accepts_tokens(c, tokens)
    with pytest.raises(tokamata.ParseError):
        c.parse(text)


def test_parse_error_location() -> None:
    c = constraint("dataclass", "python")
    with pytest.raises(tokamata.ParseError) as info:
        c.parse("Point(x=1, y=2]")
    assert info.value.location == (14, 15)
    with pytest.raises(tokamata.ParseError) as info:
        constraint("dataclass", "json").parse('{"x":1,"y":}')
    assert info.value.span == (11, 12)
    with pytest.raises(tokamata.ParseError) as info:
        constraint("nested_order", "json").parse(
            '{"id":"00000000-0000-0000-0000-000000000000","customer":{"name":"a","email":"a@b.com"},'
            '"items":[{"sku":"abc","quantity":0,"price":1}]}')
    assert info.value.path == "Order.items[].quantity"


def test_known_texts() -> None:
    assert constraint("recursive_tree", "python").parse("Tree(label='a', children=[Tree(label='b')])") == \
        Tree("a", [Tree("b")])
    assert constraint("recursive_chain", "json").parse('{"value":1,"next":{"value":2}}') == Chain(1, Chain(2))
    assert constraint("union_classes", "python").parse("Color.GREEN") is Color.GREEN
    assert constraint("union_classes", "python").parse("Point(x=1, y=2)") == Point(1, 2.0)
    assert constraint("dataclass_defaults", "python").parse("Defaults(name='n', note='x')").note == "x"
