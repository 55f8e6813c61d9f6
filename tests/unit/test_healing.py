"""Token healing (issue 18 item 3, seed 003 section 4.4): ``tokamata.heal`` and
``constraint.matcher(prefix=...)``.

- heal's rule on a table of small cases, and its bad input (each an InvalidArgument).
- A healed matcher's masks equal, step by step, those of the same constraint with the prefix
  compiled into it as a literal (regex, Lark, GBNF, JSON Schema through ``%json``), on
  Llama 3 and Gemma 3: an oracle that shares no code with the prefix phase.
- Round trips: a prompt healed on a real tokenizer plus a constrained output decodes to the
  prompt followed by a sentence; a prompt ending in ``"https:"`` heals into ``"://"``.
- rollback, copy, consume_many and fill_bitmasks across the junction.
"""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest

import tokamata
from real_tokenizers import gemma3, llama3

TOKENIZERS = {"llama3": llama3, "gemma3": gemma3}

SMALL = [b"https", b":", b"://", b"//", b"a", b"ab", b"abc", b" ", b" x", None, None]
EOS, SPECIAL = 9, 10


@pytest.fixture(scope="module")
def small():
    return tokamata.Vocabulary.from_token_bytes(SMALL, eos_token_ids=[EOS], special_tokens={"<|s|>": SPECIAL},
                                                size=16)


# (prompt ids, max_tokens, kept, removed)
HEAL_CASES = [
    ([0, 1], 1, [0], b":"),            # ":" -> "://" exists
    ([0, 1], 2, [0], b":"),            # no token begins with "https:": stop after ":"
    ([0, 1], 0, [0, 1], b""),
    ([4], 1, [], b"a"),                # "a" -> "ab", "abc": the whole prompt may go
    ([4, 4], 2, [4], b"a"),            # "aa" begins no token
    ([5], 1, [], b"ab"),               # "ab" -> "abc"
    ([6], 1, [6], b""),                # "abc": no longer token
    ([3, 7], 1, [3], b" "),            # " " -> " x"
    ([4, SPECIAL], 1, [4, SPECIAL], b""),  # special tokens stay
    ([4, EOS], 1, [4, EOS], b""),
    ([4, 13], 1, [4, 13], b""),        # padding ids too
    ([SPECIAL, 4], 2, [SPECIAL], b"a"),  # healing stops at a special token
]


@pytest.mark.parametrize("prompt,max_tokens,kept,removed", HEAL_CASES)
def test_heal_rule(small, prompt, max_tokens, kept, removed):
    assert tokamata.heal(small, prompt, max_tokens) == (kept, removed)
    assert tokamata.heal(small, np.asarray(prompt, dtype=np.int32), max_tokens) == (kept, removed)
    assert small.decode(kept) + removed == small.decode(prompt)


BAD_HEAL = [
    ("not ids", "ab", 1),
    ("bytes", b"ab", 1),
    ("floats", [1.0], 1),
    ("bools", [True], 1),
    ("negative id", [-1], 1),
    ("id past size", [16], 1),
    ("empty prompt", [], 0),
    ("negative max", [4], -1),
    ("max past prompt", [4], 2),
    ("bool max", [4], True),
    ("float max", [4], 1.0),
    ("not a sequence", 4, 1),
]


@pytest.mark.parametrize("name,prompt,max_tokens", BAD_HEAL, ids=[c[0] for c in BAD_HEAL])
def test_heal_bad_input(small, name, prompt, max_tokens):
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.heal(small, prompt, max_tokens)


def test_heal_needs_a_vocabulary():
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.heal(SMALL, [0], 1)


@pytest.mark.parametrize("prefix", ["://", 3, [58], None, memoryview(b":")])
def test_prefix_must_be_bytes(small, prefix):
    c = tokamata.compile_regex("//a", small)
    with pytest.raises(tokamata.InvalidArgument, match="prefix must be bytes"):
        c.matcher(prefix=prefix)
    assert c.matcher().allowed_tokens().tolist() == [3]   # the constraint is untouched


def test_prefix_phase_small(small):
    c = tokamata.compile_regex("//ab?", small)
    m = c.matcher(prefix=b"https:")
    assert m.prefix == b"https:" and not m.is_accepting()
    assert m.allowed_tokens().tolist() == [0]            # "https" only: "https:" is no token
    assert not m.consume(EOS) and not m.consume(SPECIAL) and not m.consume(1)
    assert m.forced_bytes() == b"https://a" and m.forced_tokens() == [0]
    assert m.consume(0)
    assert m.allowed_tokens().tolist() == [1, 2]         # ":" or "://" (spans the junction)
    twin = m.copy()
    assert m.consume(2) and m.allowed_tokens().tolist() == [4, 5]
    assert m.consume(4) and m.is_accepting() and m.forced_bytes() == b""
    assert twin.consume_many([1, 3, 5]) == 3 and twin.is_accepting()
    m.rollback(2)
    assert m.allowed_tokens().tolist() == [1, 2] and m.num_consumed == 1
    m.rollback(1)
    assert m.allowed_tokens().tolist() == [0] and m.forced_bytes() == b"https://a"
    # the empty sentence: a prefix that ends exactly at a sentence's start accepts there
    e = tokamata.compile_regex("(ab)?", small).matcher(prefix=b"https")
    assert e.consume(0) and e.is_accepting() and sorted(e.allowed_tokens().tolist()) == [4, 5, EOS]


def test_prefix_before_a_special_token(small):
    g = tokamata.compile_grammar('start: <|s|> "a"', small)
    m = g.matcher(prefix=b" ")
    assert m.allowed_tokens().tolist() == [7]            # " x" begins with " " but no sentence does
    assert m.consume(7) and m.allowed_tokens().tolist() == [SPECIAL] and m.forced_bytes() == b""


def test_fill_bitmasks_across_the_junction(small):
    c = tokamata.compile_grammar('start: "//" "a"+', small)
    matchers = [c.matcher(prefix=b":"), c.matcher(), c.matcher(prefix=b"https:")]
    matchers[0].consume(2)
    bitmask = tokamata.allocate_bitmask(3, small.size)
    tokamata.fill_bitmasks(matchers, bitmask, threads=2)
    for row, m in zip(bitmask, matchers):
        bits = np.unpackbits(row.view(np.uint8), bitorder="little")[: small.size]
        assert np.flatnonzero(bits).tolist() == m.allowed_tokens().tolist()
    single = tokamata.allocate_bitmask(1, small.size)
    matchers[2].fill_bitmask(single, 0)   # computed, then served from the matcher's cache
    matchers[2].fill_bitmask(single, 0)
    assert np.flatnonzero(np.unpackbits(single[0].view(np.uint8), bitorder="little")).tolist() == [0]


# ----------------------------------------------------------------- real tokenizers

def lark_literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# (name, kind, source, prefixes); each is compared with the prefix compiled in
CASES = [
    ("url", "regex", r"//[a-z]+\.(com|org)(/[a-z]*)?", [":", "s:", "https:"]),
    ("words", "regex", r"( [a-z]+){1,4}\.", [" ", " th", "."]),
    ("number", "regex", r"-?\d+(\.\d+)?", ["1", "-", "12."]),
    ("lark", "lark", 'start: item ("," item)*\nitem: NAME "=" NUMBER\nNAME: /[a-z]+/\nNUMBER: /[0-9]+/\n'
                     '%ignore " "', [" ", "x", "{"]),
    ("gbnf", "gbnf", 'root ::= "://" [a-z]+ ("." [a-z]+)*', [":", "http:"]),
    ("schema", "json_schema", '{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}',
     ["{", ' {"', "["]),
]


def compile_pair(kind: str, source: str, prefix: str, vocab):
    """(the constraint, the same with the prefix compiled in as a literal)."""
    if kind == "regex":
        return tokamata.compile_regex(source, vocab), tokamata.compile_regex(re.escape(prefix) + f"(?:{source})", vocab)
    if kind == "lark":
        return (tokamata.compile_grammar(source, vocab),
                tokamata.compile_grammar(f"healed: {lark_literal(prefix)} start\n{source}", vocab, start="healed"))
    if kind == "gbnf":
        return (tokamata.compile_gbnf(source, vocab),
                tokamata.compile_gbnf(f"healed ::= {json.dumps(prefix)} root\n{source}", vocab, start="healed"))
    return (tokamata.compile_grammar(f"start: %json {source}", vocab),
            tokamata.compile_grammar(f"start: {lark_literal(prefix)} %json {source}", vocab))


@pytest.mark.parametrize("tokenizer", sorted(TOKENIZERS))
@pytest.mark.parametrize("name,kind,source,prefixes", CASES, ids=[c[0] for c in CASES])
def test_prefix_masks_equal_the_prefix_compiled_in(tokenizer, name, kind, source, prefixes):
    vocab = TOKENIZERS[tokenizer]().vocab
    eos = np.asarray(vocab.eos_token_ids)
    crossed = 0
    for prefix in prefixes:
        constraint, compiled_in = compile_pair(kind, source, prefix, vocab)
        rng = random.Random(f"{name}/{tokenizer}/{prefix}")
        for _ in range(2):
            healed, plain = constraint.matcher(prefix=prefix.encode()), compiled_in.matcher()
            output = b""
            for _ in range(12):
                allowed, expected = healed.allowed_tokens(), plain.allowed_tokens()
                if not output and "%ignore" in source and not prefix.startswith(" "):
                    # (the compiled-in literal may follow ignored spaces; the prefix may not)
                    expected = np.asarray([t for t in expected.tolist() if not (vocab.token_bytes[t] or b"x")
                                           .startswith(b" ")], dtype=expected.dtype)
                else:
                    assert healed.forced_bytes() == plain.forced_bytes()
                assert np.array_equal(allowed, expected)
                assert healed.is_accepting() == plain.is_accepting()
                assert healed.forced_tokens() == plain.forced_tokens()
                text = allowed[~np.isin(allowed, eos)]
                if len(text) == 0:
                    break
                token = int(text[rng.randrange(len(text))])
                data = vocab.token_bytes[token] or b""
                crossed += len(output) < len(prefix.encode()) < len(output) + len(data)
                output += data
                assert healed.consume(token) and plain.consume(token)
    assert crossed > 0   # some walk took a token across the junction


# (prompt, the constraint on what follows it, a sentence of that constraint)
PROMPTS = [
    ("Visit https:", r"//[a-z]+\.(com|org)", "//example.com"),
    ("The answer is", r" (yes|no)\.", " yes."),
    ('{"name": "', r'[A-Z][a-z]+"}', 'Bob"}'),
    ("Count: 1, 2,", r" [0-9]+(, [0-9]+)*", " 3, 4"),
    ("Wait.", r"\.\.( [a-z]+)+", ".. what"),
]


@pytest.mark.parametrize("tokenizer", sorted(TOKENIZERS))
@pytest.mark.parametrize("prompt,pattern,sentence", PROMPTS)
def test_healing_round_trips(tokenizer, prompt, pattern, sentence):
    """The tokenizer's own encoding of prompt + sentence, after the kept ids, is accepted
    token by token and ends accepting; random walks from the healed matcher keep
    decode(kept + output) an extension of the prompt, and those that end decode to the
    prompt plus a sentence."""
    real = TOKENIZERS[tokenizer]()
    vocab = real.vocab
    eos = set(vocab.eos_token_ids)
    eos_ids = np.asarray(sorted(eos))
    ids = real.encode(prompt)
    whole = real.encode(prompt + sentence)
    constraint = tokamata.compile_regex(pattern, vocab)
    rng = random.Random(f"{tokenizer}/{prompt}")
    healed_any = False
    for max_tokens in (1, 2):
        kept, removed = tokamata.heal(vocab, ids, max_tokens)
        healed_any |= bool(removed)
        assert kept == ids[:len(kept)] and vocab.decode(kept) + removed == prompt.encode()
        assert whole[:len(kept)] == kept
        m = constraint.matcher(prefix=removed)
        rest = whole[len(kept):]
        assert m.consume_many(rest) == len(rest) and m.is_accepting()
        assert vocab.decode(kept + rest) == (prompt + sentence).encode()
        for _ in range(3):
            m = constraint.matcher(prefix=removed)
            output: list[int] = []
            while not m.is_terminated() and len(output) < 20:
                allowed = m.allowed_tokens()
                text = allowed[~np.isin(allowed, eos_ids)]
                ending = m.is_accepting() and (len(text) == 0 or rng.random() < 0.5)
                token = min(eos) if ending else int(text[rng.randrange(len(text))])
                assert m.consume(token)
                output.append(token)
                assert vocab.decode(kept + output).startswith(prompt.encode()[:len(vocab.decode(kept + output))])
            if m.is_terminated():
                written = vocab.decode(kept + output)
                assert written.startswith(prompt.encode())
                assert re.fullmatch(pattern, written[len(prompt.encode()):].decode())
    assert healed_any or tokenizer == "gemma3"


@pytest.mark.parametrize("tokenizer", sorted(TOKENIZERS))
def test_https_heals_into_a_token_across_the_junction(tokenizer):
    real = TOKENIZERS[tokenizer]()
    vocab = real.vocab
    ids = real.encode("Visit https:")
    kept, removed = tokamata.heal(vocab, ids)
    assert removed == b":" and kept == ids[:-1]
    m = tokamata.compile_regex(r"//[a-z]+\.com", vocab).matcher(prefix=removed)
    spans = [t for t in m.allowed_tokens().tolist() if vocab.token_bytes[t] == b"://"]
    assert spans, "no '://' token allowed"
    assert m.forced_bytes() == b"://"
    # what the tokenizer itself writes for the whole text is allowed, token by token
    whole = real.encode("Visit https://example.com")
    assert whole[:len(kept)] == kept
    assert m.consume_many(whole[len(kept):]) == len(whole) - len(kept) and m.is_accepting()
