"""Hostile vocabulary files: every malformed or oversized ``tokenizer.json``, config file or
GGUF header gets a tokamata error (``VocabularyError``, or ``LimitExceeded`` naming the field of
``Limits``) in bounded time and memory, never a plain Python exception, a silent wrong
vocabulary, a huge allocation or a crash (issue 17, part A).

Each finding is a row of a table: a mutation of a small valid file and the error it must give.
GGUF files are written byte by byte here (no ``gguf`` package), so that headers can lie.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tokamata import Limits
from tokamata.errors import LimitExceeded, TokamataError, VocabularyError
from tokamata.vocab import Vocabulary
from tokamata.vocab.huggingface import check_json_depth

# ------------------------------------------------------------------ tokenizer.json


def _tokenizer() -> dict[str, Any]:
    """A valid byte-level tokenizer.json: ids 0-3 text, 4 the EOS."""
    return {
        "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġa": 3}},
        "added_tokens": [{"id": 4, "content": "<|endoftext|>", "special": True}],
        "decoder": {"type": "ByteLevel"},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
    }


class Deep:
    """A JSON value nested ``depth`` levels deep (``[{"a": [...]}]``), spliced into the text by
    :func:`_dumps`: ``json.dumps`` itself recurses, so it cannot write one."""

    def __init__(self, depth: int, leaf: Any = None) -> None:
        self.depth, self.leaf = depth, leaf

    def text(self) -> str:
        opening = "".join('{"a":' if i % 2 else "[" for i in range(self.depth))
        closing = "".join("}" if i % 2 else "]" for i in reversed(range(self.depth)))
        return opening + json.dumps(self.leaf) + closing


def _dumps(data: Any) -> str:
    deep: list[Deep] = []

    def placeholder(value: Any) -> str:
        assert isinstance(value, Deep)
        deep.append(value)
        return f"@DEEP{len(deep) - 1}@"

    text = json.dumps(data, default=placeholder)
    for i, value in enumerate(deep):
        text = text.replace(f'"@DEEP{i}@"', value.text())
    return text


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return mutate


ADDED = ("added_tokens", 0)

#: (what, mutation of _tokenizer(), error class, limit named or None)
TOKENIZER_MUTATIONS: list[tuple[str, Callable[[dict[str, Any]], None], type[TokamataError], str | None]] = [
    # silent wrong before: -1 overwrote the last token, 2.7 became 2, true became 1
    ("added id -1", _set(ADDED + ("id",), -1), VocabularyError, None),
    ("added id 2.7", _set(ADDED + ("id",), 2.7), VocabularyError, None),
    ("added id 2.0", _set(ADDED + ("id",), 2.0), VocabularyError, None),
    ("added id true", _set(ADDED + ("id",), True), VocabularyError, None),
    ("added id '3'", _set(ADDED + ("id",), "3"), VocabularyError, None),
    ("added id missing", lambda d: d["added_tokens"][0].pop("id"), VocabularyError, None),
    ("added content 5", _set(ADDED + ("content",), 5), VocabularyError, None),
    ("added content missing", lambda d: d["added_tokens"][0].pop("content"), VocabularyError, None),
    ("added special 'yes'", _set(ADDED + ("special",), "yes"), VocabularyError, None),
    ("added entry 5", _set(("added_tokens", 0), 5), VocabularyError, None),
    # TypeError / AttributeError before
    ("added_tokens 5", _set(("added_tokens",), 5), VocabularyError, None),
    ("added_tokens {}", _set(("added_tokens",), {"id": 4}), VocabularyError, None),
    ("decoder 5", _set(("decoder",), 5), VocabularyError, None),
    ("decoders 5", _set(("decoder",), {"type": "Sequence", "decoders": 5}), VocabularyError, None),
    ("decoders 'ab'", _set(("decoder",), {"type": "Sequence", "decoders": "ab"}), VocabularyError, None),
    ("decoders [5]", _set(("decoder",), {"type": "Sequence", "decoders": [5]}), VocabularyError, None),
    ("replacement 5", _set(("decoder",), {"type": "Metaspace", "replacement": 5}), VocabularyError, None),
    ("pre_tokenizer replacement 5",
     lambda d: (d.pop("decoder"), d.update(pre_tokenizer={"type": "Metaspace", "replacement": [1]})),
     VocabularyError, None),
    ("pre_tokenizer 5", _set(("pre_tokenizer",), 5), VocabularyError, None),
    ("pretokenizers null",
     _set(("pre_tokenizer",), {"type": "Sequence", "pretokenizers": None}), VocabularyError, None),
    ("normalizer [1]", _set(("normalizer",), [1]), VocabularyError, None),
    ("decoder type [1]", _set(("decoder",), {"type": [1]}), VocabularyError, None),
    ("vocab id true", _set(("model", "vocab", "a"), True), VocabularyError, None),
    ("vocab id 1.5", _set(("model", "vocab", "a"), 1.5), VocabularyError, None),
    ("vocab id -3", _set(("model", "vocab", "a"), -3), VocabularyError, None),
    ("unigram entry [5, 0.0]",
     _set(("model",), {"type": "Unigram", "vocab": [[5, 0.0]]}), VocabularyError, None),
    ("model 5", _set(("model",), 5), VocabularyError, None),
    # memory: a 60-byte file allocated 7.6 GB for an id of 1e9
    ("vocab id 1e9", _set(("model", "vocab", "a"), 10**9), LimitExceeded, "max_vocab_size"),
    ("vocab id 2**64", _set(("model", "vocab", "a"), 2**64), LimitExceeded, "max_vocab_size"),
    ("added id 1e9", _set(ADDED + ("id",), 10**9), LimitExceeded, "max_vocab_size"),
    # RecursionError before
    ("normalizer nested 100000 deep", _set(("normalizer",), Deep(100_000)), LimitExceeded,
     "max_nesting_depth"),
    ("unknown key nested 5000 deep", _set(("extra",), Deep(5_000, "x")), LimitExceeded,
     "max_nesting_depth"),
    ("added entry nested 300 deep", _set(("added_tokens", 0), Deep(300)), VocabularyError, None),
]


@pytest.fixture
def default_recursion_limit():
    """Python's default recursion limit for the test: how deep JSON the parser reads (and so
    which of LimitExceeded / VocabularyError a nesting case gets) depends on it, and other
    tests in the same process (Hypothesis) may leave it raised."""
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(saved)


def _write(directory: Path, data: Any, name: str = "tokenizer.json") -> Path:
    path = directory / name
    path.write_text(data if isinstance(data, str) else _dumps(data))
    return path


def test_the_base_tokenizer_reads() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        v = Vocabulary.from_tokenizer_json(_write(Path(directory), _tokenizer()))
    assert v.token_bytes == (b"a", b"b", b"ab", b" a", None) and v.eos_token_ids == (4,)


@pytest.mark.parametrize("what, mutate, error, limit", TOKENIZER_MUTATIONS,
                         ids=[row[0] for row in TOKENIZER_MUTATIONS])
def test_tokenizer_json_mutation(default_recursion_limit: None, tmp_path: Path, what: str, mutate: Callable[[dict[str, Any]], None],
                                 error: type[TokamataError], limit: str | None) -> None:
    data = _tokenizer()
    mutate(data)
    path = _write(tmp_path, data)
    with pytest.raises(error) as info:
        Vocabulary.from_tokenizer_json(path, eos_token_ids=[4])
    assert type(info.value) is error
    if limit is not None:
        assert isinstance(info.value, LimitExceeded)
        assert info.value.limit == limit and info.value.value > info.value.bound


def test_added_token_errors_name_the_entry(tmp_path: Path) -> None:
    data = _tokenizer()
    data["added_tokens"].append({"id": 2.7, "content": "<|x|>", "special": False})
    with pytest.raises(VocabularyError, match=r"added token 1 .*<\|x\|>.* has id 2\.7"):
        Vocabulary.from_tokenizer_json(_write(tmp_path, data), eos_token_ids=[4])


def test_eos_inference_reads_validated_added_tokens(tmp_path: Path) -> None:
    """tokenizer_config.json's eos_token is looked up among the added tokens: a malformed
    entry is a VocabularyError there too (it was a KeyError / ValueError)."""
    data = _tokenizer()
    data["added_tokens"].insert(0, {"content": "<|stop|>", "special": True})
    path = _write(tmp_path, data)
    _write(tmp_path, {"eos_token": "<|stop|>"}, "tokenizer_config.json")
    with pytest.raises(VocabularyError, match="has id None"):
        Vocabulary.from_tokenizer_json(path)


@pytest.mark.parametrize("name, content", [
    ("tokenizer_config.json", Deep(100_000)),
    ("generation_config.json", {"eos_token_id": Deep(2_000, 4)}),
])
def test_deep_config_files(tmp_path: Path, name: str, content: Any) -> None:
    path = _write(tmp_path, _tokenizer())
    _write(tmp_path, content, name)
    with pytest.raises(LimitExceeded) as info:
        Vocabulary.from_tokenizer_json(path)
    assert info.value.limit == "max_nesting_depth"
    assert info.value.bound == Limits().max_nesting_depth


def test_generation_config_bool_is_not_an_id(tmp_path: Path) -> None:
    path = _write(tmp_path, _tokenizer())
    _write(tmp_path, {"eos_token_id": True}, "generation_config.json")
    assert Vocabulary.from_tokenizer_json(path).eos_token_ids == (4,)  # true is not id 1


def test_nesting_the_parser_reaches_reads(default_recursion_limit: None, tmp_path: Path) -> None:
    """Nesting that Python's JSON parser reaches is harmless (nothing recurses into the value):
    a Sequence of decoders 400 deep is read, flattened with a stack. Deeper than the parser
    reaches is LimitExceeded past max_nesting_depth, else VocabularyError."""
    data = _tokenizer()
    decoder: Any = {"type": "ByteLevel"}
    for _ in range(200):  # two JSON levels per Sequence
        decoder = {"type": "Sequence", "decoders": [decoder]}
    data["decoder"] = decoder
    path = _write(tmp_path, data)
    assert Vocabulary.from_tokenizer_json(path).token_bytes[3] == b" a"
    data["decoder"] = Deep(1_500, "x")
    path = _write(tmp_path, data)
    with pytest.raises(LimitExceeded) as info:
        Vocabulary.from_tokenizer_json(path)
    assert (info.value.limit, info.value.value, info.value.bound) == ("max_nesting_depth", 201, 200)
    with pytest.raises(VocabularyError, match="nested too deeply"):
        Vocabulary.from_tokenizer_json(path, limits=Limits(max_nesting_depth=2_000))


def test_deep_json_under_a_high_recursion_limit(tmp_path: Path) -> None:
    """With the recursion limit raised past what the JSON parser can stand (its C stack would
    overflow), nesting is checked before parsing. In a child process: a regression crashes."""
    data = _tokenizer()
    data["decoder"] = Deep(300_000, "x")
    path = _write(tmp_path, data)
    code = (
        "import sys, tokamata\n"
        "from tokamata.errors import LimitExceeded\n"
        "sys.setrecursionlimit(1_000_000)\n"
        "try:\n"
        f"    tokamata.Vocabulary.from_tokenizer_json({str(path)!r})\n"
        "except LimitExceeded as e:\n"
        "    print(e.limit)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "max_nesting_depth", result


@pytest.mark.parametrize("text, depth", [
    (b"1", 0), (b"[]", 1), (b'{"a": [1, "]]"], "b": {}}', 2), (b'["[[[[", "\\\\", "\\"[["]', 1),
    (b'[[["\\\\\\""]]]', 3), (b'[{"\\\\": [[]]}]', 4), (b'[[], [[]], [[[]]], []]', 4),
    (b'"[[[[[[[["', 0), (b"[[[[[[[[]]]]]]]]", 8),
])
def test_check_json_depth(text: bytes, depth: int) -> None:
    json.loads(text)  # (each is valid JSON)
    for bound in range(10):
        if depth <= bound:
            check_json_depth(text, bound)
        else:
            with pytest.raises(LimitExceeded) as info:
                check_json_depth(text, bound)
            assert (info.value.value, info.value.bound) == (bound + 1, bound)


def test_file_size_bound(tmp_path: Path) -> None:
    data = _tokenizer()
    data["padding"] = "x" * 5_000
    path = _write(tmp_path, data)
    with pytest.raises(LimitExceeded) as info:
        Vocabulary.from_tokenizer_json(path, limits=Limits(max_file_bytes=4_096))
    assert info.value.limit == "max_file_bytes"
    assert info.value.value == os.path.getsize(path) and info.value.bound == 4_096
    assert Vocabulary.from_tokenizer_json(path).size == 5
    _write(tmp_path, {"eos_token": "x" * 5_000}, "tokenizer_config.json")
    small = _write(tmp_path, _tokenizer())
    with pytest.raises(LimitExceeded, match="max_file_bytes"):
        Vocabulary.from_tokenizer_json(small, limits=Limits(max_file_bytes=4_096))


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_dev_zero_reads_at_most_the_bound() -> None:
    """``/dev/zero`` has no size to check first: the read stops at the bound plus one byte
    (it read 7.4 GB before). Run in a child process, whose peak resident memory is checked."""
    code = (
        "import tokamata\n"
        "from tokamata.errors import LimitExceeded\n"
        "limits = tokamata.Limits(max_file_bytes=1 << 20)\n"
        "try:\n"
        "    tokamata.Vocabulary.from_tokenizer_json('/dev/zero', limits=limits)\n"
        "except LimitExceeded as e:\n"
        "    assert (e.limit, e.value, e.bound) == ('max_file_bytes', (1 << 20) + 1, 1 << 20), e\n"
        "else:\n"
        "    raise SystemExit('no error under a 1 MiB bound')\n"
        "try:\n"
        "    tokamata.Vocabulary.from_tokenizer_json('/dev/zero')\n"
        "except LimitExceeded as e:\n"
        "    assert e.limit == 'max_file_bytes', e\n"
        "else:\n"
        "    raise SystemExit('no error under the default bound')\n"
        # VmHWM, not ru_maxrss: ru_maxrss survives exec, so a child of a large pytest process
        # would report the parent's peak
        "peak = int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])\n"
        "print(peak)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    peak_kib = int(result.stdout.strip())
    bound_kib = Limits().max_file_bytes // 1024
    assert peak_kib < 2 * bound_kib + 400_000  # the bound (once or twice) plus the interpreter


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_named_pipe_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Opening a named pipe for reading blocks until a writer comes: it hung."""
    os.mkfifo(tmp_path / "tokenizer.json")
    with pytest.raises(VocabularyError, match="pipe"):
        Vocabulary.from_tokenizer_json(tmp_path)
    model = tmp_path / "model"
    model.mkdir()
    os.mkfifo(model / "tokenizer_config.json")
    with pytest.raises(VocabularyError, match="pipe"):
        Vocabulary.from_tokenizer_json(_write(model, _tokenizer()))


def test_config_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "generation_config.json").mkdir()
    with pytest.raises(VocabularyError, match="cannot read"):
        Vocabulary.from_tokenizer_json(_write(tmp_path, _tokenizer()))


def test_vocabulary_size_bound() -> None:
    with pytest.raises(LimitExceeded) as info:
        Vocabulary.from_token_bytes([b"a", None], [1], size=2**40)
    assert (info.value.limit, info.value.value) == ("max_vocab_size", 2**40)
    with pytest.raises(LimitExceeded, match="max_vocab_size"):
        Vocabulary.from_token_bytes([b"a", b"b", None], [2], limits=Limits(max_vocab_size=2))
    assert Vocabulary.from_token_bytes([b"a", None], [1], size=4_000_000).size == 4_000_000


def test_size_argument_bound_is_checked_before_allocating(tmp_path: Path) -> None:
    path = _write(tmp_path, _tokenizer())
    with pytest.raises(LimitExceeded, match="max_vocab_size"):
        Vocabulary.from_tokenizer_json(path, size=10**12)


# ------------------------------------------------------------------ GGUF, written by hand


def _string(text: str | bytes) -> bytes:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def _kv(key: str, vtype: int, payload: bytes) -> bytes:
    return _string(key) + struct.pack("<I", vtype) + payload


def _gguf(*kvs: bytes, kv_count: int | None = None) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs) if kv_count is None else kv_count) + b"".join(kvs)


def _string_array(items: list[str], count: int | None = None) -> bytes:
    return struct.pack("<IQ", 8, len(items) if count is None else count) + b"".join(map(_string, items))


def _u32_array(items: list[int], count: int | None = None) -> bytes:
    return struct.pack("<IQ", 4, len(items) if count is None else count) + struct.pack(f"<{len(items)}I", *items)


def _nested_arrays(depth: int) -> bytes:
    """``depth`` arrays of one array each around an empty u32 array (12 bytes a level)."""
    return struct.pack("<IQ", 9, 1) * (depth - 1) + struct.pack("<IQ", 4, 0)


MODEL = _kv("tokenizer.ggml.model", 8, _string("llama"))
TOKENS = _kv("tokenizer.ggml.tokens", 9, _string_array(["▁a", "b", "</s>"]))
TYPES = _kv("tokenizer.ggml.token_type", 9, _u32_array([1, 1, 3]))
EOS = _kv("tokenizer.ggml.eos_token_id", 4, struct.pack("<I", 2))

#: (what, file bytes, error class, limit named or None)
GGUF_FILES: list[tuple[str, bytes, type[TokamataError], str | None]] = [
    # segfault before (50,000 nested arrays, 600 KB)
    ("50000 nested arrays", _gguf(_kv("general.junk", 9, _nested_arrays(50_000)), MODEL, TOKENS, EOS),
     LimitExceeded, "max_nesting_depth"),
    ("nested arrays as the tokens", _gguf(MODEL, _kv("tokenizer.ggml.tokens", 9, _nested_arrays(3)), EOS),
     VocabularyError, None),
    # counts and lengths the file cannot hold: refused before allocating
    ("string array of 2**62", _gguf(_kv("general.junk", 9, _string_array(["a"], count=2**62)), MODEL),
     VocabularyError, None),
    ("u32 array of 2**62", _gguf(_kv("general.junk", 9, _u32_array([1], count=2**62)), MODEL),
     VocabularyError, None),
    ("array of 2**60 arrays", _gguf(_kv("general.junk", 9, struct.pack("<IQ", 9, 2**60)), MODEL),
     VocabularyError, None),
    ("key of 2**63 bytes", _gguf(struct.pack("<Q", 2**63) + bytes(16)), VocabularyError, None),
    ("2**63 keys", _gguf(MODEL, kv_count=2**63), VocabularyError, None),
    ("string of 2**63 bytes", _gguf(_kv("tokenizer.ggml.model", 8, struct.pack("<Q", 2**63))),
     VocabularyError, None),
    # values of the wrong GGUF type
    ("tokens as u32", _gguf(MODEL, _kv("tokenizer.ggml.tokens", 9, _u32_array([1, 2])), EOS),
     VocabularyError, None),
    ("model as u32", _gguf(_kv("tokenizer.ggml.model", 4, struct.pack("<I", 1)), TOKENS, EOS),
     VocabularyError, None),
    ("token_type as a string", _gguf(MODEL, TOKENS, _kv("tokenizer.ggml.token_type", 8, _string("x")), EOS),
     VocabularyError, None),
    ("token_type as strings", _gguf(MODEL, TOKENS, _kv("tokenizer.ggml.token_type", 9,
                                                       _string_array(["1", "1", "3"])), EOS),
     VocabularyError, None),
    ("eos id as a bool", _gguf(MODEL, TOKENS, TYPES, _kv("tokenizer.ggml.eos_token_id", 7, b"\x01")),
     VocabularyError, None),
    ("eos id as a string", _gguf(MODEL, TOKENS, TYPES, _kv("tokenizer.ggml.eos_token_id", 8, _string("2"))),
     VocabularyError, None),
    ("unknown value type", _gguf(_kv("general.junk", 99, b"")), VocabularyError, None),
]


def test_the_hand_written_gguf_reads(tmp_path: Path) -> None:
    path = tmp_path / "ok.gguf"
    path.write_bytes(_gguf(_kv("general.junk", 9, _nested_arrays(5)), MODEL, TOKENS, TYPES, EOS))
    v = Vocabulary.from_gguf(path)
    assert v.token_bytes == (b" a", b"b", None) and v.eos_token_ids == (2,)


@pytest.mark.parametrize("what, content, error, limit", GGUF_FILES, ids=[row[0] for row in GGUF_FILES])
def test_gguf_hostile(tmp_path: Path, what: str, content: bytes, error: type[TokamataError],
                      limit: str | None) -> None:
    path = tmp_path / "hostile.gguf"
    path.write_bytes(content)
    with pytest.raises(error) as info:
        Vocabulary.from_gguf(path)
    assert type(info.value) is error
    if limit is not None:
        assert isinstance(info.value, LimitExceeded) and info.value.limit == limit


def test_gguf_not_a_regular_file(tmp_path: Path) -> None:
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.gguf")
        with pytest.raises(VocabularyError, match="not a regular file"):
            Vocabulary.from_gguf(tmp_path / "pipe.gguf")  # it blocked in open()
    with pytest.raises(VocabularyError, match="cannot read GGUF file"):
        Vocabulary.from_gguf(tmp_path)
    if os.path.exists("/dev/zero"):
        with pytest.raises(VocabularyError, match="not a regular file"):
            Vocabulary.from_gguf("/dev/zero")


def test_gguf_limits(tmp_path: Path) -> None:
    path = tmp_path / "v.gguf"
    path.write_bytes(_gguf(_kv("general.junk", 9, _nested_arrays(10)), MODEL, TOKENS, TYPES, EOS))
    with pytest.raises(LimitExceeded) as info:
        Vocabulary.from_gguf(path, limits=Limits(max_nesting_depth=5))
    assert (info.value.limit, info.value.bound) == ("max_nesting_depth", 5)
    assert Vocabulary.from_gguf(path, limits=Limits(max_nesting_depth=10)).size == 3
    with pytest.raises(LimitExceeded) as info:
        Vocabulary.from_gguf(path, limits=Limits(max_vocab_size=2))
    assert (info.value.limit, info.value.value, info.value.bound) == ("max_vocab_size", 3, 2)
