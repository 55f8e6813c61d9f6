"""Forced steps (issue 18 item 2, seed 003 section 3.3.1) against brute force, on Llama 3 and
Gemma 3, at every position of seeded random walks through the masks (plain and healed
matchers, every front end):

- ``forced_tokens()`` equals consuming, on a copy, while ``allowed_tokens()`` holds exactly
  one token and it is not EOS; the matcher is unchanged.
- ``forced_bytes()`` equals the longest common prefix of what the language allows after the
  output: enumerated for finite languages; from the ``regex`` package's partial matching
  (tests/oracle.py) for infinite regexes; and for every case, from the masks of the same
  constraint over a vocabulary of the 256 single bytes (there a mask is exactly the set of
  viable next bytes, plus EOS and special tokens).
"""

from __future__ import annotations

import os
import random
import re

import numpy as np
import pytest

import tokamata
from oracle import Oracle
from real_tokenizers import gemma3, llama3

TOKENIZERS = {"llama3": llama3, "gemma3": gemma3}
SPECIAL = {"llama3": "<|start_header_id|>", "gemma3": "<start_of_turn>"}  # a special token, not EOS

# (name, kind, source, language: the sentences when finite, else None). {S} is a special token.
FINITE = [
    ("companies", "regex", "Alphabet|Amazon", ["Alphabet", "Amazon"]),
    ("colours", "regex", "red|orange|yellow|green|blue|indigo|violet",
     ["red", "orange", "yellow", "green", "blue", "indigo", "violet"]),
    ("boolean", "regex", "(true)|(false)", ["true", "false"]),
    ("url", "regex", r"https://(www\.)?example\.(com|org)",
     [f"https://{w}example.{t}" for w in ("", "www.") for t in ("com", "org")]),
    ("digits", "regex", r"19[0-9]9-0[1-3]", [f"19{d}9-0{m}" for d in "0123456789" for m in "123"]),
    ("non-ascii", "regex", "café|cafés|naïve|über|日本語", ["café", "cafés", "naïve", "über", "日本語"]),
    ("spaces", "regex", "( yes| no|  maybe)!?", [w + e for w in (" yes", " no", "  maybe") for e in ("", "!")]),
    ("lark", "lark", 'start: greeting NAME\ngreeting: "hello " | "hi "\nNAME: "bob" | "bo" | "alice"',
     [g + n for g in ("hello ", "hi ") for n in ("bob", "bo", "alice")]),
    ("gbnf", "gbnf", 'root ::= "yes" | "yet" | "no" | "x = " [0-2]', ["yes", "yet", "no", "x = 0", "x = 1", "x = 2"]),
]
INFINITE_REGEX = [
    ("phone", r"\d{3}-\d{4}"),
    ("email", r"[a-z]{2}@example\.com"),
    ("alternating", "(ab|ac)*d"),
    ("string", r'"[^"\\]*"'),
    ("long-run", "x{20,}y"),
    ("umlaut", "ü+ber"),
    ("keyword", r"(foo|bar)baz\d+"),
]
OTHER = [  # checked with the single-byte vocabulary only
    ("ignore", "lark", 'start: "let" NAME "=" NUMBER ";"\nNAME: /[a-z]+/\nNUMBER: /[0-9]+/\n%ignore " "'),
    ("special", "lark", 'start: "yes" {S} "ok" | "yet" | "no" {S}'),
    ("gbnf-ws", "gbnf", 'root ::= "{" ws "\\"k\\"" ws ":" ws [0-9]+ ws "}"\nws ::= [ ]?'),
    ("schema-name", "json_schema", '{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}'),
    ("schema-closed", "json_schema", '{"type": "object", "properties": {"name": {"const": "bob"}}, '
                                     '"required": ["name"], "additionalProperties": false}'),
    ("schema-array", "json_schema", '{"type": "array", "items": {"enum": ["abc", "abd"]}, "minItems": 2}'),
    ("json", "json", ""),
]
PREFIXES = [b":", b'{"', b"ht", " é".encode()[:2]]  # the last ends inside a character

WALKS = int(os.environ.get("TOKAMATA_FORCED_WALKS", "2"))


def compile_case(kind: str, source: str, vocab, special: str):
    source = source.replace("{S}", special)
    if kind == "regex":
        return tokamata.compile_regex(source, vocab)
    if kind == "lark":
        return tokamata.compile_grammar(source, vocab)
    if kind == "gbnf":
        return tokamata.compile_gbnf(source, vocab)
    if kind == "json_schema":
        import json
        return tokamata.compile_json_schema(json.loads(source), vocab)
    return tokamata.compile_json(vocab)


def byte_vocab(special: str) -> tokamata.Vocabulary:
    """The 256 single bytes, EOS (256) and one special token (257)."""
    return tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None, None],
                                                eos_token_ids=[256], special_tokens={special: 257})


def brute_forced_tokens(m, eos: set[int]) -> list[int]:
    m = m.copy()
    run: list[int] = []
    while len(run) < 4096:
        allowed = m.allowed_tokens()
        if len(allowed) != 1 or int(allowed[0]) in eos:
            return run
        run.append(int(allowed[0]))
        assert m.consume(run[-1])
    return run


def bytes_from_masks(constraint, output: bytes) -> bytes:
    """Forced bytes after ``output`` by a single-byte-vocabulary constraint's masks."""
    m = constraint.matcher()
    assert m.consume_many(list(output)) == len(output)
    out = b""
    while len(out) < 4096:
        allowed = m.allowed_tokens().tolist()
        if len(allowed) != 1 or allowed[0] >= 256:  # several, none, EOS or the special token
            return out
        out += bytes(allowed)
        m.consume(allowed[0])
    return out


def bytes_from_language(language: list[bytes], output: bytes) -> bytes:
    rest = [s[len(output):] for s in language if s.startswith(output)]
    assert rest, "the walk left the language"
    return b"" if b"" in rest else os.path.commonprefix(rest)


def bytes_from_regex(oracle: Oracle, output: bytes) -> bytes:
    out = b""
    while True:
        text = output + out
        try:
            if oracle.full.fullmatch(text.decode("utf-8")):
                return out
        except UnicodeDecodeError:
            pass
        following = [b for b in range(256) if oracle.viable_bytes(text + bytes([b]))]
        if len(following) != 1:
            return out
        out += bytes(following)


def with_prefix(prefix: bytes, output: bytes, forced) -> bytes:
    """Forced bytes after ``output`` in ``prefix`` + language, from ``forced(output')`` of
    the language itself."""
    if len(output) < len(prefix):
        assert prefix.startswith(output)
        return prefix[len(output):] + forced(b"")
    assert output.startswith(prefix)
    return forced(output[len(prefix):])


def walk(constraint, vocab, rng: random.Random, prefix: bytes = b"", steps: int = 30):
    """Yield (matcher, output bytes) along a random walk (short tokens preferred, so that
    walks stop inside literals); EOS only when nothing else is allowed."""
    lengths = _lengths(vocab)
    eos = np.asarray(vocab.eos_token_ids)
    m = constraint.matcher(prefix=prefix)
    consumed: list[int] = []
    for _ in range(steps):
        yield m, vocab.decode(consumed)
        allowed = m.allowed_tokens()
        allowed = allowed[~np.isin(allowed, eos)]
        if len(allowed) == 0:
            return
        if rng.random() < 0.8:
            sizes = lengths[allowed]
            allowed = allowed[sizes <= sizes.min() + 1]
        token = int(allowed[rng.randrange(len(allowed))])
        assert m.consume(token)
        consumed.append(token)


_LENGTHS: dict[int, np.ndarray] = {}


def _lengths(vocab) -> np.ndarray:
    if id(vocab) not in _LENGTHS:
        _LENGTHS[id(vocab)] = np.asarray([len(b) if b else 0 for b in vocab.token_bytes]
                                         + [0] * (vocab.size - len(vocab.token_bytes)))
    return _LENGTHS[id(vocab)]


def check_position(m, eos: set[int], expected_bytes: bytes, seen: dict) -> None:
    before = (m.num_consumed, m.is_accepting(), m.allowed_tokens())
    forced = m.forced_tokens()
    assert forced == brute_forced_tokens(m, eos)
    assert m.forced_tokens(1) == forced[:1]
    got = m.forced_bytes()
    assert got == expected_bytes
    assert m.forced_bytes(2) == got[:2]
    assert (m.num_consumed, m.is_accepting()) == before[:2]
    assert np.array_equal(m.allowed_tokens(), before[2])
    seen["tokens"] += bool(forced)
    seen["bytes"] += bool(got)
    seen["positions"] += 1


@pytest.mark.parametrize("tokenizer", sorted(TOKENIZERS))
@pytest.mark.parametrize("name,kind,source,language", FINITE, ids=[c[0] for c in FINITE])
def test_finite_languages(tokenizer, name, kind, source, language):
    real = TOKENIZERS[tokenizer]()
    vocab, eos = real.vocab, set(real.vocab.eos_token_ids)
    constraint = compile_case(kind, source, vocab, SPECIAL[tokenizer])
    by_bytes = compile_case(kind, source, byte_vocab(SPECIAL[tokenizer]), SPECIAL[tokenizer])
    sentences = [s.encode() for s in language]
    seen = {"tokens": 0, "bytes": 0, "positions": 0}
    for seed in range(WALKS):
        for prefix in (b"",) + tuple(PREFIXES[seed::2]):
            rng = random.Random(f"{name}/{tokenizer}/{seed}/{prefix!r}")
            for m, output in walk(constraint, vocab, rng, prefix):
                expected = with_prefix(prefix, output, lambda o: bytes_from_language(sentences, o))
                assert with_prefix(prefix, output, lambda o: bytes_from_masks(by_bytes, o)) == expected
                check_position(m, eos, expected, seen)
    assert seen["bytes"] > 0 and seen["positions"] > 5, seen
    if tokenizer == "llama3":  # (Gemma 3 spells every byte twice, <0xNN> too: forced tokens are rare)
        assert seen["tokens"] > 0, seen


@pytest.mark.parametrize("tokenizer", sorted(TOKENIZERS))
@pytest.mark.parametrize("name,pattern", INFINITE_REGEX, ids=[c[0] for c in INFINITE_REGEX])
def test_infinite_regexes(tokenizer, name, pattern):
    real = TOKENIZERS[tokenizer]()
    vocab, eos = real.vocab, set(real.vocab.eos_token_ids)
    oracle = Oracle(pattern)
    seen = {"tokens": 0, "bytes": 0, "positions": 0}
    for kind, source in (("regex", pattern), ("lark", f"start: /{pattern}/")):
        constraint = compile_case(kind, source, vocab, SPECIAL[tokenizer])
        for seed in range(WALKS):
            rng = random.Random(f"{name}/{kind}/{tokenizer}/{seed}")
            for m, output in walk(constraint, vocab, rng):
                check_position(m, eos, bytes_from_regex(oracle, output), seen)
    assert seen["positions"] > 5, seen


@pytest.mark.parametrize("tokenizer", sorted(TOKENIZERS))
@pytest.mark.parametrize("name,kind,source", OTHER, ids=[c[0] for c in OTHER])
def test_grammars_and_schemas(tokenizer, name, kind, source):
    real = TOKENIZERS[tokenizer]()
    vocab, eos = real.vocab, set(real.vocab.eos_token_ids)
    constraint = compile_case(kind, source, vocab, SPECIAL[tokenizer])
    by_bytes = compile_case(kind, source, byte_vocab(SPECIAL[tokenizer]), SPECIAL[tokenizer])
    special = vocab.special_token_names[SPECIAL[tokenizer]][0]
    seen = {"tokens": 0, "bytes": 0, "positions": 0}
    for seed in range(WALKS):
        for prefix in (b"", PREFIXES[seed % len(PREFIXES)]):
            rng = random.Random(f"{name}/{tokenizer}/{seed}/{prefix!r}")
            for m, output in walk(constraint, vocab, rng, prefix, steps=25):
                if special in m.allowed_tokens():
                    break  # (the walk's output no longer says where the byte-vocabulary matcher is)
                check_position(m, eos, with_prefix(prefix, output, lambda o: bytes_from_masks(by_bytes, o)), seen)
    assert seen["positions"] > 5, seen


@pytest.mark.parametrize("tokenizer", sorted(TOKENIZERS))
def test_json_schema_forces_the_required_key(tokenizer):
    """In natural spelling (the default) the required key is forced up to its string's quote,
    the issue's example; with every spelling keys may be escaped (``"\\u006eame"``): the
    quote is forced, the key is not. A closed object with a const value forces up to its end."""
    vocab = TOKENIZERS[tokenizer]().vocab
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    assert tokamata.compile_json_schema(schema, vocab).matcher().forced_bytes() == b'{"name":"'
    open_ = tokamata.compile_json_schema(schema, vocab, spelling="any")
    assert open_.matcher().forced_bytes() == b'{"'
    m = open_.matcher()
    head = TOKENIZERS[tokenizer]().encode('{"name":')
    assert m.consume_many(head) == len(head) and m.forced_bytes() == b'"'
    closed = tokamata.compile_grammar('start: "{\\"name\\":\\"" /[a-z]+/ "\\"}"', vocab)
    assert closed.matcher().forced_bytes() == b'{"name":"'


def test_special_token_and_eos_end_runs():
    vocab = tokamata.Vocabulary.from_token_bytes([b"y", b"es", b"no", None, None], eos_token_ids=[3],
                                                 special_tokens={"<|s|>": 4})
    m = tokamata.compile_grammar('start: "yes" <|s|> "no"', vocab).matcher()
    assert m.forced_tokens() == [0, 1, 4, 2]   # a special token that is not EOS is forced too
    assert m.forced_bytes() == b"yes"          # bytes stop where a special token may come
    m.consume_many([0, 1, 4, 2])
    assert m.is_accepting() and m.allowed_tokens().tolist() == [3]
    assert m.forced_tokens() == [] and m.forced_bytes() == b""   # only EOS: the run ends
    m.consume(3)
    assert m.is_terminated() and m.forced_tokens() == [] and m.forced_bytes() == b""


def test_endless_runs_are_cut_by_the_limit():
    vocab = tokamata.Vocabulary.from_token_bytes([b"aa", None], eos_token_ids=[1])
    endless = tokamata.compile_regex("a(aa)*", vocab, limits=tokamata.Limits(max_forced_length=7))
    m = endless.matcher()
    assert m.forced_tokens() == [0] * 7 and m.forced_tokens(3) == [0] * 3 and m.forced_tokens(0) == []
    assert m.forced_bytes() == b"a" and m.forced_bytes(0) == b""
    m.consume_many([0] * 5)
    assert m.forced_tokens() == [0] * 7   # the next call goes on from where it is
    long_run = tokamata.compile_regex("a{40}", tokamata.Vocabulary.from_token_bytes([b"a", None], eos_token_ids=[1]),
                                      limits=tokamata.Limits(max_forced_length=16))
    assert long_run.matcher().forced_bytes() == b"a" * 16 and long_run.matcher().forced_bytes(100) == b"a" * 16


def test_runs_are_cached_along_the_run_and_survive_rollback():
    vocab = tokamata.Vocabulary.from_token_bytes([b"ab", b"c", b"x", b"d", None], eos_token_ids=[4])
    m = tokamata.compile_regex("(ab|x)cdd", vocab).matcher()
    assert m.forced_tokens() == []
    m.consume(0)                                   # "ab": then "c" "d" "d" are forced
    assert m.forced_tokens() == [1, 3, 3]
    m.consume(1)
    assert m.forced_tokens() == [3, 3] and m.forced_tokens(1) == [3]
    twin = m.copy()
    m.rollback(2)
    assert m.forced_tokens() == [] and twin.forced_tokens() == [3, 3]
    m.consume(2)                                   # "x": the same run from another position
    assert m.forced_tokens() == [1, 3, 3] and m.forced_bytes() == b"cdd"
    m.consume_many([1, 3, 3])
    assert m.forced_tokens() == [] and m.is_accepting()


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_bad_bounds(bad):
    vocab = tokamata.Vocabulary.from_token_bytes([b"a", None], eos_token_ids=[1])
    m = tokamata.compile_regex("a+", vocab).matcher()
    with pytest.raises(tokamata.InvalidArgument):
        m.forced_tokens(bad)
    with pytest.raises(tokamata.InvalidArgument):
        m.forced_bytes(bad)
    assert m.num_consumed == 0 and m.allowed_tokens().tolist() == [0]


def test_regex_cases_are_regexes():
    for _, kind, source, language in FINITE:
        if kind == "regex":
            assert all(re.fullmatch(source, s) for s in language)
