"""Canonical masks for SentencePiece-style BPE with byte fallback (Gemma 3, Llama 2, Mistral v3) against
the tokenizer's own encodings (``tokenizers``, continuation mode: no ``▁`` before the text).

- Finite languages: every string encoded; the matcher walks exactly the trie of the
  encodings (next tokens at every node, EOS where an encoding ends). The shared cases of
  ``test_canonical_masks`` plus ones for what this family adds: byte-fallback characters,
  added tokens matched in raw text (newline, tab and space runs, HTML tags), space runs.
- Infinite languages: hypothesis texts' encodings are accepted (completeness); random walks
  re-encode to themselves (soundness).
- The junction rule (two merge traces walked together) equals the merge test on sampled pairs.
- Refusals name what cannot be followed.
"""

from __future__ import annotations

import functools
import json
import random

import pytest

import real_tokenizers as real
from canonical_checks import check_encodings_accepted, check_walks_are_encodings, compile_canonical
import tokamata
from test_canonical_masks import FINITE, INFINITE, check_finite
from tokamata import Unsupported
from tokamata.vocab.canonical import bigram_canonical, merge_reachable
from tokamata.vocab.token_filters import LocalFilter


class _Continuation:
    """Llama 2's (or Mistral's) converted tokenizer with its Metaspace ``prepend_scheme`` set to ``never``:
    the encoding of a text as a continuation (what canonical mode means)."""

    def __init__(self, tokenizer: real.RealTokenizer):
        from tokenizers import Tokenizer

        data = json.loads(tokenizer.tokenizer.to_str())
        pre = data["pre_tokenizer"]
        assert pre["type"] == "Metaspace", pre
        pre["prepend_scheme"] = "never"
        self.tokenizer = Tokenizer.from_str(json.dumps(data))
        self.vocab = tokenizer.vocab

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids


@functools.lru_cache(maxsize=None)
def llama2() -> _Continuation:
    return _Continuation(real.ggml_vocab("llama-spm"))


@functools.lru_cache(maxsize=None)
def mistral() -> _Continuation:
    return _Continuation(real.mistral())


TOKENIZERS = {"gemma3": real.gemma3, "llama2": llama2, "mistral": mistral}

# what SentencePiece-style BPE adds: characters that are no piece (byte fallback: Ŀ ŀ Ɓ and
# a cuneiform sign on Gemma 3), control characters, added tokens cut out of raw text first
# (Gemma 3: runs of newlines, tabs, HTML tags), space runs
SENTENCEPIECE_FINITE = [
    r"(Ŀ|ŀa|Ŀŀ|Ɓx)x?",
    r"𒀀(a|b)?",
    r"(x|y)\x01?",
    r"<b>(x|xy)</b>",
    r"(<|<b|<b>)(x|>)",
    r"a(\n|\n\n|\n\n\n)b?",
    r"(\n|\n\n)( |x)",
    r"(\t|\t\t)x?",
    r"a( |  |   |    )b?",
    r"(x|xy) (z|zy)",
    # Mistral v3's non-special added tokens ([REFERENCE_DOC_N]: cut from raw text first; plain
    # text on the other tokenizers)
    r"(\[REFERENCE_DOC_1|\[REFERENCE_DOC_1\]|\[REFERENCE_DOC_10\])(x|\])?",
]


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@pytest.mark.parametrize("pattern", FINITE + SENTENCEPIECE_FINITE)
def test_finite_languages_walk_exactly_their_encodings(name, pattern):
    check_finite(TOKENIZERS[name](), pattern)


def test_non_canonical_masks_differ_on_gemma():
    """(the oracle can fail: without canonical=True the masks hold more)"""
    g = real.gemma3()
    for pattern in (r"(hello|help|helium) world", r"(A|Ŀ)x?", r"a( |  |   |    )b?"):
        plain = tokamata.compile_regex(pattern, g.vocab).matcher().allowed_tokens().tolist()
        exact = tokamata.compile_regex(pattern, g.vocab, canonical=True).matcher().allowed_tokens().tolist()
        assert set(exact) < set(plain), pattern


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@pytest.mark.parametrize("case", [1, 2, 3, 4, 5])
def test_encodings_are_accepted(name, case):
    """Completeness: the tokenizer's encoding of any text of the language walks to EOS."""
    tokenizer = TOKENIZERS[name]()
    kind, spec, texts = INFINITE[case]
    check_encodings_accepted(compile_canonical(kind, spec, tokenizer.vocab), tokenizer, texts, examples=20)


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@pytest.mark.parametrize("case", [2, 3, 4, 5])
def test_random_walks_are_their_own_encoding(name, case):
    """Soundness: a walk through the masks ends (EOS) in the encoding of its own text."""
    tokenizer = TOKENIZERS[name]()
    kind, spec, _ = INFINITE[case]
    check_walks_are_encodings(compile_canonical(kind, spec, tokenizer.vocab), tokenizer, seed=case, walks=4)


def test_byte_fallback_runs_only_for_characters_that_are_no_piece():
    g = real.gemma3()
    tables = g.vocab.tokenizer_model.tables()
    m = tokamata.compile_regex(r"(A|Ŀ)", g.vocab, canonical=True).matcher()
    allowed = set(m.allowed_tokens().tolist())
    assert tables.byte_ids[0x41] not in allowed  # "A" is a piece: never <0x41>
    assert tables.byte_ids[0xC4] in allowed  # "Ŀ" (C4 BF) is not: its bytes


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
def test_junction_rule_equals_the_merge_test(name):
    """The traced junction test against merging the two tokens' symbols, on random pairs and
    on the two halves of every cut of random tokens (mostly not canonical)."""
    vocab = TOKENIZERS[name]().vocab
    f = LocalFilter(vocab, tokamata.Limits(), ("canonical",))
    pieces = vocab.tokenizer_model.tables().pieces
    rng = random.Random(7)
    ids = [i for i in rng.sample(range(len(vocab.token_bytes)), 3000)
           if vocab.token_bytes[i] and merge_reachable(vocab, i)]
    pairs = [(rng.choice(ids), rng.choice(ids)) for _ in range(2000)]
    for c in ids:
        piece = vocab.tokenizer_model.piece(c) or ""
        for cut in range(1, len(piece)):
            a, b = pieces.get(piece[:cut]), pieces.get(piece[cut:])
            if a is not None and b is not None and merge_reachable(vocab, a) and merge_reachable(vocab, b):
                pairs.append((a, b))
    results = [bigram_canonical(vocab, a, b) for a, b in pairs]
    assert 200 < sum(results) < len(results) - 200
    assert [f._junction_holds(a, b) for a, b in pairs] == results


def test_refusals_name_the_model(tmp_path):
    data = {"version": "1.0", "added_tokens": [{"id": 2, "content": "</s>", "special": True}],
            "normalizer": None,
            "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never"},
            "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never"},
            "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": False,
                      "vocab": [["<unk>", 0.0], ["a", -1.0], ["</s>", 0.0]]}}
    (tmp_path / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    unigram = tokamata.Vocabulary.from_tokenizer_json(tmp_path)
    with pytest.raises(Unsupported) as info:
        tokamata.compile_regex("a", unigram, canonical=True)
    assert info.value.keyword == "model Unigram"
    # SentencePiece-style BPE split by a pre-tokenizer: merges never cross its pieces, which
    # the local rules do not follow
    data["model"] = {"type": "BPE", "byte_fallback": True, "vocab": {"<unk>": 0, "a": 1, "</s>": 2, "▁": 3},
                     "merges": [], "unk_token": "<unk>"}
    data["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never", "split": True}
    (tmp_path / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    split = tokamata.Vocabulary.from_tokenizer_json(tmp_path)
    with pytest.raises(Unsupported) as info:
        tokamata.compile_regex("a", split, canonical=True)
    assert info.value.keyword == "canonical sentencepiece pre_tokenizer"
