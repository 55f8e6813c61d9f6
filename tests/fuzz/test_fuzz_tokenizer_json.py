"""Fuzzing ``Vocabulary.from_tokenizer_json``: small valid ``tokenizer.json`` files (byte-level
BPE, SentencePiece-style Unigram with byte fallback, WordLevel) with random values written at
the paths the reader looks at (ids, contents, decoders, pre-tokenizers, normalizers, model
types), optional ``tokenizer_config.json`` / ``generation_config.json`` beside them, and
byte-level mutations of the whole text.

Checked for every input, in a capped worker process (``fuzz_harness``): reading gives a
vocabulary or raises a :class:`tokamata.TokamataError` (``VocabularyError``,
``LimitExceeded``), within the worker's time and memory caps and without crashing; a
vocabulary that reads has only ids in ``[0, size)`` and serves a regex and a JSON constraint
whose walks pass ``fuzz_checks.walk``.
"""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import tokamata
from fuzz_checks import LIMITS, walk
from fuzz_harness import fuzz_settings, mutate, mutated

# ------------------------------------------------------------------ the worker side

_DIRECTORY = tempfile.TemporaryDirectory(prefix="tokamata-fuzz-")


def check_vocabulary(vocab: tokamata.Vocabulary, seed: int) -> str:
    """A vocabulary that read: sane ids, and constraints over it that walk."""
    assert vocab.size >= len(vocab.token_bytes) and vocab.eos_token_ids
    assert all(0 <= t < vocab.size for t in vocab.eos_token_ids), vocab.eos_token_ids
    outcomes = []
    for compile_ in (lambda: tokamata.compile_regex("[ab ]+|é", vocab, LIMITS),
                     lambda: tokamata.compile_json(vocab, limits=LIMITS)):
        try:
            outcomes.append(walk(compile_(), seed, steps=8, spellable=False))
        except tokamata.TokamataError as e:
            outcomes.append(f"error {type(e).__name__}")
    return f"read {vocab.size} ids; " + "; ".join(outcomes)


def run_input(value: tuple[bytes, bytes | None, bytes | None, list[int] | None, int]) -> str:
    tokenizer, config, generation, eos, seed = value
    folder = Path(_DIRECTORY.name)
    for name, content in (("tokenizer.json", tokenizer), ("tokenizer_config.json", config),
                          ("generation_config.json", generation)):
        path = folder / name
        if content is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(content)
    try:
        vocab = tokamata.Vocabulary.from_tokenizer_json(folder / "tokenizer.json", eos_token_ids=eos,
                                                        limits=LIMITS)
    except tokamata.TokamataError as e:
        return f"error {type(e).__name__}"
    return check_vocabulary(vocab, seed)


# ------------------------------------------------------------------ inputs

def _byte_level() -> dict[str, Any]:
    return {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġa": 3, "Ã©": 5}, "merges": ["a b"]},
            "added_tokens": [{"id": 4, "content": "<|endoftext|>", "special": True}],
            "decoder": {"type": "ByteLevel"}, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False}}


def _sentencepiece() -> dict[str, Any]:
    return {"model": {"type": "Unigram", "byte_fallback": True,
                      "vocab": [["<unk>", 0.0], ["</s>", 0.0], ["▁a", -1.0], ["b", -2.0], ["<0xC3>", 0.0],
                                ["<0xA9>", 0.0]]},
            "added_tokens": [{"id": 1, "content": "</s>", "special": True}],
            "normalizer": {"type": "Sequence", "normalizers": [{"type": "Replace", "pattern": {"String": " "},
                                                                "content": "▁"}]},
            "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                                                         {"type": "ByteFallback"}, {"type": "Fuse"}]}}


def _word_level() -> dict[str, Any]:
    return {"model": {"type": "WordLevel", "vocab": {"a": 0, "b": 1, "[SEP]": 2}, "unk_token": "a"},
            "added_tokens": [{"id": 2, "content": "[SEP]", "special": True}],
            "pre_tokenizer": {"type": "Metaspace", "replacement": "▁"}}


BASES = [_byte_level, _sentencepiece, _word_level]
_PATHS = [("model", "vocab", "a"), ("model", "vocab"), ("model", "type"), ("model",), ("model", "merges"),
          ("model", "byte_fallback"), ("added_tokens",), ("added_tokens", 0), ("added_tokens", 0, "id"),
          ("added_tokens", 0, "content"), ("added_tokens", 0, "special"), ("decoder",), ("decoder", "type"),
          ("decoder", "decoders"), ("pre_tokenizer",), ("pre_tokenizer", "type"), ("normalizer",), ("post_processor",),
          ("model", "vocab", 0), ("model", "vocab", 2, 0), ("model", "unk_token")]
_SPECIAL_VALUES = [-1, 2.7, 2.0, True, None, 10**9, 2**64, 4_000_000, "3", "", "<0xZZ>", "<0xC3>", "Ġ", "▁", [],
                   {}, {"type": "ByteLevel"}, {"type": "Metaspace", "replacement": 5}, {"type": "Sequence"},
                   {"type": "Unigram", "vocab": [[5, 0.0]]}, {"type": "BPE", "vocab": {"a": 0}}, [[1, 2]]]
_VALUES = st.one_of(st.sampled_from(_SPECIAL_VALUES), st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 10), st.text("aĠ▁<>0x", max_size=4)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["type", "id", "a"]), inner,
                                                                         max_size=2)), max_leaves=6))


def _set(data: Any, path: tuple, value: Any) -> None:
    target = data
    for key in path[:-1]:
        if isinstance(target, dict) and key in target:
            target = target[key]
        elif isinstance(target, list) and isinstance(key, int) and key < len(target):
            target = target[key]
        else:
            return
    key = path[-1]
    if isinstance(target, dict) and isinstance(key, str):
        target[key] = value
    elif isinstance(target, list) and isinstance(key, int) and key < len(target):
        target[key] = value


@st.composite
def tokenizer_files(draw) -> tuple[bytes, bytes | None, bytes | None, list[int] | None, int]:
    data = draw(st.sampled_from(BASES))()
    for path, value in draw(st.lists(st.tuples(st.sampled_from(_PATHS), _VALUES), max_size=3)):
        # (a copy: _SPECIAL_VALUES' dicts and lists are shared by every example, and setting a
        # path inside one of them twice could make it contain itself: json.dumps then fails)
        _set(data, path, copy.deepcopy(value))
    text = json.dumps(data, ensure_ascii=draw(st.booleans())).encode()
    config = draw(st.one_of(st.none(), st.builds(lambda v: json.dumps({"eos_token": v}).encode(),
                                                 st.one_of(st.sampled_from(["<|endoftext|>", "</s>", "[SEP]", "x"]),
                                                           _VALUES))))
    generation = draw(st.one_of(st.none(), st.builds(lambda v: json.dumps({"eos_token_id": v}).encode(), _VALUES)))
    eos = draw(st.one_of(st.none(), st.lists(st.integers(-1, 8), min_size=1, max_size=2)))
    return text, config, generation, eos, draw(st.integers(0, 2**32 - 1))


_SEEDS = [json.dumps(base()).encode() for base in BASES]

# ------------------------------------------------------------------ tests


@fuzz_settings(100)
@given(files=tokenizer_files())
def test_structured_tokenizer_files(worker, files) -> None:
    worker.run(files)


@fuzz_settings(100)
@given(data=mutated(_SEEDS), eos=st.one_of(st.none(), st.just([4])), seed=st.integers(0, 2**32 - 1))
def test_mutated_tokenizer_files(worker, data: bytes, eos: list[int] | None, seed: int) -> None:
    worker.run((data, None, None, eos, seed))


def test_mutate_is_deterministic() -> None:
    """(the mutations replay: a saved finding is the bytes the worker saw)"""
    assert mutate(b"abcdef", [("repeat", 1, 2, 3), ("flip", 0, 0)], []) == b"`bcbcbcdef"
