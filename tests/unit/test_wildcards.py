"""Seed 000's wildcards and sugar (issue 19): token wildcards against a brute-force oracle on real
tokenizers, IMAGE, SUBSTRING_OF against ``s in text``, the DELIMITED sugar against Python oracles,
compile_choice against the ``regex``-package oracle, and the errors of bad input.

The wildcard oracle never uses tokamata's automata: a language with token wildcards is written as
a Python regex over *latin-1 strings* (each byte one character), where each wildcard is a
placeholder character above U+00FF that no token's text contains. A token sequence is a viable
prefix iff some reading of it (each token as its text, or as a placeholder if it is in that
wildcard's set) is a partial match.
"""

from __future__ import annotations

import random
import re

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import tokamata
from tokamata.syntax import extensions as ext
from oracle import Oracle
from real_tokenizers import gemma3, llama3

TEXT, PARAGRAPH = "\u0100", "\u0101"

# (compile, oracle regex over latin-1 strings with placeholders)
WILDCARD_CASES = [
    (("regex", r"(?P<TEXT_TOKEN>)b|ab"), TEXT + "b|ab"),
    (("lark", 'start: "a" (%text_token | "bc")'), "a(" + TEXT + "|bc)"),
    (("regex", r"(?P<TEXT_TOKEN>){3}"), TEXT * 3),
    (("regex", r"x(?P<PARAGRAPH_TOKEN>)+\n"), "x" + PARAGRAPH + "+\n"),
    (("regex", r"(?P<PARAGRAPH_TOKEN>)|hello world"), PARAGRAPH + "|hello world"),
    (("lark", 'start: %paragraph_token ~ 2 "."'), PARAGRAPH + PARAGRAPH + r"\."),
]


def _compile(spec, vocab):
    kind, text = spec
    return tokamata.compile_regex(text, vocab) if kind == "regex" else tokamata.compile_grammar(text, vocab)


class _WildcardOracle:
    def __init__(self, pattern: str, vocab):
        self.partial = regex.compile(pattern)
        self.full = re.compile(pattern)
        self.vocab = vocab
        self.sets = {TEXT: set(ext.text_token_ids(vocab)), PARAGRAPH: set(ext.paragraph_token_ids(vocab))}
        self.texts = [t.decode("latin-1") if t else None for t in vocab.token_bytes]

    def viable(self, s: str) -> bool:
        return self.partial.fullmatch(s, partial=True) is not None

    def step(self, readings: set[str], token: int) -> set[str]:
        out = set()
        text = self.texts[token]
        for r in readings:
            if text is not None and self.viable(r + text):
                out.add(r + text)
            for mark, ids in self.sets.items():
                if token in ids and self.viable(r + mark):
                    out.add(r + mark)
        return out

    def allowed(self, readings: set[str]) -> set[int]:
        found = set()
        for r in readings:
            for mark, ids in self.sets.items():
                if self.viable(r + mark):
                    found |= ids
        for token, text in enumerate(self.texts):
            if text is not None and token not in found and any(self.viable(r + text) for r in readings):
                found.add(token)
        if any(self.full.fullmatch(r) for r in readings):
            found.update(self.vocab.eos_token_ids)
        return found


@pytest.mark.parametrize("tokenizer", [llama3, gemma3], ids=["llama3", "gemma3"])
@pytest.mark.parametrize("spec,pattern", WILDCARD_CASES, ids=[c[0][1] for c in WILDCARD_CASES])
def test_wildcard_masks_equal_the_brute_force_oracle(tokenizer, spec, pattern):
    vocab = tokenizer().vocab
    constraint = _compile(spec, vocab)
    assert constraint.strategy == "earley"
    oracle = _WildcardOracle(pattern, vocab)
    rng = random.Random(pattern)
    matcher, readings = constraint.matcher(), {""}
    for _ in range(4):
        got = set(matcher.allowed_tokens().tolist())
        assert got == oracle.allowed(readings)
        text_tokens = sorted(got - set(vocab.eos_token_ids))
        if not text_tokens:
            break
        # prefer tokens a literal of the pattern also reads (the wildcard/literal overlap)
        literal = [t for t in text_tokens if any(oracle.viable(r + oracle.texts[t]) for r in readings)]
        token = rng.choice(literal or text_tokens)
        assert matcher.consume(token)
        readings = oracle.step(readings, token)


@pytest.mark.parametrize("tokenizer", [llama3, gemma3], ids=["llama3", "gemma3"])
def test_token_counts_and_paragraph_tokens(tokenizer):
    vocab = tokenizer().vocab
    newline = {i for i, b in enumerate(vocab.token_bytes) if b and (b"\n" in b or b"\r" in b)}
    m = tokamata.compile_regex(r"(?P<PARAGRAPH_TOKEN>)+", vocab).matcher()
    longest = max(set(ext.paragraph_token_ids(vocab)), key=lambda i: len(vocab.token_bytes[i]))
    for token in (longest, longest):
        assert not newline & set(m.allowed_tokens().tolist())
        assert m.consume(token)
    three = tokamata.compile_regex(r"(?P<TEXT_TOKEN>){3}", vocab).matcher()
    for token in sorted(newline)[:2] + [longest]:
        assert not three.is_accepting()
        assert three.consume(token)
    assert three.is_accepting()
    assert set(three.allowed_tokens().tolist()) == set(vocab.eos_token_ids)


def test_image_tokens_from_special_names():
    names = {"<start_of_image>": 3, "<image_soft_token>": 4, "<end_of_image>": 5}
    vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", b"<start_of_image>", None, None, None, None],
                                                 eos_token_ids=[6], special_tokens=names)
    for c in (tokamata.compile_regex(r"a(?P<IMAGE>)", vocab), tokamata.compile_grammar('start: "a" %image', vocab)):
        m = c.matcher()
        steps = [(0, {0}), (3, {3}), (4, {4}), (4, {4, 5}), (5, {4, 5}), (None, {6})]
        for token, allowed in steps:
            assert set(m.allowed_tokens().tolist()) == allowed
            if token is not None:
                assert m.consume(token)
        assert m.is_accepting()
    with pytest.raises(tokamata.Unsupported) as info:
        tokamata.compile_regex(r"x(?P<IMAGE>)", llama3().vocab)
    assert info.value.span == (1, 12)
    with pytest.raises(tokamata.Unsupported) as info:
        tokamata.compile_grammar('start: "x"\n  | %image', gemma3().vocab)
    assert (info.value.line, info.value.column) == (2, 5)


def _byte_vocab():
    return tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])


def _accepts(constraint, data: bytes) -> bool:
    m = constraint.matcher()
    return m.consume_many(list(data)) == len(data) and m.is_accepting()


@settings(max_examples=60, deadline=None)
@given(st.text("abé€𝄞", min_size=1, max_size=30), st.text("abé€𝄞", max_size=5), st.data())
def test_substring_of_is_s_in_text(text, probe, data):
    vocab = _byte_vocab()
    pattern = "(?P<SUBSTRING_OF>" + re.escape(text) + ")"
    constraint = tokamata.compile_regex(pattern, vocab)
    start = data.draw(st.integers(0, len(text)))
    inside = text[start:data.draw(st.integers(start, len(text)))]
    for s in (probe, inside):
        assert _accepts(constraint, s.encode()) == (s in text)
    expr = ext.substring_of(text.encode())
    for s in (probe, inside):
        assert ext.matches(expr, s.encode()) == (s != "" and s in text)
    # never half a character
    m = constraint.matcher()
    assert m.consume_many(list(text.encode()[:1])) == 1
    lark = tokamata.compile_grammar(f'start: "<" %substring_of "{text}" ">"', vocab)
    assert _accepts(lark, f"<{inside}>".encode()) == (inside != "")


def _list_oracle(s: str, low: int, high: int | None) -> bool:
    parts = s.split(",") if s else []
    return all(p in ("a", "bb") for p in parts) and low <= len(parts) and (high is None or len(parts) <= high)


def _subsequence_oracle(s: str, items=("red", "green", "blue")) -> bool:
    parts = s.split(", ")
    indices = [items.index(p) if p in items else -1 for p in parts]
    return -1 not in indices and indices == sorted(set(indices))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(["a", "bb", ",", "b", "red", "green", "blue", ", "]), max_size=7))
def test_delimited_sugar_against_python_oracles(pieces):
    vocab = _byte_vocab()
    s = "".join(pieces)
    lists = [
        (0, None, tokamata.compile_regex(r"(?P<DELIMITED_LIST>a|bb(?P<DELIMITER>,))*", vocab)),
        (2, 3, tokamata.compile_regex(r"(?P<DELIMITED_LIST>a|bb(?P<DELIMITER>,)){2,3}", vocab)),
        (1, None, tokamata.compile_grammar('start: %delimited_list(item, ",")\nitem: "a" | "bb"', vocab)),
        (1, 2, tokamata.compile_grammar('start: %delimited_list(/a|bb/, ",", 1, 2)', vocab)),
    ]
    for low, high, c in lists:
        assert _accepts(c, s.encode()) == _list_oracle(s, low, high), (c, s)
    subsequences = [
        tokamata.compile_regex(r"(?P<DELIMITED_SUBSEQUENCE_OF>red|green|blue(?P<DELIMITER>, ))", vocab),
        tokamata.compile_grammar('start: %delimited_subsequence_of(["red", g, "blue"], ", ")\ng: "green"', vocab),
    ]
    for c in subsequences:
        assert _accepts(c, s.encode()) == _subsequence_oracle(s), (c, s)


def test_text_wildcards():
    vocab = _byte_vocab()
    quoted = tokamata.compile_regex(r"(?P<QUOTED_TEXT>)", vocab)
    until = tokamata.compile_grammar('start: "<a>" %text_until "</a>"', vocab)
    until_regex = tokamata.compile_regex(r"<a>(?P<TEXT_UNTIL></a>)", vocab)
    unquoted = tokamata.compile_grammar("start: %unquoted_text", vocab)
    for s, ok in [('"a\\"b"', True), ('"a"b"', False), ('"\\\\"', True), ('"x', False)]:
        assert _accepts(quoted, s.encode()) == ok
    for s, ok in [("<a>x</a>", True), ("<a>x</a>y</a>", False), ("<a></a>", True)]:
        assert _accepts(until, s.encode()) == ok == _accepts(until_regex, s.encode())
    for s, ok in [("hello world", True), ("key: value", False), ("a:b", True), ("-x", True), ("- x", False),
                  ("x # c", False), ("x#c", True), ("x ", False), ("x:", False), ("[x", False), ("é", True)]:
        assert _accepts(unquoted, s.encode()) == ok, s


@pytest.mark.parametrize("choices", [["Red", "Green", "Blue"], ["yes", "no", "maybe so", "", "日本"]])
def test_compile_choice_matches_the_oracle(choices):
    tok = llama3()
    vocab = tok.vocab
    constraint = tokamata.compile_choice(choices, vocab)
    oracle = Oracle("|".join(re.escape(c) for c in choices))
    target = max(choices, key=len)
    m, prefix = constraint.matcher(), b""
    for token in tok.encode(target) + [None]:
        assert set(m.allowed_tokens().tolist()) == oracle.allowed(vocab, prefix)
        if token is not None:
            assert m.consume(token)
            prefix += vocab.token_bytes[token]


BAD_REGEXES = [
    (r"(?P<TEXT_TOKN>)", tokamata.InvalidSyntax, (0, 14)),
    (r"ab(?P<SUBSTRING_OF>)", tokamata.InvalidSyntax, (2, 20)),
    (r"(?P<SUBSTRING_OF>a+)", tokamata.InvalidSyntax, (17, 19)),
    (r"(?P<DELIMITED_LIST>a)", tokamata.InvalidSyntax, (0, 21)),
    (r"(?P<DELIMITED_LIST>a(?P<DELIMITER>,)b)", tokamata.InvalidSyntax, (0, 38)),
    (r"x(?P<DELIMITER>,)", tokamata.InvalidSyntax, (1, 15)),
    (r"(?P<DELIMITED_LIST>a(?P<DELIMITER>,)){3,2}", tokamata.InvalidSyntax, (38, 39)),
    (r"(?P<TEXT_TOKEN>x)", tokamata.InvalidSyntax, (15, 16)),
]


@pytest.mark.parametrize("pattern,error,span", BAD_REGEXES)
def test_bad_regex_extensions(pattern, error, span):
    with pytest.raises(error) as info:
        tokamata.compile_regex(pattern, _byte_vocab())
    assert info.value.span == span


BAD_GRAMMARS = [
    ('start: %text_tokn', (1, 8)),
    ('start: "a"\n  | %substring_of ""', (2, 19)),
    ('start: %delimited_list("a")', (1, 27)),
    ('start: %delimited_list("a", ",", 3, 2)', (1, 34)),
    ('start: %delimited_subsequence_of("a", ",")', (1, 34)),
    ('START: %text_token\nstart: START', (1, 8)),
]


@pytest.mark.parametrize("grammar,where", BAD_GRAMMARS)
def test_bad_grammar_extensions(grammar, where):
    with pytest.raises(tokamata.TokamataError) as info:
        tokamata.compile_grammar(grammar, _byte_vocab())
    assert (info.value.line, info.value.column) == where


def test_compile_choice_refuses_bad_lists():
    vocab = _byte_vocab()
    for bad in ([], ["a", "a"], ["a", 1], "ab", None):
        with pytest.raises(tokamata.InvalidArgument):
            tokamata.compile_choice(bad, vocab)


@pytest.mark.parametrize("tokenizer", [llama3, gemma3], ids=["llama3", "gemma3"])
def test_text_token_sets_are_whole_utf8_tokens(tokenizer):
    """TEXT_TOKEN: every token with bytes that decode as UTF-8 on their own (so wildcards in a
    row never write invalid UTF-8); PARAGRAPH_TOKEN: those without a line break."""
    vocab = tokenizer().vocab

    def whole(b):
        try:
            b.decode("utf-8")
            return True
        except UnicodeDecodeError:
            return False

    text = [i for i, b in enumerate(vocab.token_bytes) if b and whole(b)]
    assert list(ext.text_token_ids(vocab)) == text
    assert list(ext.paragraph_token_ids(vocab)) == [i for i in text if not set(vocab.token_bytes[i]) & {10, 13}]
