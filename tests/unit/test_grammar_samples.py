"""The test corpus and its helpers, checked against lark alone (no tokamata engine).

- Every grammar in tests/data/grammars/ loads in lark (Earley, dynamic_complete), has a
  header comment, stays under 80 lines, and lark accepts / rejects its table of examples.
- tests/grammar_samples.py: regex samples fullmatch their pattern; sentences are lark-parsed
  and discards are rare; same seed, same sentences.
- tests/lark_prefix.py: the non-empty-prefix regex of a finite regex equals the brute-force
  prefix set; the prefix oracle equals brute force on finite grammars, accepts every prefix
  of generated sentences, and agrees with tables (ignored text, partial lexemes).
"""

from __future__ import annotations

import itertools
import random
import re

import pytest

import lark_prefix
from grammar_samples import (EXAMPLES, GRAMMAR_DIR, GRAMMAR_NAMES, RegexSampler,
                             SentenceGenerator, grammar_text, lark_parser, sre_parse)
from lark_prefix import PrefixOracle, nonempty_prefix_regex

@pytest.mark.parametrize("name", GRAMMAR_NAMES)
def test_grammar_files_are_small_commented_and_load_in_lark(name: str) -> None:
    text = grammar_text(name)
    assert text.startswith("//"), f"{name}.lark needs a header comment"
    assert len(text.splitlines()) < 80
    lark_parser(text)


def test_every_grammar_file_is_listed() -> None:
    assert sorted(p.stem for p in GRAMMAR_DIR.glob("*.lark")) == sorted(GRAMMAR_NAMES)


@pytest.mark.parametrize("name", GRAMMAR_NAMES)
def test_lark_reads_the_examples_as_intended(name: str) -> None:
    oracle = PrefixOracle(grammar_text(name))
    accepted, rejected = EXAMPLES[name]
    for text in accepted:
        assert oracle.accepts(text), (name, text)
    for text in rejected:
        assert not oracle.accepts(text), (name, text)


@pytest.mark.parametrize("pattern", [
    r"[a-z]+", r"\d{2,4}", r'"(?:[^"\\]|\\.)*"', r"(?i:select)", r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?",
    r"[^,\r\n]+", r"\S+\s\w", r"(ab|c)*d?", r"(?s:.)x", r"\\u[0-9a-fA-F]{4}", r"[^\x00-\x7f]+",
])
def test_regex_samples_fullmatch(pattern: str) -> None:
    sampler = RegexSampler(pattern)
    rng = random.Random(pattern)
    samples = [sampler.sample(rng) for _ in range(200)]
    assert all(re.fullmatch(pattern, s) for s in samples)
    assert len(set(samples)) > 1 or pattern in {r"(?i:select)"}


def test_string_like_samples_include_non_ascii() -> None:
    sampler = RegexSampler(r'"[^"]*"')
    rng = random.Random(0)
    assert any(not s.isascii() for s in (sampler.sample(rng) for _ in range(200)))


@pytest.mark.parametrize("name", GRAMMAR_NAMES)
def test_sentences_parse_and_discards_are_rare(name: str) -> None:
    generator = SentenceGenerator(grammar_text(name))
    sentences = generator.sentences(60, seed=7)
    assert len(sentences) == 60
    assert generator.discards <= max(3, generator.attempts // 20), generator.rejected
    assert len(set(sentences)) >= 30  # not stuck on one shape
    assert sentences[:15] == SentenceGenerator(grammar_text(name)).sentences(15, seed=7)


# ----------------------------------------------------------------------- prefix oracle


def _strings(alphabet: str, max_len: int):
    for n in range(max_len + 1):
        for chars in itertools.product(alphabet, repeat=n):
            yield "".join(chars)


@pytest.mark.parametrize("pattern, alphabet", [
    ("ab|c", "abcx"), ("a(b|cd)?", "abcdx"), ("(?i:ab)c", "abcAB"), ("[ab]{1,3}", "abc"),
    ("x[yz]{2}", "xyza"), ("(a|ab)(c|bcd)", "abcdx"), ("ab?c?", "abcx"),
])
def test_nonempty_prefix_regex_is_exact_on_finite_regexes(pattern: str, alphabet: str) -> None:
    # every language here has strings of at most 5 characters
    language = [s for s in _strings(alphabet, 5) if re.fullmatch(pattern, s)]
    expected = {s[:k] for s in language for k in range(1, len(s) + 1)}
    prefix = re.compile(nonempty_prefix_regex(list(sre_parse.parse(pattern))))
    got = {s for s in _strings(alphabet, 5) if prefix.fullmatch(s)}
    assert got == expected


@pytest.mark.parametrize("grammar, alphabet", [
    ('start: "a" b | "x" C\nb: "b" | "cd" |\nC: /[yz]{1,2}/\n', "abcdxyz"),
    ('start: s "," s | s\ns: /(?i:ab)/ | "q" "q"\n', "abqAB,"),
])
def test_prefix_oracle_is_exact_on_finite_grammars(grammar: str, alphabet: str) -> None:
    oracle = PrefixOracle(grammar)
    language = [s for s in _strings(alphabet, 5) if oracle.accepts(s)]
    assert language
    prefixes = {s[:k] for s in language for k in range(len(s) + 1)}
    for s in _strings(alphabet, 4):
        assert oracle.is_prefix(s) == (s in prefixes), s


@pytest.mark.parametrize("name, prefix, expected", [
    ("json", "tr", True), ("json", "tr ", False), ("json", "[1, ", True), ("json", " ", True),
    ("json", '{"a" 1', False), ('json', '"\\u12', True), ("json", '"\\u12G', False),
    ("json", "[1,]", False), ("json", "-", True), ("json", "-a", False),
    ("c_like", "int x = 1; //", True), ("c_like", "int x = 1; // note", True),
    ("c_like", "int x = 1; / ", False), ("c_like", "whi", True), ("c_like", "int 1", False),
    ("sql", "SEL", True), ("sql", "select * fr", True), ("sql", "select * from t where a = 'x'", True),
    ("sql", "select * from t where a = 'x", True), ("sql", "select * from t order", True),
    ("sql", "select * from 1", False), ("csv", "a,\"b", True), ("csv", "a,\"b\"c", False),
    ("nested_lists", "[[1], [", True), ("nested_lists", "[[1]]]", False),
    ("arithmetic", "(1 + ", True), ("arithmetic", "1 + )", False), ("arithmetic", "1.5e", True),
])
def test_prefix_oracle_table(name: str, prefix: str, expected: bool) -> None:
    assert _oracle(name).is_prefix(prefix) == expected


_ORACLES: dict[str, PrefixOracle] = {}


def _oracle(name: str) -> PrefixOracle:
    if name not in _ORACLES:
        _ORACLES[name] = PrefixOracle(grammar_text(name))
    return _ORACLES[name]


@pytest.mark.parametrize("name", GRAMMAR_NAMES)
def test_every_prefix_of_a_sentence_is_a_prefix(name: str) -> None:
    oracle = _oracle(name)
    rng = random.Random(name)
    for sentence in SentenceGenerator(grammar_text(name), max_lexemes=12).sentences(5, seed=3):
        for k in sorted(rng.sample(range(len(sentence) + 1), min(6, len(sentence) + 1))):
            assert oracle.is_prefix(sentence[:k]), (sentence, k)
        assert oracle.is_prefix(sentence)


def test_prefix_oracle_refuses_the_sentinel() -> None:
    with pytest.raises(ValueError):
        _oracle("json").is_prefix("[" + lark_prefix.SENTINEL)
