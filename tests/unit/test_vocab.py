"""Tests of tokamata.vocab.Vocabulary: synthetic vocabularies and real tokenizers, offline.

Real tokenizers come from tests/real_tokenizers.py (skipped with an install hint when absent).
The central check: for an encoder's token ids, concatenating ``token_bytes`` reproduces the UTF-8
text exactly. SentencePiece tokenizers that prepend a dummy space (``add_prefix_space``: Llama 2,
Phi-3) decode to ``" " + text`` for non-empty text; that space is accounted for explicitly
(Gemma 3 does not add it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import real_tokenizers as rt
from tokamata.errors import InvalidArgument, TokamataError, VocabularyError
from tokamata.vocab import WELL_KNOWN_EOS_NAMES, Vocabulary

# ------------------------------------------------------------------ from_token_bytes


def test_from_token_bytes_attributes() -> None:
    v = Vocabulary.from_token_bytes([b"a", b"b", None, b"ab", bytearray(b"c")],
                                    eos_token_ids=[2], size=8)
    assert v.token_bytes == (b"a", b"b", None, b"ab", b"c")
    assert type(v.token_bytes) is tuple and all(type(b) in (bytes, type(None)) for b in v.token_bytes)
    assert v.eos_token_ids == (2,)
    assert v.special_token_ids == (2,)
    assert v.size == 8 and len(v) == 8
    assert v.kind == "bytes" and v.add_prefix_space is False
    assert "tokens=5" in repr(v) and "size=8" in repr(v) and "eos=[2]" in repr(v)


def test_size_defaults_to_number_of_tokens() -> None:
    v = Vocabulary.from_token_bytes([b"x", None], [1])
    assert v.size == len(v) == 2


def test_eos_ids_sorted_deduplicated_and_never_text() -> None:
    v = Vocabulary.from_token_bytes([b"a", b"b", b"c", None], eos_token_ids=iter([3, 1, 3]))
    assert v.eos_token_ids == (1, 3)
    assert v.token_bytes[1] is None  # an EOS id is never text, even if given bytes
    assert v.special_token_ids == (1, 3)


def test_empty_token_is_stored_as_none() -> None:
    v = Vocabulary.from_token_bytes([b"", b"a", memoryview(b""), None], [3])
    assert v.token_bytes == (None, b"a", None, None)
    assert v.special_token_ids == (0, 2, 3)


def test_padding_ids_are_not_special_and_decode_to_nothing() -> None:
    v = Vocabulary.from_token_bytes([b"a", None], [1], size=5)
    assert v.special_token_ids == (1,)
    assert v.decode([0, 4, 1, 3, 0]) == b"aa"


def test_decode_rejects_ids_outside_size() -> None:
    v = Vocabulary.from_token_bytes([b"a", None], [1], size=3)
    with pytest.raises(InvalidArgument, match="out of range"):
        v.decode([3])
    with pytest.raises(InvalidArgument):
        v.decode([-1])


@pytest.mark.parametrize("tokens, eos, size, error, match", [
    ([b"a", None], [1], 1, VocabularyError, "smaller than the tokenizer's id range"),
    ([b"a", None], [1], -1, InvalidArgument, ">= 0"),
    ([b"a", None], [1], 2.0, InvalidArgument, "size must be an int"),
    ([b"a", None], [2], None, InvalidArgument, r"out of range.*\[0, 2\)"),
    ([b"a", None], [1], 10, None, None),
    ([b"a", None], [5], 10, InvalidArgument, "out of range"),  # padding ids are not EOS
    ([b"a", None], [], None, InvalidArgument, "at least one EOS"),
    ([b"a", None], [-1], None, InvalidArgument, ">= 0"),
    ([b"a", None], [True], None, InvalidArgument, "must be an int"),
    ([b"a", None], 1, None, InvalidArgument, "iterable"),
    ([b"a", None], ["1"], None, InvalidArgument, "must be an int"),
    (["a", None], [1], None, InvalidArgument, "token 0 must be bytes"),
    ([b"a", 7], [0], None, InvalidArgument, "token 1 must be bytes"),
    (b"ab", [0], None, InvalidArgument, "sequence of byte strings"),
])
def test_from_token_bytes_argument_errors(tokens: Any, eos: Any, size: Any,
                                          error: type[Exception] | None, match: str | None) -> None:
    if error is None:
        Vocabulary.from_token_bytes(tokens, eos, size=size)
        return
    with pytest.raises(error, match=match):
        Vocabulary.from_token_bytes(tokens, eos, size=size)


def test_docstring_example() -> None:
    import doctest

    import tokamata.vocab

    result = doctest.testmod(tokamata.vocab, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_errors_belong_to_the_error_tree() -> None:
    assert issubclass(VocabularyError, TokamataError)
    assert issubclass(InvalidArgument, ValueError)


def test_public_attributes_are_read_only_but_dict_is_open() -> None:
    v = Vocabulary.from_token_bytes([b"a", None], [1])
    for attr in ("token_bytes", "eos_token_ids", "size", "special_token_ids", "kind",
                 "add_prefix_space", "name"):
        with pytest.raises(AttributeError):
            setattr(v, attr, None)
    assert not hasattr(Vocabulary, "__slots__")
    v.__dict__["_engine_cache"] = object()  # the engine caches its trie this way
    assert "_engine_cache" in vars(v)


def test_import_loads_neither_torch_nor_transformers() -> None:
    code = ("import sys, tokamata.vocab; "
            "print(sorted(m for m in ('torch', 'transformers', 'tokenizers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------ synthetic tokenizer.json


def _byte_level_json(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "added_tokens": [
            {"id": 5, "content": "<|endoftext|>", "special": True},
            {"id": 6, "content": "café", "special": False},   # literal text, not byte-mapped
            {"id": 8, "content": "<|im_end|>", "special": True},
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": {"h": 0, "Ġhello": 1, "Ċ": 2, "Ã©": 3, "\u200d": 4},
                  "merges": []},
    }
    data.update(overrides)
    return data


def _spm_json(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "added_tokens": [{"id": 0, "content": "<unk>", "special": True},
                         {"id": 1, "content": "<s>", "special": True},
                         {"id": 2, "content": "</s>", "special": True}],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
        "pre_tokenizer": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "byte_fallback": True, "unk_token": "<unk>",
                  "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x41>": 3, "<0xE2>": 4,
                            "▁hi": 5, "▁": 6, "a▁b": 7, "<0x4>": 8}, "merges": []},
    }
    data.update(overrides)
    return data


def _write(directory: Path, data: Any, name: str = "tokenizer.json") -> Path:
    path = directory / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_tokenizer_json_byte_level(tmp_path: Path) -> None:
    v = Vocabulary.from_tokenizer_json(_write(tmp_path, _byte_level_json()))
    assert v.kind == "byte-level" and v.add_prefix_space is False
    assert v.token_bytes == (b"h", b" hello", b"\n", b"\xc3\xa9",
                             None,             # U+200D is outside GPT-2's alphabet: unreachable
                             None, "café".encode(), None, None)  # id 7 is named by nothing
    assert v.eos_token_ids == (5, 8)  # by well-known names
    assert v.special_token_ids == (4, 5, 7, 8)


def test_tokenizer_json_sentencepiece(tmp_path: Path) -> None:
    v = Vocabulary.from_tokenizer_json(_write(tmp_path, _spm_json()))
    assert v.kind == "sentencepiece" and v.add_prefix_space is True  # Prepend("▁")
    assert v.token_bytes == (None, None, None, b"A", b"\xe2", b" hi", b" ", b"a b", b"<0x4>")
    assert v.eos_token_ids == (2,)


def test_tokenizer_json_metaspace_unigram(tmp_path: Path) -> None:
    data = _spm_json(
        normalizer=None,
        pre_tokenizer={"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never"},
        decoder={"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never"},
        model={"type": "Unigram", "unk_id": 0, "byte_fallback": False,
               "vocab": [["<unk>", 0.0], ["<s>", 0.0], ["</s>", 0.0], ["<0x41>", -1.0],
                         ["▁x", -2.0]]})
    v = Vocabulary.from_tokenizer_json(_write(tmp_path, data))
    assert v.add_prefix_space is False
    assert v.token_bytes == (None, None, None, b"<0x41>", b" x")  # no byte fallback here
    data["pre_tokenizer"]["prepend_scheme"] = "first"
    assert Vocabulary.from_tokenizer_json(_write(tmp_path, data)).add_prefix_space is True


def test_tokenizer_json_directory_and_padding(tmp_path: Path) -> None:
    _write(tmp_path, _spm_json())
    v = Vocabulary.from_tokenizer_json(tmp_path, size=16)
    assert len(v.token_bytes) == 9 and v.size == 16
    with pytest.raises(VocabularyError, match="smaller"):
        Vocabulary.from_tokenizer_json(tmp_path, size=8)


def test_tokenizer_json_eos_from_config_files(tmp_path: Path) -> None:
    data = _byte_level_json(added_tokens=[
        {"id": 5, "content": "<|begin|>", "special": True},
        {"id": 6, "content": "<|stop|>", "special": True},
        {"id": 7, "content": "<|turn_end|>", "special": True},
        {"id": 8, "content": "</s>", "special": False}])  # text, although named like an EOS
    path = _write(tmp_path, data)
    with pytest.raises(VocabularyError, match="cannot infer the EOS"):
        Vocabulary.from_tokenizer_json(path)
    _write(tmp_path, {"eos_token": {"content": "<|stop|>"}}, "tokenizer_config.json")
    assert Vocabulary.from_tokenizer_json(path).eos_token_ids == (6,)
    _write(tmp_path, {"eos_token_id": [7, 6]}, "generation_config.json")
    v = Vocabulary.from_tokenizer_json(path)
    assert v.eos_token_ids == (6, 7)
    assert v.token_bytes[8] == b"</s>"
    assert Vocabulary.from_tokenizer_json(path, eos_token_ids=[5]).eos_token_ids == (5,)
    _write(tmp_path, {"eos_token": "<|missing|>"}, "tokenizer_config.json")
    with pytest.raises(VocabularyError, match="not a token"):
        Vocabulary.from_tokenizer_json(path)
    _write(tmp_path, {"eos_token_id": 99}, "generation_config.json")
    (tmp_path / "tokenizer_config.json").unlink()
    with pytest.raises(VocabularyError, match=r"EOS id\(s\) \[99\]"):
        Vocabulary.from_tokenizer_json(path)
    with pytest.raises(InvalidArgument, match="out of range"):
        Vocabulary.from_tokenizer_json(path, eos_token_ids=[9])


@pytest.mark.parametrize("content, match", [
    (None, "cannot read tokenizer file"),
    (b"{not json", "not valid JSON"),
    (b"\xff\xfe", "not valid JSON"),
    (b"[1, 2]", "no 'model' object"),
    (json.dumps({"model": {"type": "WordPiece", "vocab": {}}}).encode(), "WordPiece"),
    (json.dumps({"model": {"type": "Magic"}}).encode(), "unknown tokenizer model type"),
    (json.dumps(_byte_level_json(decoder={"type": "CTC"})).encode(), "decoder step 'CTC'"),
    (json.dumps(_byte_level_json(decoder=None, pre_tokenizer=None)).encode(),
     "cannot tell how tokens map to bytes"),
    (json.dumps(_byte_level_json(model={"type": "BPE"})).encode(), "model.vocab"),
])
def test_tokenizer_json_errors(tmp_path: Path, content: bytes | None, match: str) -> None:
    path = tmp_path / "tokenizer.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(VocabularyError, match=match):
        Vocabulary.from_tokenizer_json(path)


# ------------------------------------------------------------------ synthetic GGUF


def _write_gguf(path: Path, model: str, tokens: list[str], types: list[int] | None = None,
                big_endian: bool = False, **ids: int | bool) -> Path:
    gguf = pytest.importorskip("gguf", reason="pip install gguf")
    endian = gguf.GGUFEndian.BIG if big_endian else gguf.GGUFEndian.LITTLE
    writer = gguf.GGUFWriter(str(path), arch="llama", endianess=endian)
    writer.add_tokenizer_model(model)
    writer.add_token_list(tokens)
    if types is not None:
        writer.add_token_types(types)
    for key, value in ids.items():
        if isinstance(value, bool):
            writer.add_bool(f"tokenizer.ggml.{key}", value)
        else:
            writer.add_uint32(f"tokenizer.ggml.{key}", value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    return path


_SPM_TOKENS = ["<unk>", "<s>", "</s>", "<0x41>", "▁hi", "x▁y", "<table>", "<unused0>",
               "<end_of_turn>"]
_SPM_TYPES = [2, 3, 3, 6, 1, 1, 4, 5, 3]


@pytest.mark.parametrize("big_endian", [False, True])
def test_gguf_sentencepiece(tmp_path: Path, big_endian: bool) -> None:
    path = _write_gguf(tmp_path / "spm.gguf", "llama", _SPM_TOKENS, _SPM_TYPES,
                       big_endian=big_endian, eos_token_id=2)
    v = Vocabulary.from_gguf(path, size=12)
    assert v.kind == "sentencepiece"
    assert v.add_prefix_space is True  # llama.cpp's default for "llama" when the key is absent
    assert v.token_bytes == (None, None, None, b"A", b" hi", b"x y", b"<table>", None, None)
    assert v.eos_token_ids == (2, 8)  # eos_token_id + the control token <end_of_turn>
    assert v.special_token_ids == (0, 1, 2, 7, 8)
    assert len(v) == 12


def test_gguf_byte_level_and_eot(tmp_path: Path) -> None:
    path = _write_gguf(tmp_path / "bpe.gguf", "gpt2",
                       ["Ġhi", "Ċ", "<|endoftext|>", "<|eot|>", "ĠĠ", "\u200d", "Ã©"],
                       [1, 1, 3, 3, 4, 1, 4], eos_token_id=2, eot_token_id=3)
    v = Vocabulary.from_gguf(path)
    assert v.kind == "byte-level" and v.add_prefix_space is False
    # user-defined (4) tokens are literal text: "ĠĠ" stays "ĠĠ", "Ã©" stays two characters
    assert v.token_bytes == (b" hi", b"\n", None, None, "ĠĠ".encode(), None, "Ã©".encode())
    assert v.eos_token_ids == (2, 3)


def test_gguf_without_token_types_and_space_prefix_key(tmp_path: Path) -> None:
    path = _write_gguf(tmp_path / "t.gguf", "llama", ["▁a", "b", "</s>"], None,
                       eos_token_id=2, add_space_prefix=False)
    v = Vocabulary.from_gguf(path)
    assert v.token_bytes == (b" a", b"b", None) and v.add_prefix_space is False


@pytest.mark.parametrize("model, tokens, types, ids, match", [
    ("bert", ["[CLS]", "a"], [3, 1], {"eos_token_id": 0}, "tokenizer model 'bert'"),
    ("llama", ["a", "b"], [1, 1], {"eos_token_id": 7}, r"eos_token_id=7 is not a token id"),
    ("llama", ["a", "b"], [1, 1], {}, "no EOS token"),
    ("llama", ["a", "</s>"], [1, 1], {}, "no EOS token"),  # only control tokens count by name
    ("llama", ["a", "<0xZZ>"], [1, 6], {"eos_token_id": 0}, "byte type"),
    ("llama", ["a", "b"], [1], {"eos_token_id": 0}, "token_type has 1 entries"),
])
def test_gguf_content_errors(tmp_path: Path, model: str, tokens: list[str], types: list[int],
                             ids: dict[str, int], match: str) -> None:
    path = _write_gguf(tmp_path / "bad.gguf", model, tokens, types, **ids)
    with pytest.raises(VocabularyError, match=match):
        Vocabulary.from_gguf(path)


def test_gguf_file_errors(tmp_path: Path) -> None:
    with pytest.raises(VocabularyError, match="cannot read GGUF file"):
        Vocabulary.from_gguf(tmp_path / "missing.gguf")
    (tmp_path / "empty.gguf").write_bytes(b"")
    with pytest.raises(VocabularyError, match="not a GGUF file"):
        Vocabulary.from_gguf(tmp_path / "empty.gguf")
    (tmp_path / "text.gguf").write_bytes(b"hello, this is not a gguf file at all")
    with pytest.raises(VocabularyError, match="not a GGUF file"):
        Vocabulary.from_gguf(tmp_path / "text.gguf")
    good = _write_gguf(tmp_path / "good.gguf", "llama", _SPM_TOKENS, _SPM_TYPES, eos_token_id=2)
    raw = good.read_bytes()
    (tmp_path / "cut.gguf").write_bytes(raw[: len(raw) - 40])
    with pytest.raises(VocabularyError, match="truncated or corrupt"):
        Vocabulary.from_gguf(tmp_path / "cut.gguf")
    (tmp_path / "v9.gguf").write_bytes(raw[:4] + (9).to_bytes(4, "little") + raw[8:])
    with pytest.raises(VocabularyError, match="version 9"):
        Vocabulary.from_gguf(tmp_path / "v9.gguf")
    no_tok = tmp_path / "notok.gguf"
    gguf = pytest.importorskip("gguf")
    writer = gguf.GGUFWriter(str(no_tok), arch="llama")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    with pytest.raises(VocabularyError, match="no tokenizer metadata"):
        Vocabulary.from_gguf(no_tok)


def test_gguf_metadata_reader_agrees_with_gguf_package() -> None:
    """The fast metadata reader against gguf.GGUFReader on a real vocab file (32k tokens)."""
    gguf = pytest.importorskip("gguf", reason="pip install gguf")
    from tokamata.vocab.gguf import TOKENIZER_KEYS as _GGUF_KEYS, read_metadata as _read_gguf_metadata

    path = rt.ggml_vocab_path("llama-spm")
    ours = _read_gguf_metadata(str(path), _GGUF_KEYS)
    reader = gguf.GGUFReader(str(path))
    field = reader.fields["tokenizer.ggml.tokens"]
    assert ours["tokenizer.ggml.tokens"] == [bytes(field.parts[i]) for i in field.data]
    field = reader.fields["tokenizer.ggml.token_type"]
    assert ours["tokenizer.ggml.token_type"] == [int(field.parts[i][0]) for i in field.data]
    assert ours["tokenizer.ggml.model"] == reader.fields["tokenizer.ggml.model"].contents()
    assert ours["tokenizer.ggml.eos_token_id"] == \
        reader.fields["tokenizer.ggml.eos_token_id"].contents()


# ------------------------------------------------------------------ real tokenizers

# name -> (loader, number of ids, kind, add_prefix_space, {EOS id: text},
#          {id: expected bytes or None} spot checks)
REAL: dict[str, tuple[Any, int, str, bool, dict[int, str], dict[int, bytes | None]]] = {
    "llama3": (rt.llama3, 128256, "byte-level", False,
               {128001: "<|end_of_text|>", 128009: "<|eot_id|>"},
               {128000: None, 128255: None, 220: b" ", 198: b"\n", 9906: b"Hello",
                1917: b" world"}),
    "gemma3": (rt.gemma3, 262144, "sentencepiece", False,
               {1: "<eos>", 106: "<end_of_turn>"},
               {0: None, 2: None, 3: None, 105: None, 6: None, 262143: None,
                238: b"\x00", 238 + 0x41: b"A", 493: b"\xff",   # <0xNN> byte fallback
                107: b"\n", 212: b"</s>",                       # user-defined: literal text
                255999: b"<start_of_image>",                    # user-defined in the GGUF
                9259: b"Hello", 1902: b" world"}),
    "qwen2": (rt.qwen2, 151936, "byte-level", False,
              {151643: "<|endoftext|>", 151645: "<|im_end|>"},
              {151644: None, 9707: b"Hello", 1879: b" world", 220: b" "}),
    "gpt2": (rt.gpt2, 50257, "byte-level", False, {50256: "<|endoftext|>"},
             {15496: b"Hello", 995: b" world", 220: b" ", 198: b"\n"}),
}


@pytest.mark.parametrize("name", list(REAL))
def test_real_vocabulary_shape(name: str) -> None:
    loader, n, kind, prefix, eos, spots = REAL[name]
    v: Vocabulary = loader().vocab
    assert len(v.token_bytes) == n == v.size == len(v)
    assert v.kind == kind and v.add_prefix_space is prefix
    assert v.eos_token_ids == tuple(sorted(eos))
    for i, want in spots.items():
        assert v.token_bytes[i] == want, (i, v.token_bytes[i], want)
    assert all(v.token_bytes[i] is None for i in v.special_token_ids)
    assert sum(b is None for b in v.token_bytes) == len(v.special_token_ids)
    assert b"" not in v.token_bytes


def test_gemma3_marks_eos_and_end_of_turn_only() -> None:
    v = rt.gemma3().vocab
    # Gemma 3's GGUF names <eos> (1) as EOS and has no eot_token_id; <end_of_turn> (106) is a
    # control token found by name. <start_of_turn> (105) is control but not EOS; </s> (212) is
    # an HTML strikethrough *text* token.
    assert v.eos_token_ids == (1, 106)
    assert v.token_bytes[105] is None and 105 not in v.eos_token_ids
    assert len(v.special_token_ids) == 6249
    # byte fallback: all 256 bytes, duplicating single-character tokens such as "A"
    assert [v.token_bytes[238 + b] for b in range(256)] == [bytes([b]) for b in range(256)]
    assert v.token_bytes.count(b"A") == 2  # <0x41> (303) and the character token "A"


def test_gemma3_gguf_loads_fast() -> None:
    path = rt.gemma3_model_path()
    start = time.perf_counter()
    v = Vocabulary.from_gguf(path, size=262144 + 64)
    elapsed = time.perf_counter() - start
    assert elapsed < 3.0, f"from_gguf took {elapsed:.2f} s for 262,144 tokens"
    assert len(v) == 262144 + 64 and len(v.token_bytes) == 262144
    assert v.special_token_ids[-1] < 262144  # padding ids are not special ids
    with pytest.raises(VocabularyError, match="smaller"):
        Vocabulary.from_gguf(path, size=262143)


SAMPLE_TEXTS = [
    "Hello world",
    " leading space",
    "  two leading spaces and trailing  ",
    "line one\nline two\n\n\ttabbed\r\nwindows\n",
    '{"name": "tokamata", "n": [1, 2.5e-3, null, true], "s": "a\\"b"}',
    "def f(x):\n    return x ** 2  # square\n\n\n",
    "Ünïcödé: naïve café, Größe, ſ, ﬁ ligature",
    "中文分词测试，日本語のテキスト、한국어 텍스트",
    "emoji 🚀 and ZWJ 👩\u200d👩\u200d👧 and flags 🇫🇷 and skin 👍🏽",
    "combining: e\u0301 a\u0308 and RTL: שלום مرحبا",
    "math ∀x∈ℝ: x²≥0; arrows ⟶ ⇒ ∎",
    "\u200b zero width, \u00a0 nbsp, \u3000 ideographic space",
    "HTML <s>strike</s> <b>bold</b> <table><tr><td>x</td></tr></table>",
    "1234567890 3.14159 -0.5e10 0x1F",
    "",
]


def _expected(vocab: Vocabulary, text: str) -> bytes:
    """The bytes an encoding of ``text`` decodes to: the text, plus the dummy-prefix space a
    SentencePiece encoder with ``add_prefix_space`` puts in front of non-empty text."""
    prefix = b" " if vocab.add_prefix_space and text else b""
    return prefix + text.encode("utf-8")


@pytest.mark.parametrize("name", list(REAL))
def test_real_encoder_round_trip(name: str) -> None:
    tok = REAL[name][0]()
    for text in SAMPLE_TEXTS:
        ids = tok.encode(text)
        assert tok.vocab.decode(ids) == _expected(tok.vocab, text), (name, text, ids)
        assert all(tok.vocab.token_bytes[i] is not None for i in ids)


_VECTOR_FILES = ["llama-spm", "phi-3", "llama-bpe", "qwen2", "qwen35", "gpt-2", "gemma-4",
                 "deepseek-coder", "deepseek-llm", "falcon", "mpt", "refact", "starcoder",
                 "command-r"]


@pytest.mark.parametrize("name", _VECTOR_FILES)
def test_llama_cpp_vectors_decode_exactly(name: str) -> None:
    tok = rt.ggml_vocab(name)
    if not tok.vectors:
        pytest.skip(f"no test vectors for {name}")
    for text, ids in tok.vectors:
        assert tok.vocab.decode(ids) == _expected(tok.vocab, text), (name, text, ids)


@pytest.mark.parametrize("name, n, prefix, eos", [
    ("llama-spm", 32000, True, (2,)),
    ("phi-3", 32064, True, (32000, 32007)),        # <|endoftext|>, <|end|>
    ("gemma-4", 262144, False, (1, 106)),          # <eos>, <turn|>
    ("command-r", 256000, False, (255001,)),
])
def test_other_gguf_vocabularies(name: str, n: int, prefix: bool, eos: tuple[int, ...]) -> None:
    v = rt.ggml_vocab(name).vocab
    assert len(v.token_bytes) == n and v.add_prefix_space is prefix and v.eos_token_ids == eos


def test_llama3_tokenizer_json_matches_gguf_and_vectors() -> None:
    """The Llama 3 tokenizer.json and llama.cpp's Llama 3 GGUF give the same vocabulary, and
    the tokenizers encoder reproduces llama.cpp's test vectors."""
    json_tok = rt.llama3()
    gguf_tok = rt.ggml_vocab("llama-bpe")
    assert json_tok.vocab.token_bytes == gguf_tok.vocab.token_bytes
    assert json_tok.vocab.eos_token_ids == gguf_tok.vocab.eos_token_ids
    for text, ids in gguf_tok.vectors:
        assert tuple(json_tok.encode(text)) == ids


@pytest.mark.parametrize("name", ["qwen2", "gpt2"])
def test_converted_encoders_reproduce_llama_cpp_vectors(name: str) -> None:
    """The encoders built by transformers from the vocab-only GGUFs are the real ones."""
    tok = REAL[name][0]()
    for text, ids in tok.vectors:
        assert tuple(tok.encode(text)) == ids, text


@pytest.mark.parametrize("name", ["llama3", "gemma3"])
def test_every_token_matches_tokenizers_decode(name: str) -> None:
    """Each id decoded alone by the Hugging Face decoder gives our bytes (where they are UTF-8)."""
    tok = REAL[name][0]()
    v = tok.vocab
    decoded = tok.tokenizer.decode_batch([[i] for i in range(len(v.token_bytes))],
                                         skip_special_tokens=False)
    checked = 0
    for i, text in enumerate(decoded):
        b = v.token_bytes[i]
        if b is None:
            continue
        try:
            mine = b.decode("utf-8")
        except UnicodeDecodeError:
            continue  # partial UTF-8: the HF decoder prints U+FFFD
        assert mine == text, (i, b, text)
        checked += 1
    assert checked > 0.9 * len(v.token_bytes)


def test_gemma3_same_vocabulary_from_gguf_tokenizer_json_and_hf() -> None:
    transformers = pytest.importorskip("transformers", reason="pip install transformers")
    directory = rt.gemma3_tokenizer_dir()
    from_gguf = rt.gemma3().vocab
    from_json = Vocabulary.from_tokenizer_json(directory / "tokenizer.json")
    hf = transformers.AutoTokenizer.from_pretrained(str(directory))
    from_hf = Vocabulary.from_hf(hf, size=262208)
    for v in (from_json, from_hf):
        assert v.token_bytes == from_gguf.token_bytes
        assert v.eos_token_ids == from_gguf.eos_token_ids == (1, 106)
        assert v.kind == "sentencepiece" and v.add_prefix_space is False
    assert len(from_hf) == 262208


def test_from_hf_llama3_and_slow_tokenizer_rejected() -> None:
    transformers = pytest.importorskip("transformers", reason="pip install transformers")
    path = rt.llama3_tokenizer_json()
    hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path))
    v = Vocabulary.from_hf(hf, size=128256 + 256)
    assert v.token_bytes == rt.llama3().vocab.token_bytes
    assert v.eos_token_ids == (128001, 128009) and len(v) == 128512

    class Slow:
        eos_token_id = 0

    with pytest.raises(VocabularyError, match="only fast"):
        Vocabulary.from_hf(Slow())


def test_well_known_names_are_special_in_real_tokenizers() -> None:
    """Each EOS id found by name is a special token whose text is a well-known EOS name."""
    for name in ("llama3", "qwen2"):
        tok = REAL[name][0]()
        for i, text in REAL[name][4].items():
            assert tok.vocab.token_bytes[i] is None
            assert text in WELL_KNOWN_EOS_NAMES
