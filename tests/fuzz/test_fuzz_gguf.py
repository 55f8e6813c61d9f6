"""Fuzzing ``Vocabulary.from_gguf``: small GGUF files written byte by byte (every metadata value
type, nested arrays, the tokenizer keys of a ``llama`` and a ``gpt2`` vocabulary), with
structured lies (counts, lengths, value types, versions) and byte-level mutations (flips,
interesting integers written over any field, insertions, truncation).

Checked for every input, in a capped worker process (``fuzz_harness``): reading gives a
vocabulary or raises a :class:`tokamata.TokamataError` (``VocabularyError``,
``LimitExceeded``), within the worker's time and memory caps and without crashing (the file
is mapped: a lying header must not read past it); a vocabulary that reads serves a regex and
a JSON constraint whose walks pass ``fuzz_checks.walk``.
"""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import tokamata
from fuzz_checks import LIMITS
from fuzz_harness import fuzz_settings, mutated
from test_fuzz_tokenizer_json import check_vocabulary

# ------------------------------------------------------------------ the worker side

_DIRECTORY = tempfile.TemporaryDirectory(prefix="tokamata-fuzz-")


def run_input(value: tuple[bytes, int]) -> str:
    content, seed = value
    path = Path(_DIRECTORY.name) / "vocab.gguf"
    path.write_bytes(content)
    try:
        vocab = tokamata.Vocabulary.from_gguf(path, limits=LIMITS)
    except tokamata.TokamataError as e:
        return f"error {type(e).__name__}"
    return check_vocabulary(vocab, seed)


# ------------------------------------------------------------------ GGUF, written by hand
# value types: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool, 8 string, 9 array, 10 u64,
# 11 i64, 12 f64

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def _string(text: str | bytes) -> bytes:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def _kv(key: str, vtype: int, payload: bytes) -> bytes:
    return _string(key) + struct.pack("<I", vtype) + payload


def _strings(items: list[str]) -> bytes:
    return struct.pack("<IQ", 8, len(items)) + b"".join(map(_string, items))


def _ints(items: list[int], vtype: int = 5) -> bytes:
    return struct.pack("<IQ", vtype, len(items)) + b"".join(struct.pack(_SCALARS[vtype], i) for i in items)


def gguf(kvs: list[bytes], version: int = 3, tensors: int = 0) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, tensors, len(kvs)) + b"".join(kvs)


def _llama() -> list[bytes]:
    return [_kv("general.architecture", 8, _string("llama")),
            _kv("general.junk", 9, struct.pack("<IQ", 9, 2) + _ints([1, 2]) + _strings(["x"])),
            *[_kv(f"general.v{t}", t, struct.pack(f, 1)) for t, f in _SCALARS.items()],
            _kv("tokenizer.ggml.model", 8, _string("llama")),
            _kv("tokenizer.ggml.tokens", 9, _strings(["<unk>", "<s>", "</s>", "▁a", "b", "<0xC3>", "<0xA9>", "▁"])),
            _kv("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, 8) + struct.pack("<8f", *range(8))),
            _kv("tokenizer.ggml.token_type", 9, _ints([2, 3, 3, 1, 1, 6, 6, 1])),
            _kv("tokenizer.ggml.bos_token_id", 4, struct.pack("<I", 1)),
            _kv("tokenizer.ggml.eos_token_id", 4, struct.pack("<I", 2))]


def _gpt2() -> list[bytes]:
    return [_kv("tokenizer.ggml.model", 8, _string("gpt2")),
            _kv("tokenizer.ggml.tokens", 9, _strings(["a", "b", "ab", "Ġa", "<|endoftext|>", "Ã©"])),
            _kv("tokenizer.ggml.token_type", 9, _ints([1, 1, 1, 1, 3, 1])),
            _kv("tokenizer.ggml.merges", 9, _strings(["a b"])),
            _kv("tokenizer.ggml.eos_token_id", 4, struct.pack("<I", 4)),
            _kv("tokenizer.ggml.padding_token_id", 11, struct.pack("<q", -1))]


BASES = [_llama, _gpt2]
_LIES = [0, 1, 2, 3, 7, 8, 9, 12, 13, 255, 2**16, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**62, 2**63, 2**64 - 1]


@st.composite
def gguf_files(draw) -> bytes:
    """A base file with a few parts replaced: a key's value type, an array's count or element
    type, a string's length, the header's version, tensor or key counts; parts dropped,
    duplicated or reordered."""
    kvs = draw(st.sampled_from(BASES))()
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(kvs) - 1))
        kv = bytearray(kvs[i])
        key_end = 8 + struct.unpack_from("<Q", kv)[0] if len(kv) >= 8 else 1 << 64
        choice = draw(st.sampled_from(["type", "count", "element", "length", "drop", "duplicate", "nest"]))
        if (choice in ("type", "count", "element") and key_end + 16 > len(kv)) or (choice == "length" and len(kv) < 8):
            continue  # (a part an earlier lie already broke)
        if choice == "type":
            struct.pack_into("<I", kv, key_end, draw(st.sampled_from([*range(14), 99, 2**32 - 1])))
        elif choice == "count" and struct.unpack_from("<I", kv, key_end)[0] == 9:
            struct.pack_into("<Q", kv, key_end + 8, draw(st.sampled_from(_LIES)))
        elif choice == "element" and struct.unpack_from("<I", kv, key_end)[0] == 9:
            struct.pack_into("<I", kv, key_end + 4, draw(st.sampled_from([*range(14), 99])))
        elif choice == "length":
            struct.pack_into("<Q", kv, 0, draw(st.sampled_from(_LIES)))
        elif choice == "drop":
            kv = bytearray()
        elif choice == "duplicate":
            kv = kv + kv
        elif choice == "nest":
            depth = draw(st.sampled_from([2, 50, 1000, 60_000]))
            kv = bytearray(_kv("general.deep", 9, struct.pack("<IQ", 9, 1) * (depth - 1) + struct.pack("<IQ", 4, 0)))
        kvs[i] = bytes(kv)
    kvs = draw(st.permutations(kvs)) if draw(st.booleans()) else kvs
    version = draw(st.sampled_from([3, 3, 3, 2, 1, 4, 2**32 - 1]))
    count = len(kvs) if draw(st.booleans()) else draw(st.sampled_from(_LIES))
    tensors = draw(st.sampled_from([0, 0, 1, 2**63]))
    data = b"GGUF" + struct.pack("<IQQ", version, tensors, count) + b"".join(kvs)
    if draw(st.booleans()):
        data = data[:draw(st.integers(0, len(data)))]
    return data


_SEEDS = [gguf(base()) for base in BASES]
_INTEGERS = [struct.pack("<Q", n) for n in _LIES] + [struct.pack("<I", n) for n in _LIES if n < 2**32] + [
    b"\xff", b"\x00", b"\x09\x00\x00\x00", b"\x08\x00\x00\x00"]

# ------------------------------------------------------------------ tests


@fuzz_settings(100)
@given(content=gguf_files(), seed=st.integers(0, 2**32 - 1))
def test_structured_gguf_files(worker, content: bytes, seed: int) -> None:
    worker.run((content, seed))


@fuzz_settings(100)
@given(content=mutated(_SEEDS, _INTEGERS, max_mutations=4), seed=st.integers(0, 2**32 - 1))
def test_mutated_gguf_files(worker, content: bytes, seed: int) -> None:
    worker.run((content, seed))


def test_the_bases_read(worker) -> None:
    for content in _SEEDS:
        assert worker.run((content, 0)).startswith("read "), content
