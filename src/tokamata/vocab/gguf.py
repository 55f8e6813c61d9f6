"""GGUF files -> :class:`~tokamata.vocab.vocabulary.Vocabulary` (``Vocabulary.from_gguf``):
the ``tokenizer.ggml.*`` metadata of a model or a vocab-only file, read directly.

The metadata section is parsed here (:func:`read_metadata`), not with ``gguf.GGUFReader``,
which builds a numpy view per array element and needs 10+ s for a 262k-token vocabulary; the
tests check the two agree. Tokens mean what they mean to llama.cpp, by token type: 1 normal,
2 unknown, 3 control, 4 user-defined (literal text), 5 unused, 6 byte (``<0xNN>``).

Invariants:

- Only the metadata key/value section is read (no tensor data), through a read-only ``mmap``;
  versions 2 and 3, either byte order. A truncated or corrupt section raises
  :class:`VocabularyError`, never ``struct.error`` or ``IndexError``.
- A hostile header cannot make the reader allocate or loop past the file: every count and
  length read from it is checked against the bytes left in the file before it is used (each
  array element takes at least one byte, each string its 8-byte length); arrays of arrays are
  walked with an explicit stack, never by recursion, nested at most
  ``Limits.max_nesting_depth`` deep (:class:`LimitExceeded`); and a vocabulary of more than
  ``Limits.max_vocab_size`` tokens is :class:`LimitExceeded`. The values of the tokenizer keys
  must have their GGUF types (a list of strings for the tokens, of integers for the types, an
  integer id), else :class:`VocabularyError`.
- ``tokenizer.ggml.model`` ``"gpt2"`` is byte-level BPE: a normal token is spelled in GPT-2's
  byte-to-unicode alphabet, the same spelling as in the Hugging Face ``tokenizer.json`` it was
  converted from (:func:`tokamata.vocab.huggingface.byte_level_decode`). ``"llama"``,
  ``"gemma4"`` and ``"t5"`` are SentencePiece-style (``▁`` is a space). Any other model is
  refused.
- Normal tokens are text (decoded as above); user-defined tokens are their raw bytes (the
  encoder matches them against raw text); byte tokens are their one byte; unknown, control,
  unused and undefined tokens are ``None``. Control tokens with a UTF-8 name are the
  vocabulary's ``special_token_names``.
- EOS ids are ``tokenizer.ggml.eos_token_id``, ``eot_token_id`` and ``eom_token_id`` (each must
  be a token id) plus every control token named in
  :data:`~tokamata.vocab.vocabulary.WELL_KNOWN_EOS_NAMES`; none at all is an error.
- Nothing here imports the ``gguf`` package or numpy.

Importing this module registers :func:`read_gguf` as the body of ``Vocabulary.from_gguf``.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from collections.abc import Sequence
from typing import Any, TypeGuard

from ..errors import LimitExceeded, VocabularyError
from ..limits import DEFAULT_LIMITS, Limits
from .bpe import merges_from_scores
from .huggingface import BYTE_FALLBACK_TOKEN, byte_level_decode
from .normalize import ReplaceStep
from .pretokenize import (BYTE_TO_CHAR, GGUF_PRE_PATTERNS, LLAMA3_PATTERN, ByteLevelStep,
                          PretokenizerStep, SplitStep, byte_level_spell)
from .tokenizer_model import MODEL_BYTE_LEVEL, MODEL_SENTENCEPIECE, Loaded, TokenizerModel
from .vocabulary import (KIND_BYTE_LEVEL, KIND_SENTENCEPIECE, WELL_KNOWN_EOS_NAMES, Vocabulary,
                         register_reader)

__all__ = ["TOKENIZER_KEYS", "read_gguf", "read_metadata"]

# llama.cpp token types (llama_token_type).
_NORMAL, _UNKNOWN, _CONTROL, _USER, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6

#: The metadata keys the vocabulary is read from.
TOKENIZER_KEYS: frozenset[str] = frozenset({
    "tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
    "tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
    "tokenizer.ggml.add_space_prefix", "tokenizer.ggml.pre", "general.architecture",
})
#: The array keys only counted at construction; the tokenizer model reads them on first use.
COUNTED_KEYS: frozenset[str] = frozenset({"tokenizer.ggml.merges", "tokenizer.ggml.scores"})
# GGUF value types (gguf.GGUFValueType) -> struct format of scalars.
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?",
            10: "Q", 11: "q", 12: "d"}
_VALUE_STRING, _VALUE_ARRAY = 8, 9

_WELL_KNOWN_EOS_BYTES = frozenset(name.encode("utf-8") for name in WELL_KNOWN_EOS_NAMES)


def read_gguf(cls: type[Vocabulary], path: str | os.PathLike[str], *,
              size: int | None = None, limits: Limits | None = None) -> Vocabulary:
    """``cls`` from the tokenizer metadata of a GGUF file: the body of ``Vocabulary.from_gguf``
    (see its docstring)."""
    if limits is None:
        limits = DEFAULT_LIMITS
    elif not isinstance(limits, Limits):
        raise VocabularyError(f"limits must be a tokamata.Limits, got {type(limits).__name__}")
    file = os.fspath(path)
    meta = read_metadata(file, TOKENIZER_KEYS, limits, counted=COUNTED_KEYS)
    label = os.path.basename(file)
    model = meta.get("tokenizer.ggml.model")
    tokens = meta.get("tokenizer.ggml.tokens")
    if model is None or tokens is None:
        raise VocabularyError(f"{file!r} has no tokenizer metadata "
                              "(tokenizer.ggml.model / tokenizer.ggml.tokens)")
    if not isinstance(model, str):
        raise VocabularyError(f"{file!r}: tokenizer.ggml.model is not a string")
    if not isinstance(tokens, list) or not all(type(t) is bytes for t in tokens):
        raise VocabularyError(f"{file!r}: tokenizer.ggml.tokens is not an array of strings")
    if len(tokens) > limits.max_vocab_size:
        raise LimitExceeded("max_vocab_size", len(tokens), limits.max_vocab_size)
    if model == "gpt2":
        kind = KIND_BYTE_LEVEL
        add_prefix_space = False
    elif model in ("llama", "gemma4", "t5"):
        kind = KIND_SENTENCEPIECE
        # llama.cpp's defaults when the key is absent: on for "llama" (SPM), off otherwise.
        add_prefix_space = bool(meta.get("tokenizer.ggml.add_space_prefix", model == "llama"))
    else:
        raise VocabularyError(
            f"{file!r}: tokenizer model {model!r} is not supported (supported: 'gpt2' "
            "byte-level BPE; 'llama', 'gemma4', 't5' SentencePiece-style)")
    n = len(tokens)
    types = meta.get("tokenizer.ggml.token_type")
    if types is None:
        types = [_NORMAL] * n
    elif not isinstance(types, list) or not all(_is_int(t) for t in types):
        raise VocabularyError(f"{file!r}: tokenizer.ggml.token_type is not an array of integers")
    elif len(types) != n:
        raise VocabularyError(f"{file!r}: tokenizer.ggml.token_type has {len(types)} entries "
                              f"for {n} tokens")
    result = _token_bytes(tokens, types, kind, file)
    eos: set[int] = set()
    for key in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                "tokenizer.ggml.eom_token_id"):
        value = meta.get(key)
        if value is None:
            continue
        if not _is_int(value) or not 0 <= value < n:
            raise VocabularyError(f"{file!r}: {key}={value!r} is not a token id in [0, {n})")
        eos.add(value)
    eos.update(i for i, ty in enumerate(types)
               if ty == _CONTROL and tokens[i] in _WELL_KNOWN_EOS_BYTES)
    if not eos:
        raise VocabularyError(f"{file!r}: no EOS token (no tokenizer.ggml.eos_token_id and "
                              "no control token named like one)")
    control: dict[str, list[int]] = {}
    for i, ty in enumerate(types):
        if ty == _CONTROL:
            try:
                control.setdefault(tokens[i].decode("utf-8"), []).append(i)
            except UnicodeDecodeError:
                pass  # a control token without a UTF-8 name cannot be named in a grammar
    user = tuple((tokens[i].decode("utf-8", "replace"), i) for i, ty in enumerate(types)
                 if ty == _USER)
    tokenizer_model = gguf_tokenizer_model(meta, file, label, user, limits)
    return cls(result, sorted(eos), size=size, kind=kind, add_prefix_space=add_prefix_space,
               name=label, special_token_names=control, limits=limits,
               tokenizer_model=tokenizer_model)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def read_metadata(path: str, wanted: frozenset[str], limits: Limits = DEFAULT_LIMITS,
                  counted: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The metadata values of ``wanted`` keys in a GGUF file (versions 2 and 3).

    A direct reader of the key/value section: ``gguf.GGUFReader`` builds a numpy view for every
    array element, which takes 10+ seconds for a 262k-token vocabulary; this takes a fraction
    of a second. Strings come back as ``str`` except the elements of string arrays, which stay
    ``bytes``; numeric arrays are lists of numbers. Arrays of arrays nest at most
    ``limits.max_nesting_depth`` deep. For the array keys in ``counted``, the value is the
    array's length (its elements are skipped).
    """
    try:  # (non-blocking: opening a named pipe would wait for a writer)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise VocabularyError(f"cannot read GGUF file {path!r}: not a regular file")
            try:
                buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:  # empty file
                buf = b""  # type: ignore[assignment]
    except OSError as e:
        raise VocabularyError(f"cannot read GGUF file {path!r}: {e.strerror or e}") from e
    try:
        return _parse_kv(buf, path, wanted, limits.max_nesting_depth, counted)
    except (struct.error, IndexError, OverflowError, UnicodeDecodeError, MemoryError) as e:
        raise VocabularyError(f"{path!r}: truncated or corrupt GGUF metadata ({e})") from e
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()


def _parse_kv(buf: Any, path: str, wanted: frozenset[str], max_depth: int,
              counted: frozenset[str] = frozenset()) -> dict[str, Any]:
    if len(buf) < 24 or buf[:4] != b"GGUF":
        raise VocabularyError(f"{path!r} is not a GGUF file (bad magic {bytes(buf[:4])!r})")
    order = "<"
    (version,) = struct.unpack_from("<I", buf, 4)
    if version & 0xFFFF == 0:  # written on a big-endian machine
        order = ">"
        (version,) = struct.unpack_from(">I", buf, 4)
    if version not in (2, 3):
        raise VocabularyError(f"{path!r}: GGUF version {version} is not supported (2 and 3 are)")
    _tensor_count, kv_count = struct.unpack_from(order + "QQ", buf, 8)
    u64 = struct.Struct(order + "Q").unpack_from
    u32 = struct.Struct(order + "I").unpack_from
    size = len(buf)
    offset = 24

    def fits(count: int, width: int, offset: int, what: str) -> None:
        """``count`` items of at least ``width`` bytes each fit in the rest of the file."""
        if count * width > size - offset:
            raise IndexError(f"{what} of {count} items runs past the end of the file")

    def read_string(offset: int) -> tuple[bytes, int]:
        (length,) = u64(buf, offset)
        end = offset + 8 + length
        if end > size:
            raise IndexError("string runs past the end of the file")
        return bytes(buf[offset + 8:end]), end

    def read_flat_array(etype: int, count: int, offset: int, keep: bool) -> tuple[list, int]:
        """An array of strings or scalars (``count`` already read) at ``offset``."""
        if etype == _VALUE_STRING:
            fits(count, 8, offset, "string array")
            items: list[bytes] = []
            append = items.append
            for _ in range(count):
                (length,) = u64(buf, offset)
                end = offset + 8 + length
                if end > size:
                    raise IndexError("string array runs past the end of the file")
                if keep:
                    append(buf[offset + 8:end])
                offset = end
            return items, offset
        fmt = _SCALARS.get(etype)
        if fmt is None:
            raise VocabularyError(f"{path!r}: unknown GGUF array element type {etype}")
        width = struct.calcsize(fmt)
        fits(count, width, offset, "array")
        end = offset + width * count
        values = list(struct.unpack_from(f"{order}{count}{fmt}", buf, offset)) if keep else []
        return values, end

    def read_array(offset: int, keep: bool) -> tuple[list, int]:
        """The array at ``offset`` (its element type, count, elements), arrays of arrays
        walked with an explicit stack: a hostile file nests them tens of thousands deep."""
        root: list[Any] = []
        # (the list being filled, how many of its arrays are still to read)
        stack: list[tuple[list[Any], int]] = [(root, 1)]
        while stack:
            parent, remaining = stack[-1]
            if remaining == 0:
                stack.pop()
                continue
            stack[-1] = (parent, remaining - 1)
            (etype,) = u32(buf, offset)
            (count,) = u64(buf, offset + 4)
            offset += 12
            if etype == _VALUE_ARRAY:
                fits(count, 12, offset, "array of arrays")  # each element has its own header
                if len(stack) >= max_depth:
                    raise LimitExceeded("max_nesting_depth", len(stack) + 1, max_depth)
                values: list[Any] = []
                if keep:
                    parent.append(values)
                stack.append((values, count))
            else:
                value, offset = read_flat_array(etype, count, offset, keep)
                if keep:
                    parent.append(value)
        return (root[0] if keep else []), offset

    def read_value(vtype: int, offset: int, keep: bool) -> tuple[Any, int]:
        fmt = _SCALARS.get(vtype)
        if fmt is not None:
            return struct.unpack_from(order + fmt, buf, offset)[0], offset + struct.calcsize(fmt)
        if vtype == _VALUE_STRING:
            raw, offset = read_string(offset)
            return raw.decode("utf-8"), offset
        if vtype == _VALUE_ARRAY:
            return read_array(offset, keep)
        raise VocabularyError(f"{path!r}: unknown GGUF value type {vtype}")

    # each key/value takes at least 13 bytes (the key's length, the type, a one-byte value)
    fits(kv_count, 13, offset, "metadata")
    found: dict[str, Any] = {}
    for _ in range(kv_count):
        raw_key, offset = read_string(offset)
        key = raw_key.decode("utf-8")
        (vtype,) = u32(buf, offset)
        offset += 4
        keep = key in wanted
        if key in counted and vtype == _VALUE_ARRAY:
            found[key] = u64(buf, offset + 4)[0]
        value, offset = read_value(vtype, offset, keep)
        if keep:
            found[key] = value
        if (keep or key in counted) and len(found) == len(wanted) + len(counted):
            break
    return found


def _token_bytes(tokens: list[bytes], types: Sequence[int], kind: str,
                 source: str) -> list[bytes | None]:
    out: list[bytes | None] = [None] * len(tokens)
    space = "\u2581".encode("utf-8")
    byte_level = kind == KIND_BYTE_LEVEL
    for i, (raw, ty) in enumerate(zip(tokens, types)):
        if ty == _NORMAL:
            if byte_level:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise VocabularyError(f"{source!r}: token {i} is not UTF-8: {raw!r}") from e
                out[i] = byte_level_decode(text)  # None: never emitted, see vocabulary.py
            else:
                out[i] = raw.replace(space, b" ")
        elif ty == _USER:
            out[i] = raw  # literal text, matched against raw text by the encoder
        elif ty == _BYTE:
            m = BYTE_FALLBACK_TOKEN.match(raw.decode("utf-8", "replace"))
            if m is None:
                raise VocabularyError(f"{source!r}: token {i} has the byte type but reads {raw!r}, "
                                      "not <0xNN>")
            out[i] = bytes([int(m.group(1), 16)])
        # unknown, control, unused, undefined: never text
    return out


# ------------------------------------------------------------------------ tokenizer model

#: architectures whose SentencePiece merges transformers orders by token position, not score
_POSITION_ORDERED = frozenset({"gemma", "gemma2", "gemma3"})
_BYTE_ALPHABET = frozenset(BYTE_TO_CHAR.values())


def gguf_tokenizer_model(meta: dict[str, Any], file: str, label: str,
                         user_tokens: tuple[tuple[str, int], ...],
                         limits: Limits) -> TokenizerModel:
    """The :class:`TokenizerModel` of a GGUF file, from its metadata (``meta``, with the merge
    and score arrays only counted); tokens, merges and scores are read again from ``file`` on
    first use.

    - ``gpt2``: byte-level BPE, split by the pattern of ``tokenizer.ggml.pre``
      (:data:`~tokamata.vocab.pretokenize.GGUF_PRE_PATTERNS`; an unknown or absent name is
      unsupported), merges from ``tokenizer.ggml.merges``; ``ignore_merges`` for the Llama 3
      family, as llama.cpp does.
    - ``llama`` / ``gemma4``: SentencePiece-style BPE with byte fallback; spaces become ``▁``.
      Merges from ``tokenizer.ggml.merges``, else derived from ``tokenizer.ggml.scores``
      (:func:`~tokamata.vocab.bpe.merges_from_scores`), as transformers' converter does: for
      the Gemma architectures the order of the tokens in the file is the score (higher id,
      lower score) and tokens of spaces only are spelled with ``▁``.
    - ``t5`` (Unigram) and anything else: unsupported.

    User-defined tokens (type 4) are added tokens, matched in raw text.
    """
    model = meta.get("tokenizer.ggml.model")
    arch = meta.get("general.architecture")
    pre = meta.get("tokenizer.ggml.pre")
    n_merges = meta.get("tokenizer.ggml.merges") or 0
    n_scores = meta.get("tokenizer.ggml.scores") or 0
    if not isinstance(n_merges, int) or n_merges > limits.max_merges:
        raise LimitExceeded("max_merges", int(n_merges), limits.max_merges)
    problems: list[tuple[str, str]] = []
    pretokenizer: tuple[PretokenizerStep, ...] = ()
    normalizer: tuple[ReplaceStep, ...] = ()
    ignore_merges = False
    respell = False
    if model == "gpt2":
        kind = MODEL_BYTE_LEVEL
        pattern = GGUF_PRE_PATTERNS.get(pre) if isinstance(pre, str) else None
        if pattern is None:
            problems.append(("tokenizer.ggml.pre", f"{pre!r}: no known split pattern (known: "
                             f"{', '.join(sorted(GGUF_PRE_PATTERNS))})"))
            pretokenizer = (ByteLevelStep(False),)
        else:
            pretokenizer = (SplitStep(pattern, True), ByteLevelStep(False))
            ignore_merges = pattern == LLAMA3_PATTERN
        if not n_merges:
            problems.append(("tokenizer.ggml.merges", "a byte-level GGUF without merges"))
    elif model in ("llama", "gemma4"):
        kind = MODEL_SENTENCEPIECE
        normalizer = (ReplaceStep(" ", "\u2581"),)
        respell = not n_merges and arch in _POSITION_ORDERED
        if not n_merges and not n_scores:
            problems.append(("tokenizer.ggml.scores", "neither merges nor scores to merge by"))
    else:
        kind = MODEL_SENTENCEPIECE
        problems.append((f"tokenizer.ggml.model {model}",
                         "only BPE models have a reproducible canonical encoding here"))

    def spelled(token: bytes) -> str:
        text = token.decode("utf-8", "replace")
        if kind == MODEL_BYTE_LEVEL and not set(text) <= _BYTE_ALPHABET:
            return byte_level_spell(token)
        if respell and " " in text and not text.strip():
            return "\u2581" * len(text)
        return text

    def load() -> Loaded:
        keys = frozenset({"tokenizer.ggml.tokens", "tokenizer.ggml.merges",
                          "tokenizer.ggml.scores"})
        data = read_metadata(file, keys, limits)
        pieces = [spelled(t) for t in data.get("tokenizer.ggml.tokens") or ()]
        ids = {p: i for i, p in enumerate(pieces)}
        listed = data.get("tokenizer.ggml.merges")
        if listed:
            merges = []
            for rank, m in enumerate(listed):
                parts = m.decode("utf-8", "replace").split(" ")
                if len(parts) != 2:
                    raise VocabularyError(f"{file!r}: merge {rank} {m!r:.60} is not two pieces")
                merges.append((parts[0], parts[1]))
            return ids, merges
        scores = data.get("tokenizer.ggml.scores") or ()
        if respell:
            scores = [-i for i in range(len(pieces))]
        if len(scores) != len(pieces):
            raise VocabularyError(f"{file!r}: {len(scores)} scores for {len(pieces)} tokens")
        return ids, merges_from_scores(pieces, scores, limits.max_merges)

    added = tuple((spelled(text.encode("utf-8")), i) for text, i in user_tokens)
    return TokenizerModel(
        "BPE" if not problems or model in ("gpt2", "llama", "gemma4") else str(model), kind,
        normalizer, pretokenizer, byte_fallback=kind == MODEL_SENTENCEPIECE,
        ignore_merges=ignore_merges, added_tokens=added, unsupported=tuple(problems),
        merge_count=n_merges if n_merges else -1, source=label, load=load)


register_reader("gguf", read_gguf)
