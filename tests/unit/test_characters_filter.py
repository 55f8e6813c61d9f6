"""The ``characters=`` filter (seed 003 section 4.2) on every front end, and valid UTF-8 output
for every constraint kind.

- Masks of a filtered regex equal the independent oracle's (the ``regex`` package with partial
  matching, tests/oracle.py) for a hand-written regex of the intersection, on Llama 3.
- Random walks through filtered grammars, JSON and JSON Schema masks only ever spell allowed
  characters, and what they spell is in the unfiltered language (the unfiltered constraint
  takes the same tokens); texts of the language within the set are accepted token by token.
- Bad arguments and literals outside the set are precise errors.
- Every constraint kind's walks keep the output a valid UTF-8 prefix at every step (Llama 3's
  byte-level tokens and Gemma 3's <0xNN> byte-fallback tokens can both split characters).
"""

from __future__ import annotations

import codecs
import random
import re

import pytest

import tokamata
from tokamata.automata import charset as cs
from mask_walk import random_walk
from oracle import Oracle
from real_tokenizers import gemma3, llama3

# (regex, characters, a regex for the intersection of the two)
REGEX_CASES = [
    (r"[a-zé ]+", "[a-e ]", r"[a-e ]+"),
    (r"\w+( \w+)*", "ascii", r"[0-9A-Za-z_]+( [0-9A-Za-z_]+)*"),
    (r"(caf[eé]|th[eé])!?", "[a-z!]", r"(cafe|the)!?"),
    (r"[0-9]{2,4}|[a-f]+", ["[0-5]", "[a-c]"], r"[0-5]{2,4}|[a-c]+"),
    (r".{1,6}", "hangul", r"[\x00-\x09\x0b-\x7f\u1100-\u11ff\u3000-\u303f\u3130-\u318f\ua960-\ua97f"
                           r"\uac00-\ud7a3\ud7b0-\ud7ff]{1,6}"),
    (r"[^x]*y", "latin", r"[\x00-\x77\x79-\x7f\xa0-\u024f\u1e00-\u1eff]*y"),
]


def _walk_prefixes(matcher, vocab, rng, steps):
    """Prefixes (bytes) met on one random walk through ``matcher``, the empty one first."""
    prefixes, out = [b""], b""
    eos = set(vocab.eos_token_ids)
    for _ in range(steps):
        allowed = [t for t in matcher.allowed_tokens().tolist() if t not in eos]
        if not allowed:
            break
        token = rng.choice(allowed)
        assert matcher.consume(token)
        out += vocab.token_bytes[token]
        prefixes.append(out)
    return prefixes


@pytest.mark.parametrize("pattern,characters,intersection", REGEX_CASES)
def test_regex_masks_equal_oracle_of_intersection(pattern, characters, intersection):
    tok = llama3()
    vocab = tok.vocab
    constraint = tokamata.compile_regex(pattern, vocab, characters=characters)
    oracle = Oracle(intersection)
    rng = random.Random(hash(pattern) & 0xFFFF)
    for prefix in _walk_prefixes(constraint.matcher(), vocab, rng, steps=3):
        matcher = constraint.matcher()
        for token in _encode_bytes(vocab, prefix):
            assert matcher.consume(token)
        assert set(matcher.allowed_tokens().tolist()) == oracle.allowed(vocab, prefix), prefix


def _encode_bytes(vocab, data: bytes) -> list[int]:
    """Single-byte tokens spelling ``data`` (every byte-level vocabulary has them)."""
    by_bytes = {b: i for i, b in enumerate(vocab.token_bytes) if b is not None and len(b) == 1}
    return [by_bytes[bytes([b])] for b in data]


def _lark(vocab, characters):
    return tokamata.compile_grammar(r"""
        start: pair ("," pair)*
        pair: WORD "=" (WORD | NUMBER)
        WORD: /[^\s=,]+/
        NUMBER: /[0-9]+(\.[0-9]+)?/
        %ignore " "
    """, vocab, characters=characters)


def _gbnf(vocab, characters):
    return tokamata.compile_gbnf(r'''root ::= item (", " item)*
item ::= [^,\n]+''', vocab, characters=characters)


SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items":
          {"type": "string", "maxLength": 8}}}, "required": ["name", "tags"]}

# (name, build(vocab, characters) -> Constraint, characters, sample texts inside the set)
WALK_CASES = [
    ("lark", _lark, "[a-z0-9=,. ]", ["a=1, b=c", "key=value.ok"]),
    ("gbnf", _gbnf, "[a-z, ]", ["ab, cd", "x"]),
    ("json", lambda v, c: tokamata.compile_json(v, characters=c), "ascii",
     ['{"a":[1,2.5,"x"]}', '"plain"', "null"]),
    ("json schema", lambda v, c: tokamata.compile_json_schema(SCHEMA, v, characters=c),
     ["ascii", "hangul"], ['{"name":"\ud55c\uae00","tags":["ok"]}', '{"name":"x","tags":[]}']),
]


def _charset(characters):
    """The code points ``characters`` names, from the named sets and ``re`` (not tokamata's
    own parsing of the argument)."""
    items = [characters] if isinstance(characters, str) else characters
    sets = [cs.NAMED_SETS[i] if i in cs.NAMED_SETS else
            cs.normalize((c, c) for c in range(0x110000) if re.fullmatch(i, chr(c))) for i in items]
    return cs.union(*sets)


@pytest.mark.parametrize("name,build,characters,samples", WALK_CASES, ids=[c[0] for c in WALK_CASES])
def test_walks_spell_only_allowed_characters(name, build, characters, samples):
    tok = llama3()
    vocab = tok.vocab
    filtered = build(vocab, characters)
    unfiltered = build(vocab, None)
    allowed = _charset(characters)
    rng = random.Random(7)
    for _ in range(6):
        matcher = filtered.matcher()
        out = random_walk(matcher, vocab, rng, steps=40, stop_after=10, stop_chance=0.1)
        text = out.decode("utf-8", "ignore")
        assert all(cs.contains(allowed, ord(c)) for c in text), text
        # the walk is in the unfiltered language too
        check = unfiltered.matcher()
        assert check.consume_many(tok.encode(text)) == len(tok.encode(text))
    for text in samples:  # completeness: texts within the set are accepted token by token
        ids = tok.encode(text)
        matcher = filtered.matcher()
        assert matcher.consume_many(ids) == len(ids), text
        assert matcher.is_accepting(), text


def test_filtered_masks_are_subsets_of_unfiltered_ones():
    vocab = llama3().vocab
    filtered = tokamata.compile_json(vocab, characters="[{}\\[\\]\",:0-9a-z]")
    unfiltered = tokamata.compile_json(vocab)
    f, u = filtered.matcher().allowed_tokens(), unfiltered.matcher().allowed_tokens()
    assert set(f.tolist()) < set(u.tolist())
    for token in f.tolist():
        data = vocab.token_bytes[token]
        assert data is None or all(c in '{}[]",:0123456789abcdefghijklmnopqrstuvwxyz'
                                   for c in data.decode("utf-8", "ignore"))


@pytest.mark.parametrize("build,message", [
    (lambda v: tokamata.compile_grammar('start: "Café" | "tea"', v, characters="ascii"), "'Café'"),
    (lambda v: tokamata.compile_regex("yes|no|peut-être", v, characters="ascii"), "'peut-être'"),
    (lambda v: tokamata.compile_json(v, characters="[0-9]"), "outside characters"),
    (lambda v: tokamata.compile_regex("[A-Z]+", v, characters="[a-z]"), "no output"),
    (lambda v: tokamata.compile_gbnf('root ::= [A-Z]+ | "xy"', v, characters="[a-w]"), "'xy'"),
])
def test_literals_outside_the_set_are_errors(build, message):
    with pytest.raises(tokamata.InvalidArgument, match=message):
        build(llama3().vocab)


def test_literal_error_says_where():
    with pytest.raises(tokamata.InvalidArgument) as info:
        tokamata.compile_grammar('start: "a" b\nb: "Ω"', llama3().vocab, characters="latin")
    assert (info.value.line, info.value.column) == (2, 4)


def test_vanished_alternatives_and_ignored_terminals_are_dropped():
    vocab = llama3().vocab
    # WS vanishes (no space allowed): it is no longer ignored; UPPER vanishes with its rule
    c = tokamata.compile_grammar(r"""
        start: (LOWER | UPPER)+
        LOWER: /[a-z]+/
        UPPER: /[A-Z]+/
        %ignore /[ \t]+/
    """, vocab, characters="[a-z]")
    m = c.matcher()
    assert all(vocab.token_bytes[t] is None or vocab.token_bytes[t].isalpha() and vocab.token_bytes[t].islower()
               for t in m.allowed_tokens().tolist() if t not in vocab.eos_token_ids)
    assert c.filters == ("characters='[a-z]'",)


@pytest.mark.parametrize("bad", ["greek", "ab", "[]", "", [], 5, b"[a]", ["ascii", 3], {"ascii": 1}])
def test_bad_characters_arguments(bad):
    vocab = llama3().vocab
    with pytest.raises(tokamata.InvalidArgument, match="characters"):
        tokamata.compile_regex("a", vocab, characters=bad)


# ------------------------------------------------------------------ valid UTF-8 for every kind

KINDS = [
    ("regex", lambda v: tokamata.compile_regex(r".{0,12}", v)),
    ("lark", lambda v: tokamata.compile_grammar('start: /[^"]{1,10}/ ("|" /.{1,5}/)*', v)),
    ("gbnf", lambda v: tokamata.compile_gbnf("root ::= [^\\x00-\\x1f]{1,12}", v)),
    ("json", lambda v: tokamata.compile_json(v)),
    ("json schema", lambda v: tokamata.compile_json_schema({"type": "array", "items": {"type": "string"}}, v)),
]


def _valid_utf8_prefix(data: bytes) -> bool:
    """Is ``data`` valid UTF-8 up to an incomplete (but so far valid) last character? Python's
    incremental decoder checks the complete part; the pending bytes it keeps (it keeps a
    surrogate's ``ED A0`` too) must complete to some character."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        decoder.decode(data, final=False)
    except UnicodeDecodeError:
        return False
    pending = decoder.getstate()[0]
    if not pending:
        return True
    need = {0xC: 2, 0xD: 2, 0xE: 3, 0xF: 4}[pending[0] >> 4] - len(pending)
    for cont in range(0x80, 0xC0):
        try:
            (pending + bytes([cont]) + b"\x80" * (need - 1)).decode("utf-8")
            return True
        except UnicodeDecodeError:
            pass
    return False


@pytest.mark.parametrize("tokenizer", [llama3, gemma3], ids=["llama3", "gemma3"])
@pytest.mark.parametrize("name,build", KINDS, ids=[k[0] for k in KINDS])
def test_every_kind_keeps_output_valid_utf8(tokenizer, name, build):
    vocab = tokenizer().vocab
    constraint = build(vocab)
    rng = random.Random(11)
    eos = set(vocab.eos_token_ids)
    # prefer multi-byte and byte-fallback tokens, where invalid UTF-8 could come from
    partial = [t for t, b in enumerate(vocab.token_bytes)
               if b is not None and b and not _complete_utf8(b)]
    for _ in range(4):
        matcher = constraint.matcher()
        out = b""
        for _ in range(14):
            allowed = [t for t in matcher.allowed_tokens().tolist() if t not in eos]
            if not allowed:
                break
            allowed_set = set(allowed)
            risky = [t for t in partial if t in allowed_set]
            token = rng.choice(risky if risky and rng.random() < 0.7 else allowed)
            assert matcher.consume(token)
            out += vocab.token_bytes[token]
            assert _valid_utf8_prefix(out), (name, out)
        if matcher.is_accepting():
            out.decode("utf-8")  # an accepted output is valid UTF-8 as a whole


def _complete_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def test_token_wildcards_keep_only_tokens_within_the_set():
    vocab = llama3().vocab
    constraint = tokamata.compile_regex(r"(?P<TEXT_TOKEN>){2}", vocab, characters="[a-z]")
    allowed = constraint.matcher().allowed_tokens().tolist()
    expected = [i for i, b in enumerate(vocab.token_bytes) if b and b.isascii() and b.isalpha() and b.islower()]
    assert allowed == expected
    with pytest.raises(tokamata.InvalidArgument, match="no output"):
        tokamata.compile_regex(r"(?P<PARAGRAPH_TOKEN>)", vocab, characters="[\u0378]")
