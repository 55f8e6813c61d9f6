"""Tests of Vocabulary.special_token_names: the text of each control token -> its ids.

Synthetic vocabularies (token lists, a tokenizer.json, a GGUF file) and real tokenizers, offline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import real_tokenizers as rt
from tokamata.errors import InvalidArgument
from tokamata.vocab import Vocabulary


def test_from_token_bytes_has_no_names_by_default() -> None:
    v = Vocabulary.from_token_bytes([b"a", None], [1])
    assert dict(v.special_token_names) == {}


@pytest.mark.parametrize("given, expected", [
    ({"<|eot_id|>": 1}, {"<|eot_id|>": (1,)}),
    ({"<s>": [3, 2, 3], "</s>": (1,)}, {"<s>": (2, 3), "</s>": (1,)}),
    ({"<eos>": 4}, {"<eos>": (4,)}),  # an EOS id given bytes is never text, so it may be named
])
def test_from_token_bytes_special_tokens(given: dict[str, Any], expected: dict[str, tuple[int, ...]]) -> None:
    v = Vocabulary.from_token_bytes([b"a", None, None, None, b"x"], [1, 4], special_tokens=given)
    assert dict(v.special_token_names) == expected
    assert all(set(ids) <= set(v.special_token_ids) for ids in v.special_token_names.values())


@pytest.mark.parametrize("given, match", [
    ({"<x>": 0}, "is text"),
    ({"<x>": 9}, "not a token id"),
    ({"<x>": []}, "has no id"),
    ({"<x>": "1"}, "ids must be"),
    ({"": 1}, "non-empty str"),
    ({"<x>": True}, "must be an int"),
    ([("<x>", 1)], "must be a mapping"),
])
def test_from_token_bytes_special_token_errors(given: Any, match: str) -> None:
    with pytest.raises(InvalidArgument, match=match):
        Vocabulary.from_token_bytes([b"a", None], [1], special_tokens=given)


def test_names_are_read_only() -> None:
    v = Vocabulary.from_token_bytes([b"a", None], [1], special_tokens={"<e>": 1})
    with pytest.raises(TypeError):
        v.special_token_names["<f>"] = (1,)  # type: ignore[index]
    with pytest.raises(AttributeError):
        v.special_token_names = {}  # type: ignore[misc]


def test_tokenizer_json_names_special_added_tokens_only(tmp_path: Path) -> None:
    data = {
        "added_tokens": [{"id": 3, "content": "<|eot_id|>", "special": True},
                         {"id": 4, "content": "<tool>", "special": False},
                         {"id": 5, "content": "<|eot_id|>", "special": True}],
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2}, "merges": []},
    }
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    v = Vocabulary.from_tokenizer_json(path)
    assert dict(v.special_token_names) == {"<|eot_id|>": (3, 5)}  # <tool> is literal text
    assert v.token_bytes[4] == b"<tool>"


def test_gguf_names_control_tokens_only(tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf", reason="pip install gguf")
    path = tmp_path / "v.gguf"
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_tokenizer_model("llama")
    writer.add_token_list(["<unk>", "<s>", "</s>", "▁hi", "<table>", "<unused0>", "<end_of_turn>"])
    writer.add_token_types([2, 3, 3, 1, 4, 5, 3])
    writer.add_uint32("tokenizer.ggml.eos_token_id", 2)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    v = Vocabulary.from_gguf(path)
    assert dict(v.special_token_names) == {"<s>": (1,), "</s>": (2,), "<end_of_turn>": (6,)}


def test_real_llama3_names() -> None:
    v = rt.llama3().vocab
    names = v.special_token_names
    assert names["<|eot_id|>"] == (128009,)
    assert names["<|begin_of_text|>"] == (128000,)
    assert len(names) == 256
    assert all(v.token_bytes[i] is None for ids in names.values() for i in ids)


def test_real_gemma3_names() -> None:
    v = rt.gemma3().vocab
    names = v.special_token_names
    assert names["<end_of_turn>"] == (106,) and names["<start_of_turn>"] == (105,)
    assert all(v.token_bytes[i] is None for ids in names.values() for i in ids)
