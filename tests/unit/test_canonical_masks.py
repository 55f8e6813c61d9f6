"""Canonical masks (``canonical=True``) against the tokenizer's own encodings.

- Finite languages: every string of a regex is enumerated and encoded with ``tokenizers``;
  the matcher must walk exactly the trie of those encodings: at every node its allowed set is
  the node's next tokens, plus EOS where an encoding ends (sound and complete at once).
- Infinite languages: texts of the language (hypothesis) encoded by ``tokenizers`` are accepted
  token by token, with EOS at the end (completeness); random walks through the masks end in
  sequences equal to the encoding of their text (soundness).
- Bad input: ``canonical`` not a bool; vocabularies the filter cannot follow.
"""

from __future__ import annotations

import re
import re._parser as sre  # type: ignore[import-not-found]

import pytest

import real_tokenizers as real
from canonical_checks import (check_encodings_accepted, check_masks_along_trie, check_walks_are_encodings,
                              compile_canonical, encoding_trie)
import tokamata
from tokamata import InvalidArgument, Unsupported

TOKENIZERS = {"gpt2": real.gpt2, "llama3": real.llama3, "qwen2": real.qwen2}


def enumerate_regex(pattern: str, limit: int = 2000) -> list[str]:
    """Every string of a finite regex (literals, classes, alternation, groups, bounded
    repeats), sorted; AssertionError past ``limit`` strings or on anything else."""

    def seq(items) -> set[str]:
        out = {""}
        for op, av in items:
            out = {a + b for a in out for b in node(op, av)}
            assert len(out) <= limit
        return out

    def node(op, av) -> set[str]:
        if op is sre.LITERAL:
            return {chr(av)}
        if op is sre.IN:
            chars = set()
            for kind, value in av:
                if kind is sre.LITERAL:
                    chars.add(chr(value))
                elif kind is sre.RANGE:
                    chars.update(chr(c) for c in range(value[0], value[1] + 1))
                else:
                    raise AssertionError(kind)
            return chars
        if op is sre.BRANCH:
            return set().union(*(seq(b) for b in av[1]))
        if op is sre.SUBPATTERN:
            return seq(av[-1])
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            lo, hi, body = av
            assert hi is not sre.MAXREPEAT
            inner = seq(body)
            out, level = set(), {""}
            for k in range(hi + 1):
                if k >= lo:
                    out |= level
                level = {a + b for a in level for b in inner}
            return out
        raise AssertionError(op)

    return sorted(seq(sre.parse(pattern)))


# seed 003's Alphabet|Amazon, seed 000's colours, seed 004's booleans, and more with digits,
# spaces, punctuation, contractions, newlines and non-ASCII
FINITE = [
    r"(hello|help|helium) world",
    r"Alphabet|Amazon",
    r"(red|green|blue|yellow|purple|orange|black|white)",
    r"boolean: ((true)|(false))",
    r"[0-2]{1,4}",
    r"(1|12|123|1234|12345)",
    r"(a|an|the) (cat|cats|catalog)",
    r"(it|It)('s|'S| is) (ok|OK)",
    r"(x|y)( {0,3})(z|!)",
    r"(ab|a\n|a\n\n|a \n)( b)?",
    r"(café|cafe|naïve|naive)",
    r"(日本|日本語|中文)",
    r"(\$|€)[0-9]{2}",
    r"(foo|foo\.|foo\.\.\.|foo!)",
    r"(don't|do not|doesn't)",
    r"(Theodore|The odor|The ode)",
    r"(true|truest|t rue)",
    r"( |  |\t)(if|in)",
    r"(http|https)://(a|ab)\.com",
    r"(-|\+)?[0-9]\.[0-9]",
    r"(\[|\(|\{)(1|11)(\]|\)|\})",
    r"(A|AB|ABC)(1|12)",
    r"(x\r\n|x\n|x\r)",
    r"(over|overall|overwhelm)(ing)?",
    r"('re|'ll|'ve|'rx|'l|x'll)( it)?",
]


def check_finite(tokenizer, pattern: str) -> int:
    vocab = tokenizer.vocab
    strings = enumerate_regex(pattern)
    assert all(re.fullmatch(pattern, s) for s in strings)
    trie = encoding_trie(tokenizer, strings)
    matcher = tokamata.compile_regex(pattern, vocab, canonical=True).matcher()
    check_masks_along_trie(matcher, trie, vocab, pattern)
    return len(trie)


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@pytest.mark.parametrize("pattern", FINITE)
def test_finite_languages_walk_exactly_their_encodings(name, pattern):
    check_finite(TOKENIZERS[name](), pattern)


def test_bitmask_and_consume_agree_with_allowed_tokens():
    tokenizer = real.llama3()
    vocab = tokenizer.vocab
    c = tokamata.compile_regex(r"(hello|help|helium) world", vocab, canonical=True)
    m = c.matcher()
    bitmask = tokamata.allocate_bitmask(2, vocab.size) if hasattr(tokamata, "allocate_bitmask") else None
    import numpy as np

    bitmask = np.zeros((2, (vocab.size + 31) // 32), dtype=np.int32)
    hel = tokenizer.encode("helium")[0]
    m.fill_bitmask(bitmask, 0)
    other = c.matcher()
    assert other.consume(hel)
    tokamata.fill_bitmasks([m, other], bitmask)
    for row, matcher in zip(bitmask, [m, other]):
        bits = np.unpackbits(row.view(np.uint8), bitorder="little")[:vocab.size]
        assert np.flatnonzero(bits).tolist() == matcher.allowed_tokens().tolist()
    assert not other.consume(tokenizer.encode("lo")[0])  # "hel" + "lo": "hello" is one token
    assert other.num_consumed == 1
    other.rollback(1)
    assert other.allowed_tokens().tolist() == m.allowed_tokens().tolist()


def test_forced_tokens_follow_the_filter():
    tokenizer = real.llama3()
    c = tokamata.compile_regex(r"(hello|help|helium) world", tokenizer.vocab, canonical=True)
    m = c.matcher()
    m.consume(tokenizer.encode("helium")[0])
    assert m.forced_tokens() == tokenizer.encode("helium world")[1:]


def test_bad_arguments():
    vocab = real.llama3().vocab
    with pytest.raises(InvalidArgument, match="canonical"):
        tokamata.compile_regex("a", vocab, canonical=1)
    bytes_only = tokamata.Vocabulary.from_token_bytes([b"a", None], eos_token_ids=[1])
    with pytest.raises(Unsupported, match="merges"):
        tokamata.compile_regex("a", bytes_only, canonical=True)
    with pytest.raises(Unsupported) as info:
        tokamata.compile_grammar('start: "a" <|eot_id|>', vocab, canonical=True)
    assert info.value.keyword == "canonical special tokens"


# ------------------------------------------------------------------ infinite languages


INFINITE = [  # (kind, spec, a regex of its texts for hypothesis)
    ("regex", r"[a-z ]{0,12}\.", r"[a-z ]{0,12}\."),
    ("regex", r"[0-9]{1,7}(\.[0-9]{1,3})?", r"[0-9]{1,7}(\.[0-9]{1,3})?"),
    ("regex", r"(the|a|cat|sat|on|mat| |  |\n|!|'s){1,8}", r"(the|a|cat|sat|on|mat| |  |\n|!|'s){1,8}"),
    ("grammar", 'start: WORD (SEP WORD)*\nWORD: /[a-d]{1,5}/\nSEP: " " | ", " | "\\n"',
     r"[a-d]{1,5}(( |, |\n)[a-d]{1,5}){0,4}"),
    ("json_schema", {"type": "object", "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 99999},
                                                      "tag": {"type": "string", "pattern": "^[a-c ]{0,6}$"}},
                     "required": ["id", "tag"], "additionalProperties": False},
     r'\{"id":(0|[1-9][0-9]{0,3}),"tag":"[a-c ]{0,6}"\}'),
    ("regex", r"[a-e ,.!'\n0-9]{1,16}", r"[a-e ,.!'\n0-9]{1,16}"),
]


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@pytest.mark.parametrize("case", range(len(INFINITE)))
def test_encodings_are_accepted(name, case):
    """Completeness: the tokenizer's encoding of any text of the language walks to EOS."""
    tokenizer = TOKENIZERS[name]()
    kind, spec, texts = INFINITE[case]
    check_encodings_accepted(compile_canonical(kind, spec, tokenizer.vocab), tokenizer, texts, examples=25)


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@pytest.mark.parametrize("case", [2, 3, 4, 5])
def test_random_walks_are_their_own_encoding(name, case):
    """Soundness: a walk through the masks ends (EOS) in the encoding of its own text."""
    tokenizer = TOKENIZERS[name]()
    kind, spec, _ = INFINITE[case]
    check_walks_are_encodings(compile_canonical(kind, spec, tokenizer.vocab), tokenizer, seed=case, walks=6)


def test_every_front_door_takes_canonical_and_pickles():
    import pickle
    import dataclasses

    tokenizer = real.llama3()
    vocab = tokenizer.vocab

    @dataclasses.dataclass
    class Flag:
        on: bool

    made = [
        tokamata.compile_choice(["Alphabet", "Amazon"], vocab, canonical=True),
        tokamata.compile_gbnf('root ::= "yes" | "yesterday"', vocab, canonical=True),
        tokamata.compile_grammar('start: "it" ("\'s" | " is")', vocab, canonical=True),
        tokamata.compile_json_schema({"enum": ["hello", "help"]}, vocab, canonical=True),
        tokamata.compile_type(Flag, vocab, canonical=True),
        tokamata.compile_json(vocab, canonical=True),
        tokamata.compile_structural_tag({"type": "or", "elements": [{"type": "const_string", "value": "Alphabet"},
                                                                    {"type": "const_string", "value": "Amazon"}]},
                                        vocab, canonical=True),
    ]
    texts = ["Amazon", "yesterday", "it's", '"help"', '{"on":true}', "[1,2]", "Alphabet"]
    for constraint, text in zip(made, texts):
        assert "canonical=True" in constraint.filters
        ids = tokenizer.encode(text)
        m = constraint.matcher()
        assert m.consume_many(ids) == len(ids) and m.is_accepting(), text
        if constraint.recipe is not None:
            again = pickle.loads(pickle.dumps(constraint))
            assert again.canonical is not None and again.recipe == constraint.recipe
    plain = tokamata.compile_choice(["Alphabet", "Amazon"], vocab)
    assert plain.canonical is None and plain.recipe != made[0].recipe
