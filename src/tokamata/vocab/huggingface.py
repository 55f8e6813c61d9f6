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
- Hostile files are refused, never half-read: a file is read up to ``Limits.max_file_bytes``
  bytes (one more and :class:`LimitExceeded`), JSON nested deeper than Python's JSON parser
  reaches is :class:`LimitExceeded` (``max_nesting_depth``) and nothing here recurses into a
  parsed value (decoder Sequences are flattened with a stack), ids are ints (not bools, not
  floats) in ``[0, Limits.max_vocab_size)``, checked before anything of their size is allocated,
  and every part of the file this module reads has its expected JSON type, else
  :class:`VocabularyError` naming the part.

Importing this module registers :func:`read_tokenizer_json` and :func:`read_transformers` as
the bodies of ``Vocabulary.from_tokenizer_json`` and ``Vocabulary.from_hf``.
"""

from __future__ import annotations

import json
import operator
import os
import re
import stat
import sys
from collections.abc import Iterable, Mapping
from itertools import accumulate, count
from typing import Any, TypeGuard

from ..errors import LimitExceeded, VocabularyError
from ..limits import DEFAULT_LIMITS, Limits
from .pretokenize import CHAR_TO_BYTE
from .tokenizer_model import MODEL_BYTE_LEVEL, MODEL_SENTENCEPIECE, model_from_tokenizer_json
from .vocabulary import (KIND_BYTE_LEVEL, KIND_SENTENCEPIECE, WELL_KNOWN_EOS_NAMES, Vocabulary,
                         register_reader)

__all__ = ["BYTE_FALLBACK_TOKEN", "byte_level_decode", "check_json_depth", "read_tokenizer_json",
           "read_transformers"]

#: A SentencePiece byte-fallback token, ``<0xNN>``; group 1 is the byte in hex.
BYTE_FALLBACK_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>\Z")


def read_tokenizer_json(
    cls: type[Vocabulary],
    path: str | os.PathLike[str],
    *,
    eos_token_ids: Iterable[int] | None = None,
    size: int | None = None,
    limits: Limits | None = None,
) -> Vocabulary:
    """``cls`` from a ``tokenizer.json`` (or a folder holding one): the body of
    ``Vocabulary.from_tokenizer_json`` (see its docstring)."""
    limits = _limits(limits)
    file = os.fspath(path)
    if os.path.isdir(file):
        file = os.path.join(file, "tokenizer.json")
    raw = _read_file(file, limits)
    if raw is None:
        raise VocabularyError(f"cannot read tokenizer file {file!r}: no such file")
    data = _parse_json(raw, file, limits)
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise VocabularyError(f"{file!r} is not a Hugging Face tokenizer.json "
                              "(no 'model' object)")
    named: list[int] | None = None
    if eos_token_ids is None:
        named = _eos_from_config_files(os.path.dirname(os.path.abspath(file)), data, file, limits)
    label = os.path.join(os.path.basename(os.path.dirname(os.path.abspath(file))),
                         os.path.basename(file))
    return _from_tokenizer_data(cls, data, file, label, eos_token_ids, named, size, limits)


def read_transformers(cls: type[Vocabulary], tokenizer: Any, *,
                      size: int | None = None, limits: Limits | None = None) -> Vocabulary:
    """``cls`` from a transformers fast tokenizer: the body of ``Vocabulary.from_hf`` (see its
    docstring)."""
    limits = _limits(limits)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not hasattr(backend, "to_str"):
        raise VocabularyError(
            f"{type(tokenizer).__name__} has no backend_tokenizer: only fast (Rust-backed) "
            "transformers tokenizers are supported; load it with use_fast=True")
    name = str(getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__)
    data = _parse_json(backend.to_str().encode("utf-8"), name, limits)
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise VocabularyError(f"{name!r} is not a Hugging Face tokenizer.json (no 'model' object)")
    named = []
    eos = getattr(tokenizer, "eos_token_id", None)
    if _is_int(eos):
        named.append(eos)
    elif isinstance(eos, (list, tuple)):
        named.extend(e for e in eos if _is_int(e))
    return _from_tokenizer_data(cls, data, name, name, None, named, size, limits)


def _limits(limits: Limits | None) -> Limits:
    if limits is None:
        return DEFAULT_LIMITS
    if not isinstance(limits, Limits):
        raise VocabularyError(f"limits must be a tokamata.Limits, got {type(limits).__name__}")
    return limits


def _is_int(value: object) -> TypeGuard[int]:
    """A JSON integer: an ``int`` that is not a ``bool`` (``2.7`` and ``true`` are not ids)."""
    return isinstance(value, int) and not isinstance(value, bool)


# ------------------------------------------------------------------------ byte-level BPE


_UNICODE_TO_BYTE: Mapping[str, int] = CHAR_TO_BYTE
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


def _read_file(file: str, limits: Limits) -> bytes | None:
    """The bytes of ``file`` (``None`` if it does not exist), reading at most
    ``limits.max_file_bytes + 1`` bytes: one more than the bound raises :class:`LimitExceeded`
    (``/dev/zero`` has no size to check first). A named pipe or socket is refused, not waited
    on (opening one blocks until another process writes to it)."""
    bound = limits.max_file_bytes
    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as e:
        raise VocabularyError(f"cannot read {file!r}: {e.strerror or e}") from e
    try:
        with os.fdopen(fd, "rb") as f:
            status = os.fstat(fd)
            if stat.S_ISFIFO(status.st_mode) or stat.S_ISSOCK(status.st_mode):
                raise VocabularyError(f"cannot read {file!r}: a pipe or socket, not a file")
            if status.st_size > bound:
                raise LimitExceeded("max_file_bytes", status.st_size, bound)
            os.set_blocking(fd, True)
            raw = f.read(bound + 1)
    except OSError as e:
        raise VocabularyError(f"cannot read {file!r}: {e.strerror or e}") from e
    if len(raw) > bound:
        raise LimitExceeded("max_file_bytes", len(raw), bound)
    return raw


# What the nesting check keeps of a JSON text: quotes and brackets; strings, once escapes are
# gone, are a quote, anything but a quote, a quote; and brackets as +1 (opening) and -1
# (closing), stored as 2 and 0 so that a byte's value minus one is its step.
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
_QUOTED = re.compile(rb'"[^"]*"')
_STEPS = bytes.maketrans(b"[]{}", b"\x02\x00\x02\x00")

#: the recursion limit up to which Python's JSON parser is trusted to stop deep nesting itself
#: (with a ``RecursionError``, before the C stack runs out); above it, ``_parse_json`` checks
#: the nesting first
PARSER_SAFE_RECURSION_LIMIT = 5_000


def check_json_depth(raw: bytes, bound: int) -> None:
    r"""Raise :class:`LimitExceeded` (``max_nesting_depth``) if the JSON text ``raw`` nests
    arrays and objects more than ``bound`` deep (``value`` is ``bound + 1``: the check stops
    there); a malformed text is left to the parser. No recursion and no Python code per byte:
    counts, replaces, one regex over quotes and brackets and a running sum, all linear in
    ``len(raw)``.

    >>> check_json_depth(b'{"a": [1, "]]"], "b": {}}', 2)
    >>> check_json_depth(b'[[["[[[", "\\\\"], "\\"[["]]', 2)  # strings "[[[", "\\", "\"[["
    Traceback (most recent call last):
    tokamata.errors.LimitExceeded: limit max_nesting_depth exceeded: reached 3, the bound is 2 ...
    """
    if raw.count(b"[") + raw.count(b"{") <= bound:  # few brackets at all
        return
    # an escaped backslash, then an escaped quote, is no string boundary (pairs from the left,
    # as JSON reads them); other escapes do not matter here
    text = raw.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    steps = _QUOTED.sub(b"", text).translate(_STEPS, b'"')
    depths = map(operator.sub, accumulate(steps), count(1))
    if any(map(bound.__lt__, depths)):  # (stops at the first depth past the bound)
        raise LimitExceeded("max_nesting_depth", bound + 1, bound)


def _parse_json(raw: bytes, source: str, limits: Limits) -> Any:
    """The JSON value of ``raw``. Nesting is bounded by the parser: Python's JSON parser
    raises ``RecursionError`` past the interpreter's recursion limit, which becomes
    :class:`LimitExceeded` (``max_nesting_depth``) when ``raw`` nests deeper than
    ``limits.max_nesting_depth``, else :class:`VocabularyError`. Nesting within the parser's
    reach is harmless: nothing here recurses into the value. Under a recursion limit too high
    to trust the parser's own stop, the nesting is checked first."""
    bound = limits.max_nesting_depth
    if sys.getrecursionlimit() > PARSER_SAFE_RECURSION_LIMIT:
        check_json_depth(raw, bound)
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise VocabularyError(f"{source!r} is not valid JSON: {e}") from e
    except RecursionError:
        pass  # (outside the handler: the traceback of a RecursionError is long)
    check_json_depth(raw, bound)
    raise VocabularyError(f"{source!r} is nested too deeply for Python's JSON parser (raise "
                          "sys.getrecursionlimit())")


def _flatten(component: Any, list_key: str, where: str, source: str) -> list[dict[str, Any]]:
    """The steps of a decoder / normalizer / pre-tokenizer (``where`` names it), with
    Sequences flattened; a step that is not an object, or a Sequence whose ``list_key`` is not
    a list, is a :class:`VocabularyError`. Iterative: nesting is bounded by the parse."""
    out: list[dict[str, Any]] = []
    pending: list[Any] = [component]  # in reverse order
    while pending:
        step = pending.pop()
        if step is None:
            continue
        if not isinstance(step, dict):
            raise VocabularyError(f"{source!r}: a {where} step is {_show(step)}, not an object")
        if step.get("type") == "Sequence":
            steps = step.get(list_key)
            if not isinstance(steps, list):
                raise VocabularyError(f"{source!r}: {where} Sequence has {list_key!r} "
                                      f"{_show(steps)}, not a list")
            pending.extend(reversed(steps))
        else:
            out.append(step)
    return out


def _show(value: Any) -> str:
    """``value`` for a message, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _marker(step: Mapping[str, Any], default: str, source: str) -> str:
    """The space marker a Metaspace step names (``replacement``), else ``default``."""
    replacement = step.get("replacement")
    if replacement is None or replacement == "":
        return default
    if not isinstance(replacement, str):
        raise VocabularyError(f"{source!r}: Metaspace replacement is {_show(replacement)}, "
                              "not a string")
    return replacement


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
    decoder_steps = _flatten(data.get("decoder"), "decoders", "decoder", source)
    pre_steps = _flatten(data.get("pre_tokenizer"), "pretokenizers", "pre_tokenizer", source)
    normalizer_steps = _flatten(data.get("normalizer"), "normalizers", "normalizer", source)

    kind: str | None = None
    marker = "\u2581"
    byte_fallback = bool(model.get("byte_fallback"))
    for step in decoder_steps:
        t = step.get("type")
        if t == "ByteLevel":
            kind = KIND_BYTE_LEVEL
        elif t == "Metaspace":
            kind = KIND_SENTENCEPIECE
            marker = _marker(step, marker, source)
        elif t == "Replace" and step.get("content") == " " and _pattern_string(step):
            kind = KIND_SENTENCEPIECE
            marker = _pattern_string(step) or marker
        elif t == "ByteFallback":
            byte_fallback = True
        elif t in ("Fuse", "Strip"):
            pass  # sequence-level: joins pieces / strips the text's leading space
        else:
            raise VocabularyError(f"{source!r}: decoder step {_show(t)} ({json.dumps(step)[:120]}) is "
                                  "not supported: cannot map its tokens to bytes one at a time")
    if kind is None:  # no decoder: infer from the pre-tokenizer
        for step in pre_steps:
            if step.get("type") == "ByteLevel":
                kind = KIND_BYTE_LEVEL
            elif step.get("type") == "Metaspace":
                kind = KIND_SENTENCEPIECE
                marker = _marker(step, marker, source)
    if kind is None:
        raise VocabularyError(
            f"{source!r}: cannot tell how tokens map to bytes (decoder "
            f"{_show([s.get('type') for s in decoder_steps])}, pre-tokenizer "
            f"{_show([s.get('type') for s in pre_steps])}): expected a ByteLevel decoder (GPT-2 style) "
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
    limits: Limits,
) -> Vocabulary:
    kind, marker, byte_fallback, add_prefix_space = _analyze_tokenizer_json(data, source)
    model = data["model"]
    vocab = model.get("vocab")
    bound = limits.max_vocab_size
    pieces: dict[int, str] = {}
    if isinstance(vocab, dict):
        for piece, i in vocab.items():
            if not _is_int(i) or i < 0:
                raise VocabularyError(f"{source!r}: token {_show(piece)} has id {_show(i)}, "
                                      "not an int >= 0")
            if i >= bound:
                raise LimitExceeded("max_vocab_size", i + 1, bound)
            pieces[i] = piece
    elif isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        if len(vocab) > bound:
            raise LimitExceeded("max_vocab_size", len(vocab), bound)
        for i, entry in enumerate(vocab):
            piece = entry[0] if isinstance(entry, list) and entry else entry
            if not isinstance(piece, str):
                raise VocabularyError(f"{source!r}: vocab entry {i} is {_show(entry)}")
            pieces[i] = piece
    else:
        raise VocabularyError(f"{source!r}: model.vocab is missing or not a dict / list")

    added = {i: (content, special) for i, content, special in _added_tokens(data, source, limits)}

    n = max(max(pieces, default=-1), max(added, default=-1)) + 1
    if size is not None and _is_int(size) and size > bound:
        raise LimitExceeded("max_vocab_size", size, bound)
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
    if _is_int(unk_id) and 0 <= unk_id < n:
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
            raise VocabularyError(f"{source!r}: EOS id(s) {_show(bad)} are not token ids in "
                                  f"[0, {n})")
        if not eos:
            raise VocabularyError(
                f"{source!r}: cannot infer the EOS token: no tokenizer_config.json eos_token and "
                f"no special token named {sorted(WELL_KNOWN_EOS_NAMES)}; pass eos_token_ids=")
        eos_token_ids = sorted(eos)
    model = model_from_tokenizer_json(
        data, MODEL_BYTE_LEVEL if kind == KIND_BYTE_LEVEL else MODEL_SENTENCEPIECE, label, limits)
    return cls(tokens, eos_token_ids, size=size, kind=kind, add_prefix_space=add_prefix_space,
               name=label, special_token_names=special_names, limits=limits,
               tokenizer_model=model)


def _added_tokens(data: Mapping[str, Any], source: str,
                  limits: Limits) -> list[tuple[int, str, bool]]:
    """``(id, content, special)`` of each ``added_tokens`` entry, in order: each entry must be
    an object with an int ``id`` in ``[0, max_vocab_size)``, a string ``content`` and a bool
    (or absent) ``special``, else :class:`VocabularyError` naming the entry."""
    entries = data.get("added_tokens")
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise VocabularyError(f"{source!r}: added_tokens is {_show(entries)}, not a list")
    out: list[tuple[int, str, bool]] = []
    for number, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise VocabularyError(f"{source!r}: added token {number} is {_show(entry)}, "
                                  "not an object")
        i, content, special = entry.get("id"), entry.get("content"), entry.get("special", False)
        if not _is_int(i) or i < 0:
            raise VocabularyError(f"{source!r}: added token {number} ({_show(entry)}) has id "
                                  f"{_show(i)}, not an int >= 0")
        if i >= limits.max_vocab_size:
            raise LimitExceeded("max_vocab_size", i + 1, limits.max_vocab_size)
        if not isinstance(content, str):
            raise VocabularyError(f"{source!r}: added token {number} ({_show(entry)}) has "
                                  f"content {_show(content)}, not a string")
        if not isinstance(special, bool):
            raise VocabularyError(f"{source!r}: added token {number} ({_show(entry)}) has "
                                  f"special {_show(special)}, not a bool")
        out.append((i, content, special))
    return out


def _token_id_by_text(data: Mapping[str, Any], text: str, source: str,
                      limits: Limits) -> int | None:
    for i, content, _special in _added_tokens(data, source, limits):
        if content == text:
            return i
    vocab = data["model"].get("vocab")
    if isinstance(vocab, dict):
        found = vocab.get(text)
        return found if _is_int(found) else None
    if isinstance(vocab, list):
        for i, entry in enumerate(vocab):
            if isinstance(entry, list) and entry and entry[0] == text:
                return i
    return None


def _eos_from_config_files(directory: str, data: Mapping[str, Any], source: str,
                           limits: Limits) -> list[int]:
    """EOS ids named by tokenizer_config.json / generation_config.json in ``directory``."""
    found: list[int] = []
    config = _read_optional_json(os.path.join(directory, "tokenizer_config.json"), limits)
    if config is not None:
        eos = config.get("eos_token")
        if isinstance(eos, dict):
            eos = eos.get("content")
        if isinstance(eos, str):
            i = _token_id_by_text(data, eos, source, limits)
            if i is None:
                raise VocabularyError(f"tokenizer_config.json next to {source!r} names eos_token "
                                      f"{_show(eos)}, which is not a token of the tokenizer")
            found.append(i)
    generation = _read_optional_json(os.path.join(directory, "generation_config.json"), limits)
    if generation is not None:
        ids = generation.get("eos_token_id")
        if _is_int(ids):
            found.append(ids)
        elif isinstance(ids, list):
            found.extend(i for i in ids if _is_int(i))
    return found


def _read_optional_json(path: str, limits: Limits) -> dict[str, Any] | None:
    raw = _read_file(path, limits)
    if raw is None:
        return None
    value = _parse_json(raw, path, limits)
    return value if isinstance(value, dict) else None


register_reader("tokenizer_json", read_tokenizer_json)
register_reader("hf", read_transformers)
