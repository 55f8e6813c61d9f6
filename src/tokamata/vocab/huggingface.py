"""Hugging Face tokenizers -> :class:`~tokamata.vocab.vocabulary.Vocabulary`: a
``tokenizer.json`` file (``Vocabulary.from_tokenizer_json``) or a transformers fast tokenizer,
which holds the same JSON (``Vocabulary.from_hf``).

How a token's string becomes its bytes:

- Byte-level BPE (GPT-2, Llama 3, Qwen2: the decoder or pre-tokenizer is ``ByteLevel``) maps each
  character of a token back through GPT-2's bytes-to-unicode table (:func:`byte_level_decode`).
- SentencePiece-style vocabularies (Llama 2, Gemma, Mistral: a ``Metaspace`` decoder or
  ``Replace("▁", " ")``) turn ``▁`` into a space and, with ``ByteFallback``, ``<0xNN>``
  (:data:`BYTE_FALLBACK_TOKEN`) into the raw byte ``0xNN``.
- Added tokens marked ``special`` are control tokens (``None``, named in
  ``special_token_names``); other added tokens contribute their content as literal UTF-8 text
  (they are matched against raw text by the encoder, so they are *not* byte-mapped).

Invariants:

- A decoder step this module does not understand is refused (:class:`VocabularyError`), never
  ignored; WordPiece (BERT) is refused because its ``##`` pieces do not map to bytes one token
  at a time. Sequence-level steps (``Fuse``, ``Strip``) change no token's bytes and are skipped.
- A byte-level entry with a character outside GPT-2's alphabet is ``None`` (the encoder can
  never produce it; see :mod:`tokamata.vocab.vocabulary`).
- EOS ids, unless given, are the ids ``tokenizer_config.json`` (``eos_token``) and
  ``generation_config.json`` (``eos_token_id``) next to the file, or the transformers
  tokenizer's ``eos_token_id``, plus every special added token whose text is in
  :data:`~tokamata.vocab.vocabulary.WELL_KNOWN_EOS_NAMES`; none at all is an error, as is a
  named EOS that is not a token.
- Nothing here imports ``tokenizers`` or ``transformers``: a transformers tokenizer is read
  through the object passed in.

Importing this module registers :func:`read_tokenizer_json` and :func:`read_transformers` as
the bodies of ``Vocabulary.from_tokenizer_json`` and ``Vocabulary.from_hf``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import VocabularyError
from .vocabulary import (KIND_BYTE_LEVEL, KIND_SENTENCEPIECE, WELL_KNOWN_EOS_NAMES, Vocabulary,
                         register_reader)

__all__ = ["BYTE_FALLBACK_TOKEN", "byte_level_decode", "read_tokenizer_json", "read_transformers"]

#: A SentencePiece byte-fallback token, ``<0xNN>``; group 1 is the byte in hex.
BYTE_FALLBACK_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>\Z")


def read_tokenizer_json(
    cls: type[Vocabulary],
    path: str | os.PathLike[str],
    *,
    eos_token_ids: Iterable[int] | None = None,
    size: int | None = None,
) -> Vocabulary:
    """``cls`` from a ``tokenizer.json`` (or a folder holding one): the body of
    ``Vocabulary.from_tokenizer_json`` (see its docstring)."""
    file = os.fspath(path)
    if os.path.isdir(file):
        file = os.path.join(file, "tokenizer.json")
    try:
        with open(file, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise VocabularyError(f"cannot read tokenizer file {file!r}: {e.strerror or e}") from e
    data = _parse_json(raw, file)
    named: list[int] | None = None
    if eos_token_ids is None:
        named = _eos_from_config_files(os.path.dirname(os.path.abspath(file)), data, file)
    label = os.path.join(os.path.basename(os.path.dirname(os.path.abspath(file))),
                         os.path.basename(file))
    return _from_tokenizer_data(cls, data, file, label, eos_token_ids, named, size)


def read_transformers(cls: type[Vocabulary], tokenizer: Any, *,
                      size: int | None = None) -> Vocabulary:
    """``cls`` from a transformers fast tokenizer: the body of ``Vocabulary.from_hf`` (see its
    docstring)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not hasattr(backend, "to_str"):
        raise VocabularyError(
            f"{type(tokenizer).__name__} has no backend_tokenizer: only fast (Rust-backed) "
            "transformers tokenizers are supported; load it with use_fast=True")
    name = str(getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__)
    data = _parse_json(backend.to_str().encode("utf-8"), name)
    named = []
    eos = getattr(tokenizer, "eos_token_id", None)
    if isinstance(eos, int):
        named.append(eos)
    elif isinstance(eos, (list, tuple)):
        named.extend(e for e in eos if isinstance(e, int))
    return _from_tokenizer_data(cls, data, name, name, None, named, size)


# ------------------------------------------------------------------------ byte-level BPE


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from bytes to printable characters."""
    keep = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
            + list(range(ord("®"), ord("ÿ") + 1)))
    mapping = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


_UNICODE_TO_BYTE: dict[str, int] = {c: b for b, c in _bytes_to_unicode().items()}
# str.translate table: mapped characters -> the latin-1 character of their byte; characters
# below 256 that are *not* in the alphabet -> U+FFFF so that encoding to latin-1 fails on them.
_BYTE_LEVEL_TABLE: dict[int, int] = {ord(c): b for c, b in _UNICODE_TO_BYTE.items()}
_BYTE_LEVEL_TABLE.update({c: 0xFFFF for c in range(256) if chr(c) not in _UNICODE_TO_BYTE})


def byte_level_decode(token: str) -> bytes | None:
    """Bytes of a byte-level BPE token; None if a character is outside GPT-2's alphabet."""
    try:
        return token.translate(_BYTE_LEVEL_TABLE).encode("latin-1")
    except UnicodeEncodeError:
        return None


# ------------------------------------------------------------------------ tokenizer.json


def _parse_json(raw: bytes, source: str) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise VocabularyError(f"{source!r} is not valid JSON: {e}") from e
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise VocabularyError(f"{source!r} is not a Hugging Face tokenizer.json "
                              "(no 'model' object)")
    return data


def _flatten(component: Any, list_key: str) -> list[dict[str, Any]]:
    """The steps of a decoder / normalizer / pre-tokenizer, with Sequences flattened."""
    if component is None:
        return []
    if not isinstance(component, dict):
        return [{"type": repr(component)}]
    if component.get("type") == "Sequence":
        out: list[dict[str, Any]] = []
        for step in component.get(list_key) or []:
            out.extend(_flatten(step, list_key))
        return out
    return [component]


def _pattern_string(step: Mapping[str, Any]) -> str | None:
    pattern = step.get("pattern")
    if isinstance(pattern, dict) and isinstance(pattern.get("String"), str):
        return pattern["String"]
    return None


def _analyze_tokenizer_json(data: Mapping[str, Any], source: str) -> tuple[str, str, bool, bool]:
    """(kind, space marker, byte fallback, add_prefix_space) of a tokenizer.json."""
    model = data["model"]
    model_type = model.get("type")
    if model_type == "WordPiece":
        raise VocabularyError(f"{source!r}: WordPiece tokenizers (BERT) are not supported: their "
                              "'##' pieces do not map to bytes one token at a time")
    if model_type not in ("BPE", "Unigram", "WordLevel"):
        raise VocabularyError(f"{source!r}: unknown tokenizer model type {model_type!r}")
    decoder_steps = _flatten(data.get("decoder"), "decoders")
    pre_steps = _flatten(data.get("pre_tokenizer"), "pretokenizers")
    normalizer_steps = _flatten(data.get("normalizer"), "normalizers")

    kind: str | None = None
    marker = "\u2581"
    byte_fallback = bool(model.get("byte_fallback"))
    for step in decoder_steps:
        t = step.get("type")
        if t == "ByteLevel":
            kind = KIND_BYTE_LEVEL
        elif t == "Metaspace":
            kind = KIND_SENTENCEPIECE
            marker = step.get("replacement") or marker
        elif t == "Replace" and step.get("content") == " " and _pattern_string(step):
            kind = KIND_SENTENCEPIECE
            marker = _pattern_string(step) or marker
        elif t == "ByteFallback":
            byte_fallback = True
        elif t in ("Fuse", "Strip"):
            pass  # sequence-level: joins pieces / strips the text's leading space
        else:
            raise VocabularyError(f"{source!r}: decoder step {t!r} ({json.dumps(step)[:120]}) is "
                                  "not supported: cannot map its tokens to bytes one at a time")
    if kind is None:  # no decoder: infer from the pre-tokenizer
        for step in pre_steps:
            if step.get("type") == "ByteLevel":
                kind = KIND_BYTE_LEVEL
            elif step.get("type") == "Metaspace":
                kind = KIND_SENTENCEPIECE
                marker = step.get("replacement") or marker
    if kind is None:
        raise VocabularyError(
            f"{source!r}: cannot tell how tokens map to bytes (decoder "
            f"{[s.get('type') for s in decoder_steps]}, pre-tokenizer "
            f"{[s.get('type') for s in pre_steps]}): expected a ByteLevel decoder (GPT-2 style) "
            "or a Metaspace / Replace('▁', ' ') decoder (SentencePiece style)")

    add_prefix_space = False
    for step in pre_steps:
        t = step.get("type")
        if t == "ByteLevel" and step.get("add_prefix_space"):
            add_prefix_space = True
        elif t == "Metaspace":
            scheme = step.get("prepend_scheme")
            if scheme is None:
                add_prefix_space = add_prefix_space or bool(step.get("add_prefix_space", True))
            elif scheme in ("always", "first"):
                add_prefix_space = True
    for step in normalizer_steps:
        if step.get("type") == "Prepend" and step.get("prepend") == marker:
            add_prefix_space = True
    return kind, marker, byte_fallback, add_prefix_space


def _from_tokenizer_data(
    cls: type[Vocabulary],
    data: Mapping[str, Any],
    source: str,
    label: str,
    eos_token_ids: Iterable[int] | None,
    named_eos: list[int] | None,
    size: int | None,
) -> Vocabulary:
    kind, marker, byte_fallback, add_prefix_space = _analyze_tokenizer_json(data, source)
    model = data["model"]
    vocab = model.get("vocab")
    pieces: dict[int, str] = {}
    if isinstance(vocab, dict):
        for piece, i in vocab.items():
            if not isinstance(i, int) or i < 0:
                raise VocabularyError(f"{source!r}: token {piece!r} has id {i!r}")
            pieces[i] = piece
    elif isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        for i, entry in enumerate(vocab):
            piece = entry[0] if isinstance(entry, (list, tuple)) and entry else entry
            if not isinstance(piece, str):
                raise VocabularyError(f"{source!r}: vocab entry {i} is {entry!r}")
            pieces[i] = piece
    else:
        raise VocabularyError(f"{source!r}: model.vocab is missing or not a dict / list")

    added: dict[int, tuple[str, bool]] = {}
    for entry in data.get("added_tokens") or []:
        try:
            added[int(entry["id"])] = (str(entry["content"]), bool(entry.get("special")))
        except (KeyError, TypeError, ValueError) as e:
            raise VocabularyError(f"{source!r}: malformed added token {entry!r}") from e

    n = max(max(pieces, default=-1), max(added, default=-1)) + 1
    tokens: list[bytes | None] = [None] * n
    if kind == KIND_BYTE_LEVEL:
        for i, piece in pieces.items():
            tokens[i] = byte_level_decode(piece)  # None: never emitted, see vocabulary.py
    else:
        space = marker.encode("utf-8")
        for i, piece in pieces.items():
            if byte_fallback and len(piece) == 6 and (m := BYTE_FALLBACK_TOKEN.match(piece)):
                tokens[i] = bytes([int(m.group(1), 16)])
            else:
                tokens[i] = piece.encode("utf-8").replace(space, b" ")
    unk = model.get("unk_token")
    if isinstance(unk, str) and isinstance(vocab, dict) and unk in vocab:
        tokens[vocab[unk]] = None
    unk_id = model.get("unk_id")
    if isinstance(unk_id, int) and 0 <= unk_id < n:
        tokens[unk_id] = None
    special_by_text: dict[str, int] = {}
    special_names: dict[str, list[int]] = {}
    for i, (content, special) in added.items():
        if special:
            tokens[i] = None
            special_by_text.setdefault(content, i)
            special_names.setdefault(content, []).append(i)
        else:
            tokens[i] = content.encode("utf-8")

    if eos_token_ids is None:
        eos = set(named_eos or [])
        eos.update(i for text, i in special_by_text.items() if text in WELL_KNOWN_EOS_NAMES)
        bad = sorted(e for e in eos if not 0 <= e < n)
        if bad:
            raise VocabularyError(f"{source!r}: EOS id(s) {bad} are not token ids in [0, {n})")
        if not eos:
            raise VocabularyError(
                f"{source!r}: cannot infer the EOS token: no tokenizer_config.json eos_token and "
                f"no special token named {sorted(WELL_KNOWN_EOS_NAMES)}; pass eos_token_ids=")
        eos_token_ids = sorted(eos)
    return cls(tokens, eos_token_ids, size=size, kind=kind, add_prefix_space=add_prefix_space,
               name=label, special_token_names=special_names)


def _token_id_by_text(data: Mapping[str, Any], text: str) -> int | None:
    for entry in data.get("added_tokens") or []:
        if isinstance(entry, dict) and entry.get("content") == text:
            return int(entry["id"])
    vocab = data["model"].get("vocab")
    if isinstance(vocab, dict):
        i = vocab.get(text)
        return i if isinstance(i, int) else None
    if isinstance(vocab, list):
        for i, entry in enumerate(vocab):
            if isinstance(entry, (list, tuple)) and entry and entry[0] == text:
                return i
    return None


def _eos_from_config_files(directory: str, data: Mapping[str, Any], source: str) -> list[int]:
    """EOS ids named by tokenizer_config.json / generation_config.json in ``directory``."""
    found: list[int] = []
    config = _read_optional_json(os.path.join(directory, "tokenizer_config.json"))
    if config is not None:
        eos = config.get("eos_token")
        if isinstance(eos, dict):
            eos = eos.get("content")
        if isinstance(eos, str):
            i = _token_id_by_text(data, eos)
            if i is None:
                raise VocabularyError(f"tokenizer_config.json next to {source!r} names eos_token "
                                      f"{eos!r}, which is not a token of the tokenizer")
            found.append(i)
    generation = _read_optional_json(os.path.join(directory, "generation_config.json"))
    if generation is not None:
        ids = generation.get("eos_token_id")
        if isinstance(ids, int):
            found.append(ids)
        elif isinstance(ids, list):
            found.extend(i for i in ids if isinstance(i, int))
    return found


def _read_optional_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise VocabularyError(f"cannot read {path!r}: {e.strerror or e}") from e
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise VocabularyError(f"{path!r} is not valid JSON: {e}") from e
    return value if isinstance(value, dict) else None


register_reader("tokenizer_json", read_tokenizer_json)
register_reader("hf", read_transformers)
