"""The tokenizer model: what the readers take from tokenizer.json / GGUF files, the exact
reference encoder against ``tokenizers`` and llama.cpp's test vectors, and the canonicality
facts of :mod:`tokamata.vocab.canonical` on known cases."""

from __future__ import annotations

import json

import pytest

import real_tokenizers as real
from tokamata import LimitExceeded, Limits, Unsupported
from tokamata.vocab import TokenizerModel, Vocabulary
from tokamata.vocab.bpe import merge, merges_from_scores
from tokamata.vocab.canonical import (bigram_canonical, local_violation, merge_reachable,
                                      unreachable_tokens)
from tokamata.vocab.pretokenize import (GPT2_PATTERN, LLAMA3_PATTERN, ByteLevelStep, DigitsStep,
                                        MetaspaceStep, SplitStep, pretokenize)

# ------------------------------------------------------------------------ pre-tokenizers

PRETOKENIZE_CASES = [  # (steps, text, expected pieces)
    ((SplitStep(LLAMA3_PATTERN, True),), "a   b", ["a", "  ", " b"]),
    ((SplitStep(LLAMA3_PATTERN, True),), "1234567", ["123", "456", "7"]),
    ((SplitStep(LLAMA3_PATTERN, True),), "I'LL go\n\n  x", ["I", "'LL", " go", "\n\n", " ", " x"]),
    ((SplitStep(GPT2_PATTERN, True),), "it's  12", ["it", "'s", " ", " 12"]),
    ((SplitStep(" ", False, "MergedWithPrevious"),), "a b  c", ["a ", "b ", " ", "c"]),
    ((SplitStep(" ", False, "MergedWithNext"),), "a b  c", ["a", " b", " ", " c"]),
    ((SplitStep(" ", False, "Removed"),), "a b  c", ["a", "b", "c"]),
    ((SplitStep(" ", False, "Contiguous"),), "a b  c", ["a", " ", "b", "  ", "c"]),
    ((SplitStep("a", False, "Isolated", invert=True),), "xaay", ["x", "a", "a", "y"]),
    ((DigitsStep(True),), "ab12c3", ["ab", "1", "2", "c", "3"]),
    ((DigitsStep(False),), "ab12c3", ["ab", "12", "c", "3"]),
    ((MetaspaceStep("\u2581", True),), "a b  c", ["a", "\u2581b", "\u2581", "\u2581c"]),
    ((MetaspaceStep("\u2581", False),), "a b", ["a\u2581b"]),
    ((ByteLevelStep(True),), "é x", ["Ã©", "Ġx"]),
    ((), "", []),
]


@pytest.mark.parametrize("steps, text, expected", PRETOKENIZE_CASES)
def test_pretokenize_cases(steps, text, expected):
    assert pretokenize(steps, text) == expected


def _hf_pre_tokenizer(component: dict):
    tokenizers = pytest.importorskip("tokenizers")
    data = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
            "normalizer": None, "pre_tokenizer": component, "post_processor": None,
            "decoder": None, "model": {"type": "BPE", "vocab": {}, "merges": []}}
    return tokenizers.Tokenizer.from_str(json.dumps(data)).pre_tokenizer


@pytest.mark.parametrize("steps, text, expected", PRETOKENIZE_CASES[:13])
def test_pretokenize_cases_agree_with_tokenizers(steps, text, expected):
    """The table above is what ``tokenizers`` itself does (the same steps as JSON)."""
    components = []
    for s in steps:
        if isinstance(s, SplitStep):
            components.append({"type": "Split", "pattern": {"Regex" if s.is_regex else "String":
                                                           s.pattern},
                               "behavior": s.behavior, "invert": s.invert})
        elif isinstance(s, DigitsStep):
            components.append({"type": "Digits", "individual_digits": s.individual_digits})
        else:
            components.append({"type": "Metaspace", "replacement": s.replacement,
                               "prepend_scheme": "never", "split": s.split})
    pre = _hf_pre_tokenizer({"type": "Sequence", "pretokenizers": components})
    assert [p for p, _ in pre.pre_tokenize_str(text)] == expected


# --------------------------------------------------------------------------------- BPE


def test_merge_lowest_rank_then_leftmost():
    # pieces a=0 b=1 ab=2 bb=3; "abbb": (b,b) rank 0 beats (a,b) rank 1, leftmost (b,b) first
    table = {(1, 1): (0, 3), (0, 1): (1, 2)}
    assert merge([0, 1, 1, 1], table) == [0, 3, 1]
    assert merge([], table) == [] and merge([0], table) == [0]


def test_merges_from_scores_order():
    pieces = ["a", "b", "c", "ab", "bc", "abc"]
    scores = [0.0, 0.0, 0.0, -1.0, -2.0, -0.5]
    # abc (score -0.5) first: cut "ab|c" (longer left) before "a|bc"; then ab, then bc
    assert merges_from_scores(pieces, scores, 100) == [("ab", "c"), ("a", "bc"), ("a", "b"),
                                                       ("b", "c")]
    with pytest.raises(LimitExceeded) as e:
        merges_from_scores(pieces, scores, 2)
    assert e.value.limit == "max_merges"


def test_from_pieces_example():
    m = TokenizerModel.from_pieces({"a": 0, "b": 1, "ab": 2}, [("a", "b")])
    assert m.encode("abab") == [2, 2] and m.exact


# ------------------------------------------------------------------- tokenizer.json files


def _write_tokenizer(tmp_path, model: dict, **parts) -> Vocabulary:
    data = {"version": "1.0", "added_tokens": [{"id": 9, "content": "</s>", "special": True}],
            "normalizer": None, "pre_tokenizer": None, "post_processor": None,
            "decoder": {"type": "ByteLevel"}, "model": model}
    data.update(parts)
    (tmp_path / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    return Vocabulary.from_tokenizer_json(tmp_path)


def test_merges_in_both_json_forms(tmp_path):
    vocab = {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4}
    pre = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}
    for merges in (["a b", "Ġ ab"], [["a", "b"], ["Ġ", "ab"]]):
        v = _write_tokenizer(tmp_path, {"type": "BPE", "vocab": vocab, "merges": merges},
                             pre_tokenizer=pre)
        assert v.exact_tokenizer().encode("ab ab") == [2, 4]


@pytest.mark.parametrize("model, parts, keyword", [
    ({"type": "Unigram", "vocab": [["a", 0.0], ["b", -1.0]]}, {}, "model Unigram"),
    ({"type": "BPE", "vocab": {"a": 0}, "merges": []},
     {"pre_tokenizer": {"type": "Whitespace"}}, "pre_tokenizer Whitespace"),
    ({"type": "BPE", "vocab": {"a": 0}, "merges": []},
     {"pre_tokenizer": {"type": "ByteLevel"}, "normalizer": {"type": "Precompiled"}},
     "normalizer Precompiled"),
    ({"type": "BPE", "vocab": {"a": 0}, "merges": [], "dropout": 0.1},
     {"pre_tokenizer": {"type": "ByteLevel"}}, "BPE dropout"),
    ({"type": "BPE", "vocab": {"a": 0}, "merges": []}, {}, "pre_tokenizer"),
])
def test_unsupported_components_load_but_are_not_exact(tmp_path, model, parts, keyword):
    v = _write_tokenizer(tmp_path, model, **parts)
    assert v.token_bytes[0] == b"a"  # still a vocabulary
    assert not v.tokenizer_model.exact
    with pytest.raises(Unsupported) as e:
        v.exact_tokenizer()
    assert e.value.keyword == keyword


def test_from_token_bytes_has_no_tokenizer_model():
    v = Vocabulary.from_token_bytes([b"a", None], eos_token_ids=[1])
    assert v.tokenizer_model is None
    with pytest.raises(Unsupported) as e:
        v.exact_tokenizer()
    assert e.value.keyword == "merges"


def test_max_merges_bounds_the_reader(tmp_path):
    model = {"type": "BPE", "vocab": {"a": 0, "aa": 1}, "merges": ["a a", "a a", "a a"]}
    with pytest.raises(LimitExceeded) as e:
        data = {"added_tokens": [{"id": 2, "content": "</s>", "special": True}],
                "pre_tokenizer": {"type": "ByteLevel"}, "decoder": {"type": "ByteLevel"},
                "model": model}
        (tmp_path / "tokenizer.json").write_text(json.dumps(data))
        Vocabulary.from_tokenizer_json(tmp_path, limits=Limits(max_merges=2))
    assert e.value.limit == "max_merges"


# ------------------------------------------------------------------ real tokenizers, GGUF

SUPPORTED_GGUF = ["gpt-2", "qwen2", "llama-bpe", "llama-spm", "phi-3"]


@pytest.mark.parametrize("name", SUPPORTED_GGUF)
def test_gguf_matches_llama_cpp_test_vectors(name):
    """llama.cpp's vectors were made with each model's own Hugging Face tokenizer (no special
    tokens); SentencePiece ones prepend ``▁``, which continuation mode leaves out, so they
    are compared with ``encode(" " + text)``."""
    rt = real.ggml_vocab(name)
    model = rt.vocab.exact_tokenizer()
    assert rt.vectors
    for text, ids in rt.vectors:
        prefix = " " if model.kind == "sentencepiece" and text else ""
        assert model.encode(prefix + text) == list(ids), text


@pytest.mark.parametrize("name, keyword", [("starcoder", "tokenizer.ggml.pre"),
                                           ("gpt-neox", "tokenizer.ggml.pre"),
                                           ("nomic-bert-moe", "tokenizer.ggml.model t5")])
def test_gguf_unsupported_tokenizers_load_but_are_not_exact(name, keyword):
    v = Vocabulary.from_gguf(real.ggml_vocab_path(name))
    with pytest.raises(Unsupported) as e:
        v.exact_tokenizer()
    assert e.value.keyword == keyword


def test_gguf_models_name_their_parts():
    m = real.qwen2().vocab.tokenizer_model
    assert m.kind == "byte-level" and m.merge_count == 151_387 and not m.ignore_merges
    m = real.ggml_vocab("llama-bpe").vocab.tokenizer_model
    assert m.ignore_merges and m.merge_count == 280_147
    m = real.gemma3().vocab.tokenizer_model
    assert m.kind == "sentencepiece" and m.byte_fallback and m.merge_count == -1


FIXED_TEXTS = ["Hello world", "it's 12345  ok\n\n  x", "  héllo 世界 🎉\t\tfoo", "'S 'll don't   ",
               "\n\n\nabc", "<table>\n  <tr>", "x = 1_000_000;", "naïve café", ""]


@pytest.mark.parametrize("name", ["llama3", "gemma3", "qwen2", "gpt2"])
def test_real_tokenizers_fixed_texts(name):
    rt = getattr(real, name)()
    model = rt.vocab.exact_tokenizer()
    for text in FIXED_TEXTS:
        assert model.encode(text) == rt.encode(text), text


# ------------------------------------------------------------------------ canonical facts


def test_bigram_and_reachability_facts_llama3():
    v = real.llama3().vocab
    model = v.tokenizer_model
    the, odore = model.encode(" The")[0], model.encode("odore")[0]
    theodore = model.encode(" Theodore")
    assert len(theodore) == 1 and not bigram_canonical(v, the, odore)
    t, rue = model.encode("t")[0], model.encode("rue")[0]
    assert not bigram_canonical(v, t, rue)  # "true" is one token
    assert bigram_canonical(v, model.encode(" William")[0], model.encode(",")[0])


def test_llama3_ignore_merges_counterexample_to_the_literal_rules():
    """' việc' is one token only because ``ignore_merges`` takes whole pretokens: its merges
    alone give [' vi', 'ệ', 'c'], which the literal rules accept."""
    v = real.llama3().vocab
    model = v.tokenizer_model
    (viec,) = model.encode(" việc")
    assert not merge_reachable(v, viec)
    spelled = model.merge(model.token_symbols(viec))
    assert len(spelled) == 3
    assert local_violation(v, spelled, literal=True, unreachable=set()) is None
    assert local_violation(v, spelled) == "ignore_merges pretoken"
    assert model.encode(" việc") != spelled


def test_byte_fallback_counterexample_to_the_literal_rules():
    """Byte tokens spelling a character the vocabulary has are never canonical, though each
    bigram of them passes (Llama 2: '²' is a piece)."""
    v = real.ggml_vocab("llama-spm").vocab
    model = v.tokenizer_model
    pieces = model.tables().pieces
    spelled = [pieces["<0xC2>"], pieces["<0xB2>"]]
    assert model.encode("²") == [pieces["²"]]
    assert local_violation(v, spelled, literal=True, unreachable=set()) is None
    assert local_violation(v, spelled) == "byte run"
    # a character with no piece is spelled in bytes, and that is canonical
    text = "\U0001F600"
    ids = model.encode(text)
    assert all(model.is_byte_token(t) for t in ids) and local_violation(v, ids) is None


def test_unreachable_tokens_llama_spm():
    v = real.ggml_vocab("llama-spm").vocab
    un = unreachable_tokens(v)
    model = v.tokenizer_model
    # only byte tokens: those of ASCII bytes whose character is a piece, and 0xC0, 0xC1, 0xF5-0xFF
    assert un and all(model.is_byte_token(t) for t in un)
    pieces = model.tables().pieces
    assert pieces["<0x41>"] in un and pieces["<0xF5>"] in un and pieces["<0xE4>"] not in un
