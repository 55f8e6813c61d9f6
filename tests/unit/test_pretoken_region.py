"""The decided pretoken boundaries of :mod:`tokamata.vocab.pretoken_region`, checked against
the pre-tokenizer itself: for random texts ``y`` and continuations ``w``, the pretokens of
``y + w`` begin with the decided pretokens of ``y``, and the open region of ``y`` pretokenizes
alone into ``y``'s remaining pretokens (so it can be re-cut on its own)."""

from __future__ import annotations

import random
import re

import pytest

import real_tokenizers as real
from tokamata import Unsupported
from tokamata.vocab import Vocabulary
from tokamata.vocab.pretoken_region import region_family, text_region

# characters that exercise every alternative of the three split patterns: letters (cased,
# non-ASCII), digits (ASCII, Arabic-Indic, full-width), contractions, punctuation runs, every
# kind of whitespace, a combining mark, and the pieces of an added token of Qwen 2
ALPHABET = ["a", "b", "S", "l", "L", "é", "ж", "1", "2", "٣", "１", "'", "s", "t", "re", "ll", "!",
            ".", "?!", " ", "  ", "\n", "\r", "\r\n", "\t", "\u3000", "\u00a0", "\u0301", "中",
            "😀", "[PAD", "151646]", "[", "PAD151646]"]

MODELS = {"gpt2": real.gpt2, "llama3": real.llama3, "qwen2": real.qwen2}


def _texts(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, n)))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_decided_boundaries_stay(name):
    model = MODELS[name]().vocab.tokenizer_model
    region_family(model)
    rng = random.Random(18)
    for _ in range(3000):
        y, w = _texts(rng, 6), _texts(rng, 4)
        region = text_region(model, y)
        whole = text_region(model, y + w)
        reference = [p for stretch, added in model.split_added(y + w)
                     for p in ([stretch] if added is not None else model.pretokenize(stretch))]
        assert [s.text if s.added is not None else s.piece for s in whole.spans] == reference
        decided = [s for s in region.spans if s.end <= region.open_start]
        assert list(whole.spans[:len(decided)]) == decided, (y, w)
        assert whole.spans[len(decided)].start == region.open_start if len(whole.spans) > len(decided) else True
        tail = y.encode("utf-8")[region.open_start:].decode("utf-8")
        alone = text_region(model, tail)
        shifted = [(s.start + region.open_start, s.end + region.open_start, s.text, s.added)
                   for s in alone.spans]
        assert shifted == [(s.start, s.end, s.text, s.added) for s in region.spans[len(decided):]], y


def test_open_region_cases():
    model = real.llama3().vocab.tokenizer_model
    cases = [("hello", 0), ("hello world", 5), ("a\r\n\t ", 1), ("12345", 3), ("x!\n ", 1), ("", 0)]
    for text, start in cases:
        assert text_region(model, text).open_start == start, text


def test_contraction_prefixes_stay_open():
    """GPT-2 cuts "'r" into "'", "r" but "'re" is one pretoken: the apostrophe stays open."""
    model = real.gpt2().vocab.tokenizer_model
    for text, start in [("'r", 0), ("x'l", 1), ("x'v", 1), ("'rx", 1), ("'s", 0), ("!'r", 2)]:
        assert text_region(model, text).open_start == start, text
    assert model.pretokenize("'r") == ["'", "r"]  # (why: a later letter joins them)
    for text in ["'re", "x'll", "'ve"]:
        assert model.pretokenize(text)[-1] == text[-3:], text


def test_unsupported_families_name_themselves():
    with pytest.raises(Unsupported, match="merges"):
        region_family_of(Vocabulary.from_token_bytes([b"a", None], eos_token_ids=[1]))
    gemma = real.gemma3()
    with pytest.raises(Unsupported) as info:
        region_family(gemma.vocab.tokenizer_model)
    assert "sentencepiece" in info.value.keyword


def region_family_of(vocab):
    return region_family(vocab.exact_tokenizer())


@pytest.mark.parametrize("name", sorted(MODELS))
def test_open_region_cuts(name):
    """Inside the open region, a later text cuts pretokens only where the region is cut now
    or before its last character when that is whitespace (what lets the filter test pairs
    inside it)."""
    model = MODELS[name]().vocab.tokenizer_model
    rng = random.Random(81)
    for _ in range(3000):
        y, w = _texts(rng, 6), _texts(rng, 4)
        region = text_region(model, y)
        end = len(y.encode("utf-8"))
        last = end - len(y[-1:].encode("utf-8"))
        if not re.fullmatch(r"\s", y[-1:]):
            last = end  # (a later text never cuts before a last character that is not a space)
        now = {s.start for s in region.spans} | {end}
        later = {s.start for s in text_region(model, y + w).spans}
        inside = {c for c in later if region.open_start < c < end}
        assert inside <= now | {last}, (y, w)
