"""Token filters (``token_filters=``) against their definitions, on Gemma 3 and Llama 3.

The oracle enumerates every tokenization of every string of a small finite language, keeps
the sequences the filter's definition allows (written here again, with ``tokenizers`` deciding
fusion), and checks that at every node of the trie of kept sequences the mask is exactly the
node's next tokens (EOS where a kept sequence ends). ``canonical=True`` implies both filters:
every encoding passes both definitions.
"""

from __future__ import annotations

import functools
import re

import pytest

import real_tokenizers as real
import tokamata
from test_canonical_masks import FINITE, enumerate_regex
from tokamata import InvalidArgument

TOKENIZERS = {"gemma3": real.gemma3, "llama3": real.llama3}


@functools.lru_cache(maxsize=None)
def _by_bytes(name: str) -> dict[bytes, list[int]]:
    out: dict[bytes, list[int]] = {}
    for i, b in enumerate(TOKENIZERS[name]().vocab.token_bytes):
        if b:
            out.setdefault(b, []).append(i)
    return out


def tokenizations(name: str, data: bytes) -> list[tuple[int, ...]]:
    """Every token sequence that spells ``data``."""
    by_bytes = _by_bytes(name)
    longest = max(map(len, by_bytes))

    @functools.lru_cache(maxsize=None)
    def from_(i: int) -> list[tuple[int, ...]]:
        if i == len(data):
            return [()]
        out = []
        for j in range(i + 1, min(len(data), i + longest) + 1):
            for t in by_bytes.get(data[i:j], ()):
                out.extend((t,) + rest for rest in from_(j))
        return out

    return from_(0)


def _byte_ids(tokenizer) -> dict[int, int]:
    model = tokenizer.vocab.tokenizer_model
    return dict(model.tables().byte_of) if model.byte_fallback else {}


def byte_fallback_ok(tokenizer, ids) -> bool:
    """Every maximal run of <0xNN> tokens spells whole characters, none of which is a piece."""
    byte_of = _byte_ids(tokenizer)
    model = tokenizer.vocab.tokenizer_model
    run: list[int] = []
    for t in list(ids) + [-1]:
        if t in byte_of:
            run.append(byte_of[t])
            continue
        if run:
            try:
                chars = bytes(run).decode("utf-8")
            except UnicodeDecodeError:
                return False
            if any(model.normalize(c) in model.tables().pieces for c in chars):
                return False
            run = []
    return True


def isolated_space_ok(tokenizer, ids) -> bool:
    """No lone space token before a token the tokenizer would fuse it with: ``" " + text``
    encodes to something that does not begin with the lone space."""
    token_bytes = tokenizer.vocab.token_bytes
    byte_of = _byte_ids(tokenizer)
    for s, u in zip(ids, ids[1:]):
        if token_bytes[s] != b" " or s in byte_of or u in byte_of:
            continue
        try:
            text = token_bytes[u].decode("utf-8")
        except UnicodeDecodeError:
            continue
        if tokenizer.encode(" " + text)[:1] != [s]:
            return False
    return True


DEFINITIONS = {"byte_fallback": byte_fallback_ok, "isolated_space": isolated_space_ok}

CASES = [
    r"( |x)(hi|12| |\n|ab)",
    r"(A|Ŀ|é)x?",
    r"a( |  )b",
    r" (the|a) ?",
    r"(1 2|x  y)",
]


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@pytest.mark.parametrize("names", [("byte_fallback",), ("isolated_space",), ("byte_fallback", "isolated_space")])
@pytest.mark.parametrize("pattern", CASES)
def test_filters_walk_exactly_the_sequences_their_definitions_allow(name, names, pattern):
    tokenizer = TOKENIZERS[name]()
    vocab = tokenizer.vocab
    eos = set(vocab.eos_token_ids)
    trie: dict[tuple[int, ...], set[int]] = {}
    for s in enumerate_regex(pattern):
        for ids in tokenizations(name, s.encode("utf-8")):
            if all(DEFINITIONS[n](tokenizer, ids) for n in names):
                for k in range(len(ids)):
                    trie.setdefault(ids[:k], set()).add(ids[k])
                trie.setdefault(ids, set()).add(-1)
    plain = tokamata.compile_regex(pattern, vocab).matcher()
    matcher = tokamata.compile_regex(pattern, vocab, token_filters=list(names)).matcher()
    differs = False
    for node in sorted(trie):
        walk = matcher.copy()
        walk.rollback(walk.num_consumed)
        assert walk.consume_many(node) == len(node)
        expected = {t for t in trie[node] if t >= 0} | (eos if -1 in trie[node] else set())
        got = set(walk.allowed_tokens().tolist())
        assert got == expected, (pattern, node, [vocab.token_bytes[t] for t in sorted(got ^ expected) if t not in eos])
        base = plain.copy()
        base.rollback(base.num_consumed)
        base.consume_many(node)
        differs |= got != set(base.allowed_tokens().tolist())
    if name == "gemma3" and "byte_fallback" in names:
        assert differs  # (every ASCII character also has a <0xNN> token there)


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
def test_canonical_implies_both_filters(name):
    tokenizer = TOKENIZERS[name]()
    for pattern in FINITE + CASES:
        for s in enumerate_regex(pattern):
            ids = tokenizer.encode(s)
            if tokenizer.vocab.decode(ids) != s.encode("utf-8"):
                continue
            assert byte_fallback_ok(tokenizer, ids) and isolated_space_ok(tokenizer, ids), (pattern, s, ids)


def test_isolated_space_forbids_a_fusing_successor():
    tokenizer = real.gemma3()
    vocab = tokenizer.vocab
    space = tokenizer.encode(" ")[0]
    hi = tokenizer.encode("hi")[0]
    m = tokamata.compile_regex(r" hi", vocab, token_filters=["isolated_space"]).matcher()
    assert m.consume(space) and hi not in m.allowed_tokens().tolist()  # " hi" is the one token
    free = tokamata.compile_regex(r" hi", vocab).matcher()
    assert free.consume(space) and hi in free.allowed_tokens().tolist()


def test_every_front_door_takes_token_filters_and_pickles():
    import pickle

    vocab = real.llama3().vocab
    made = [
        tokamata.compile_regex("a b", vocab, token_filters=["byte_fallback"]),
        tokamata.compile_choice(["a", "b"], vocab, token_filters=["isolated_space"]),
        tokamata.compile_grammar('start: "a"', vocab, token_filters=["byte_fallback"]),
        tokamata.compile_gbnf('root ::= "a"', vocab, token_filters=["byte_fallback"]),
        tokamata.compile_json(vocab, token_filters=["byte_fallback"]),
        tokamata.compile_json_schema({"type": "integer"}, vocab, token_filters=["byte_fallback"]),
        tokamata.compile_structural_tag({"type": "const_string", "value": "a"}, vocab, token_filters=["byte_fallback"]),
        tokamata.compile_type(int, vocab, token_filters=["byte_fallback"]),
    ]
    for c in made:
        assert any(f.startswith("token_filters=") for f in c.filters) and c.token_filter is not None
        assert c.canonical is None and c.matcher().allowed_tokens().size
    again = pickle.loads(pickle.dumps(made[0]))
    assert again.token_filter is not None and again.filters == made[0].filters


@pytest.mark.parametrize("value, match", [
    (["bogus"], "unknown filter 'bogus'"),
    ("byte_fallback", "must be a list of filter names"),
    ([1], "unknown filter 1"),
])
def test_bad_filter_names(value, match):
    vocab = real.llama3().vocab
    with pytest.raises(InvalidArgument, match=re.escape(match)):
        tokamata.compile_regex("a", vocab, token_filters=value)
