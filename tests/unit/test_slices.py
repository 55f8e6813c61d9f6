"""The slicer (``tokamata.slices``, ``cpp/src/token_slices.cpp``): which tokens are sliceable,
and that masks computed slice by slice equal the masks of a plain walk of the whole trie.

The oracle for sliceability is Python's UTF-8 decoder; the oracle for masks is the same
constraint compiled with slicing switched off (``core_slices`` patched to ``None``), walked
along the same random token paths from a fresh cache.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import real_tokenizers
import tokamata
from tokamata import _core
from tokamata.slices import SLICE_BOUNDS, core_slices, slice_automaton


def _sliceable_oracle(data: bytes) -> bool:
    """A prefix of a UTF-8 string of characters JSON takes unescaped in a string."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.reason != "unexpected end of data" or error.end != len(data):
            return False
        try:
            text = data[:error.start].decode("utf-8")
        except UnicodeDecodeError:
            return False
        tail = data[error.start:]  # an incomplete character: must be completable
        if not any(_completes(tail + bytes([b])) for b in range(0x80, 0xC0)):
            return False
    return all(ord(c) >= 0x20 and c not in '"\\' and not 0xD800 <= ord(c) <= 0xDFFF for c in text)


def _completes(partial: bytes) -> bool:
    try:
        partial.decode("utf-8")
        return True
    except UnicodeDecodeError as error:
        return error.reason == "unexpected end of data" and error.end == len(partial) and len(partial) < 4 \
            and any(_completes(partial + bytes([b])) for b in range(0x80, 0xC0))


def _run_automaton(data: bytes) -> bool:
    table = slice_automaton().reshape(-1, 256)
    state = 0
    for byte in data:
        state = table[state, byte]
        if state < 0:
            return False
    return True


byte_strings = st.one_of(
    st.binary(max_size=8),
    st.text(max_size=6).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.text(max_size=6).map(lambda s: s.encode("utf-8", "surrogatepass")[:-1]),
)


@settings(max_examples=600, deadline=None)
@given(byte_strings)
def test_slice_automaton_matches_the_utf8_decoder(data):
    assert _run_automaton(data) == _sliceable_oracle(data)


@pytest.mark.parametrize("data, expected", [
    (b"hello world", True), (b"caf\xc3\xa9", True), (b"caf\xc3", True), (b"\xe4\xbd", True),
    (b'say "hi"', False), (b"a\\n", False), (b"line\n", False), (b"\t", False), (b"\x7f", True),
    (b"\xc0\x80", False), (b"\xe0\x80", False), (b"\xed\xa0\x80", False), (b"\xf4\x90", False),
    (b"\x80abc", False), (b"\xff", False), (b"\xf0\x9f\x98\x80", True),
])
def test_slice_automaton_table(data, expected):
    assert _run_automaton(data) == expected == _sliceable_oracle(data)


@pytest.fixture(scope="module")
def llama3():
    return real_tokenizers.llama3()


def test_slices_partition_the_vocabulary(llama3):
    vocab = llama3.vocab
    texts = [t for t in vocab.token_bytes if t]
    sliceable = [t for t in texts if _sliceable_oracle(t)]
    sizes = core_slices(vocab).sizes()
    assert len(sizes) == len(SLICE_BOUNDS) + 2
    assert sum(count for count, _, _ in sizes[:-1]) == len(sliceable)
    assert sizes[-1][0] == len(texts) - len(sliceable)
    lower = 0
    for (count, longest, _), upper in zip(sizes, SLICE_BOUNDS):
        expected = [t for t in sliceable if lower < len(t) <= upper]
        assert count == len(expected)
        assert longest == max(map(len, expected), default=0)
        lower = upper


def test_slices_refuse_bad_arguments(llama3):
    from tokamata.trie import core_trie

    trie = core_trie(llama3.vocab)
    table = slice_automaton()
    with pytest.raises(ValueError, match="256 entries"):
        _core.TokenSlices(trie, table[:100], np.asarray([3], dtype=np.int32))
    with pytest.raises(ValueError, match="ascending"):
        _core.TokenSlices(trie, table, np.asarray([5, 3], dtype=np.int32))
    bad = table.copy()
    bad[7] = 99
    with pytest.raises(ValueError, match="out of range"):
        _core.TokenSlices(trie, bad, np.asarray([3], dtype=np.int32))


def _masks_along_paths(compile_fn, vocab, seeds, steps):
    """Masks at every step of random token paths (the path chosen by the mask itself)."""
    constraint = compile_fn()
    out = []
    for seed in seeds:
        rng = random.Random(seed)
        m = constraint.matcher()
        for _ in range(steps):
            allowed = m.allowed_tokens()
            out.append(np.asarray(allowed).tobytes())
            text = [int(t) for t in allowed if int(t) not in vocab.eos_token_ids]
            if not text:
                break
            m.consume(rng.choice(text))
    return out


def _compare(monkeypatch, vocab, compile_fn, seeds=range(3), steps=20):
    tokamata.clear_caches(vocab)
    sliced = _masks_along_paths(compile_fn, vocab, seeds, steps)
    tokamata.clear_caches(vocab)
    with monkeypatch.context() as patch:
        import tokamata.constraint as constraint_module

        patch.setattr(constraint_module, "core_slices", lambda vocab: None)
        plain = _masks_along_paths(compile_fn, vocab, seeds, steps)
    tokamata.clear_caches(vocab)
    assert len(sliced) == len(plain)
    for i, (a, b) in enumerate(zip(sliced, plain)):
        assert a == b, f"mask {i} differs"


REGEXES = [
    r'"[^"\\\x00-\x1f]*"',                    # a JSON string body: every slice taken whole
    r'"[^"\\\x00-\x1f]{0,12}"',               # bounded: short slices whole, long ones walked
    r"[a-z]+( [a-z]+)*\.",                    # dense only in part
    r"(?s).*",                                # everything, accepting everywhere
    r"[^\n]*\n[0-9]+",                        # free text then digits
    r"[\u4e00-\u9fff]+",                      # multibyte only
    r'"(?:[^"\\]|\\.){0,5}x"',                # length bound with escapes
]


@pytest.mark.parametrize("pattern", REGEXES)
def test_sliced_regex_rows_equal_plain_walks(monkeypatch, llama3, pattern):
    vocab = llama3.vocab
    _compare(monkeypatch, vocab, lambda: tokamata.compile_regex(pattern, vocab))


SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "labels": {"type": "array", "items": {"type": "string"}}}},
    {"type": "object", "properties": {"id": {"type": "string", "maxLength": 9}, "note": {"type": "string", "pattern": "^[a-z ]+$"}},
     "required": ["id"]},
    {"type": "array", "items": {"type": "string", "format": "email"}},
    {"type": "object", "additionalProperties": {"type": "string", "minLength": 3}},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_sliced_grammar_masks_equal_plain_walks(monkeypatch, llama3, schema):
    vocab = llama3.vocab
    _compare(monkeypatch, vocab, lambda: tokamata.compile_json_schema(schema, vocab), seeds=range(6), steps=30)


LARK_GRAMMARS = [
    r"""
    start: item ("\n" item)*
    item: WORD ":" TEXT
    WORD: /[a-z]+/
    TEXT: /[^\n]{1,40}/
    """,
    # TEXT may end after any character and "!" (a slice character) starts the next lexeme:
    # boundaries lie inside sliceable tokens
    r"""
    start: (TEXT "!")+
    TEXT: /[^\n]+/
    """,
]


@pytest.mark.parametrize("grammar", LARK_GRAMMARS, ids=range(len(LARK_GRAMMARS)))
def test_sliced_lark_grammar_masks_equal_plain_walks(monkeypatch, llama3, grammar):
    vocab = llama3.vocab
    _compare(monkeypatch, vocab, lambda: tokamata.compile_grammar(grammar, vocab), seeds=range(6), steps=30)


# ------------------------------------------------------------------ universal_over_text


def _derive(node, data: bytes):
    from tokamata.automata import derivatives as d

    for byte in data:
        node = d.derivative(node, byte)
        if node is d.NOTHING:
            break
    return node


def _lexer_expression(pattern: str):
    from tokamata.syntax.regex_lower import lower
    from tokamata.limits import Limits
    from tokamata.syntax.regex import parse_regex

    return lower(parse_regex(pattern, Limits()))


UNLIMITED = 1 << 30

TEXT_DEPTH_TABLE = [
    # (regex, prefix to derive first, proven text depth after it)
    (r'"[^"\\\x00-\x1f]*"', b'"', UNLIMITED),
    (r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrtu])*":', b'"', UNLIMITED),
    (r'"[^"\\\x00-\x1f]*"', b"", 0),                # the opening quote is no text
    (r'"[^"\\\x00-\x1f]{0,300}"', b'"', 300),       # bounded: at most 300 characters
    (r'"[^"\\\x00-\x1f]{0,300}"', b'"abc', 297),
    (r'"[^"\\\x00-\x1f]{0,300}"', b'"ab\xc3', 0),   # inside a character: nothing proven
    (r'"[^"\\\x00-\x1f\x7f]*"', b'"', 0),          # DEL is text
    (r'"[a-z ]*"', b'"', 0),
    (r'"[^"\\\x00-\x1f]*"|[0-9]+', b'"', UNLIMITED),
    (r"(?s).*", b"", UNLIMITED),
]


@pytest.mark.parametrize("pattern, prefix, expected", TEXT_DEPTH_TABLE)
def test_text_depth_table(pattern, prefix, expected):
    from tokamata.slices import UNLIMITED as unlimited
    from tokamata.slices import text_depth, universal_over_text

    assert unlimited == UNLIMITED
    node = _derive(_lexer_expression(pattern), prefix)
    assert text_depth(node) == expected
    assert universal_over_text(node) is (expected == UNLIMITED)


def _schema_states():
    """Derivatives of a JSON Schema grammar's terminals at the start of string text, among
    them keys of additionalProperties (string text minus the declared names) and strings with
    a maxLength."""
    from tokamata.automata import derivatives as d
    from tokamata.syntax.json_schema import schema_to_grammar

    schema = {"type": "object", "properties": {"labels": {"type": "string"}, "label": {"type": "integer"},
                                               "name": {"type": "string", "maxLength": 4},
                                               "note": {"type": "string", "minLength": 2, "maxLength": 7}}}
    grammar, _ = schema_to_grammar(schema)
    states = []
    for terminal in grammar.terminals:
        if terminal.expr is None:
            continue
        for prefix in (b'{"', b',"', b'"'):
            node = _derive(terminal.expr, prefix)
            if node is not d.NOTHING:
                states.append(node)
    return states


text_prefixes = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters='"\\'
                                               + "".join(map(chr, range(0x20)))), max_size=12).map(
    lambda s: s.encode("utf-8")) | st.sampled_from([b"label", b"labels", b"labelsx", b"nam", b"name", b"\xe4\xbd"])


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_text_depth_is_sound(data):
    """A state is live after any prefix of string text no longer than its text depth."""
    from tokamata.automata import derivatives as d
    from tokamata.slices import text_depth

    states = [(s, text_depth(s)) for s in _schema_states()]
    states = [(s, n) for s, n in states if n > 0]
    assert any(n == UNLIMITED for _, n in states) and any(0 < n < UNLIMITED for _, n in states)
    node, depth = data.draw(st.sampled_from(states))
    text = data.draw(text_prefixes)
    if len(text) <= depth:
        assert _derive(node, text) is not d.NOTHING


# ------------------------------------------------------------------ other vocabularies


@pytest.mark.parametrize("name", ["gpt-2", "qwen2", "llama-spm"])
def test_sliced_masks_equal_plain_walks_on_other_vocabularies(monkeypatch, name):
    """Byte-level BPE (GPT-2, Qwen2) and SentencePiece with byte fallback (Llama SPM: raw
    byte tokens, partial UTF-8): the partition matches the decoder oracle and masks agree."""
    vocab = real_tokenizers.ggml_vocab(name).vocab
    texts = [t for t in vocab.token_bytes if t]
    sizes = core_slices(vocab).sizes()
    assert sum(count for count, _, _ in sizes[:-1]) == sum(1 for t in texts if _sliceable_oracle(t))
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "note": {"type": "string", "maxLength": 6}}}
    _compare(monkeypatch, vocab, lambda: tokamata.compile_json_schema(schema, vocab), seeds=range(3), steps=20)
    _compare(monkeypatch, vocab, lambda: tokamata.compile_regex(r"[^\n]{0,30}\n", vocab), seeds=range(2), steps=12)
