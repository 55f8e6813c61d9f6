"""The reference encoder against ``tokenizers`` on generated texts, and the local
canonicality rules against the encoder on perturbed token sequences (real tokenizers).

- ``encode`` equals ``tokenizers``' encoding (no special tokens) for Llama 3, Gemma 3,
  Qwen2, GPT-2 and Llama 2 (llama.cpp's llama-spm vocabulary, whose ``tokenizers`` encoder is
  put in continuation mode: ``prepend_scheme`` ``"never"``), and ``pretokenize`` equals
  ``pre_tokenize_str(normalize_str(text))``.
- For a canonical sequence and perturbations of it that decode to the same text,
  :func:`~tokamata.vocab.canonical.local_violation` is ``None`` exactly when the sequence is
  ``encode(decode(ids))``.

Texts come from :data:`token_perturb.TEXTS`; example counts are bounded so the file runs in
about a minute (the Gemma 3 merge table, derived from scores, takes ~5 s to build once).
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import real_tokenizers as real
from token_perturb import TEXTS, Spellings, perturb
from tokamata.vocab.canonical import local_violation

NAMES = ["llama3", "gemma3", "qwen2", "gpt2", "llama-spm"]
SETTINGS = settings(max_examples=30, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
SWEEP = settings(SETTINGS, max_examples=500, derandomize=False)


class _Continuation:
    """A ``tokenizers`` encoder whose start-of-text marker is switched off."""

    def __init__(self, tokenizer_json) -> None:
        import tokenizers

        data = json.loads(tokenizer_json.read_text(encoding="utf-8"))
        pre = data.get("pre_tokenizer")
        if isinstance(pre, dict) and pre.get("type") == "Metaspace":
            pre["prepend_scheme"] = "never"
        self.tokenizer = tokenizers.Tokenizer.from_str(json.dumps(data))

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids


_SOURCES: dict[str, tuple] = {}


def _source(name: str):
    """(vocabulary, reference encoder, reference ``tokenizers.Tokenizer``)"""
    if name not in _SOURCES:
        if name == "llama-spm":
            rt = real.ggml_vocab(name)
            path = real.converted_tokenizer_dir(rt.source, f"ggml-vocab-{name}")
            ref = _Continuation(path / "tokenizer.json")
            _SOURCES[name] = (rt.vocab, ref.encode, ref.tokenizer)
        else:
            rt = getattr(real, name)()
            _SOURCES[name] = (rt.vocab, rt.encode, rt.tokenizer)
    return _SOURCES[name]


def _no_special_text(vocab, text: str) -> bool:
    """``tokenizers`` turns a control token's text into the control token; tokamata's encoder
    reads it as text (documented). Such texts are not compared."""
    return not any(name in text for name in vocab.special_token_names)


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(text=TEXTS)
def test_encode_matches_tokenizers(name, text):
    vocab, reference, _ = _source(name)
    if _no_special_text(vocab, text):
        assert vocab.exact_tokenizer().encode(text) == reference(text)


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(text=TEXTS)
def test_pretokenize_matches_tokenizers(name, text):
    vocab, _, tokenizer = _source(name)
    model = vocab.exact_tokenizer()
    normalized = tokenizer.normalizer.normalize_str(text) if tokenizer.normalizer else text
    expected = ([p for p, _ in tokenizer.pre_tokenizer.pre_tokenize_str(normalized)]
                if tokenizer.pre_tokenizer else ([normalized] if normalized else []))
    assert model.pretokenize(text) == expected


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(text=TEXTS, seed=st.integers(0, 2**32 - 1))
def test_local_rules_decide_canonicality(name, text, seed):
    _check_local_rules(name, text, seed)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@SWEEP
@given(text=TEXTS, seed=st.integers(0, 2**32 - 1))
def test_local_rules_decide_canonicality_sweep(name, text, seed):
    _check_local_rules(name, text, seed)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@SWEEP
@given(text=TEXTS)
def test_encode_matches_tokenizers_sweep(name, text):
    vocab, reference, _ = _source(name)
    if _no_special_text(vocab, text):
        assert vocab.exact_tokenizer().encode(text) == reference(text)


def _check_local_rules(name: str, text: str, seed: int) -> None:
    vocab, _, _ = _source(name)
    model = vocab.exact_tokenizer()
    rng = random.Random(seed)
    spellings = _SPELLINGS.setdefault(name, Spellings(vocab))
    ids = model.encode(text)
    assert local_violation(vocab, ids) is None  # canonical sequences pass
    for steps in (1, 1, 2, 3):
        other = perturb(ids, spellings, rng, steps)
        canonical = other == ids  # (same text: the encoding of decode(other) is ids)
        assert (local_violation(vocab, other) is None) == canonical, (text, ids, other)


_SPELLINGS: dict[str, Spellings] = {}
