"""compile_json: RFC 8259 JSON, checked byte by byte and with real tokenizers.

The tables and the json-module oracle are about RFC 8259's spellings, so they compile with
``spelling="any"``; natural spelling (the default) has its own tests in test_json_spelling.py.

Oracle: Python's ``json`` module with the non-RFC constants (NaN, Infinity) refused. Compact
mode refuses whitespace outside strings; ``whitespace=n`` allows at most n characters in each
place RFC 8259 allows whitespace.
"""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tokamata
from mask_walk import random_walk
from real_tokenizers import llama3

BYTE_VOCAB = tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])
EOS = 256


def accepts(constraint, data: bytes) -> bool:
    m = constraint.matcher()
    for b in data:
        if not m.consume(b):
            return False
    return m.is_accepting()


def rfc_json(text: str) -> bool:
    def refuse(name):
        raise ValueError(name)
    try:
        json.loads(text, parse_constant=refuse)
    except (ValueError, RecursionError):
        return False
    return True


def whitespace_runs_outside_strings(text: str) -> list[int]:
    """Lengths of whitespace runs outside string literals (text must be valid JSON)."""
    runs, run, in_string, escaped = [], 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch in " \t\n\r":
            run += 1
            continue
        if run:
            runs.append(run)
            run = 0
        if ch == '"':
            in_string = True
    if run:
        runs.append(run)
    return runs


VALID = [
    '0', '-0', '1', '-12', '3.25', '1e5', '1E+5', '-2.5e-3', '0.0', '1234567890123456789012345',
    'true', 'false', 'null', '""', '"a"', '"\\"\\\\\\/\\b\\f\\n\\r\\t"', '"\\u0000"', '"\\uD834\\uDD1E"',
    '"\\ud800"', '"\\uABCD\\uabcd"', '"é ü 中文 🎉"', '[]', '{}', '[1,2,3]', '[[],[[]],{}]',
    '{"a":1}', '{"a":{"b":[true,false,null]},"c":"d"}', '{"":""}', '[{"k":[1,{"x":"y"}]}]',
    '"\x7f"', '"' + "\u2028" + '"',
]
INVALID = [
    '', '01', '-', '+1', '1.', '.5', '1e', '1e+', '0x10', 'NaN', 'Infinity', '-Infinity', 'tru', 'True',
    'nul', '"', '"abc', '"\\x"', '"\\u12"', '"\\u12G4"', '"\n"', '"\t"', '"\x00"', '[', ']', '[1,]', '[,1]',
    '{"a"}', '{"a":}', '{a:1}', "{'a':1}", '{"a":1,}', '{,}', '[1 2]', '1 2', '"a""b"', '{}{}', '[]]',
    ' 1', '1 ', '[ 1]', '{"a" :1}',
]


@pytest.fixture(scope="module")
def compact():
    return tokamata.compile_json(BYTE_VOCAB, spelling="any")


@pytest.mark.parametrize("text", VALID)
def test_valid_json_is_accepted(compact, text):
    assert rfc_json(text), text  # the table itself is right
    assert accepts(compact, text.encode())


@pytest.mark.parametrize("text", INVALID)
def test_invalid_json_is_refused(compact, text):
    assert accepts(compact, text.encode()) is (rfc_json(text) and not whitespace_runs_outside_strings(text))
    assert not accepts(compact, text.encode())


def test_invalid_utf8_inside_strings_is_refused(compact):
    for data in (b'"\xff"', b'"\xc3"', b'"\xed\xa0\x80"', b'"\xc0\xaf"', b'"\xf4\x90\x80\x80"'):
        assert not accepts(compact, data), data


@pytest.mark.parametrize("bound", [1, 3])
def test_whitespace_bound(bound):
    c = tokamata.compile_json(BYTE_VOCAB, whitespace=bound, spelling="any")
    for text in ['[1, 2]', '{ "a" : [ 1 ,2 ] }', ' 1 ', '\n[\t]\r', '{"a":1}']:
        assert accepts(c, text.encode()) is (max(whitespace_runs_outside_strings(text), default=0) <= bound), text
    assert accepts(c, ('[' + ' ' * bound + '1]').encode())
    assert not accepts(c, ('[' + ' ' * (bound + 1) + '1]').encode())
    assert not accepts(c, b'[\x0b1]')  # vertical tab is not JSON whitespace


def test_whitespace_option_is_checked():
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.compile_json(BYTE_VOCAB, whitespace="lots")
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.compile_json(BYTE_VOCAB, whitespace=-1)


JSONISH = st.text(alphabet=list('{}[],:"\\ -+.0123456789eEtrufalsn\t\nxé\u00e9'), max_size=14)


@settings(max_examples=400, deadline=None)
@given(JSONISH)
def test_agrees_with_the_json_module(text):
    c = test_agrees_with_the_json_module.constraint
    expected = rfc_json(text) and max(whitespace_runs_outside_strings(text), default=0) <= 2
    assert accepts(c, text.encode()) is expected


test_agrees_with_the_json_module.constraint = tokamata.compile_json(BYTE_VOCAB, whitespace=2, spelling="any")


@settings(max_examples=150, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                    max_leaves=12))
def test_serialized_values_are_accepted(value):
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=bool(random.getrandbits(1)))
    assert accepts(test_agrees_with_the_json_module.constraint, text.encode())


def test_real_tokenizer_instances_and_random_walks():
    tokenizer = llama3()
    vocab = tokenizer.vocab
    c = tokamata.compile_json(vocab)
    docs = [{"name": "Zoë", "tags": ["a", "b\"c"], "n": -1.5e-3, "ok": True, "none": None,
             "nested": {"deep": [[1], [2, {"x": "\u4e2d"}]]}}, [], "plain", 12345678901234567890]
    bitmask = tokamata.allocate_bitmask(1, vocab.size)
    for doc in docs:
        text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
        m = c.matcher()
        for token in tokenizer.encode(text):
            m.fill_bitmask(bitmask)
            assert (bitmask[0, token >> 5] >> (token & 31)) & 1, (text, vocab.token_bytes[token])
            assert m.consume(token)
        assert m.is_accepting()
        assert set(vocab.eos_token_ids) <= set(m.allowed_tokens().tolist())
    rng = random.Random(7)
    for _ in range(12):
        m = c.matcher()
        out = random_walk(m, vocab, rng, steps=60, stop_after=15, stop_chance=0.3, short_bytes=2, short_bias=0.7)
        if m.is_accepting():
            assert rfc_json(out.decode("utf-8")), out
        else:
            # not finished: the text must still be a prefix the grammar can complete
            assert len(m.allowed_tokens()) > 0
