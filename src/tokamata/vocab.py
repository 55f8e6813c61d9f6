"""The vocabulary: token id -> the exact bytes that token appends to the output text.

This is the tokenizer as the engine sees it (DESIGN.md, "the vocabulary is an automaton too"):
detokenization is a map from token ids to byte strings, and the engine composes byte automata
with it. Everything tokenizer-specific (GPT-2's byte-to-unicode alphabet, SentencePiece's
``▁`` space marker, ``<0xNN>`` byte-fallback tokens, added and control tokens) is resolved here,
once, so that nothing downstream ever sees a token *string*.

Invariants of a :class:`Vocabulary` ``v``:

- ``v.token_bytes[i]`` is the byte string token ``i`` contributes to the text, or ``None`` when
  token ``i`` never contributes text and must never be allowed as text: control / special
  tokens, the unknown token, unused and reserved ids, ids no tokenizer entry names, tokens whose
  bytes are empty (``b""`` is stored as ``None``), and every EOS id. No entry is ``b""``.
- ``v.eos_token_ids`` is sorted, duplicate-free, non-empty, and every id in it is a tokenizer id
  (``< len(v.token_bytes)``) whose ``token_bytes`` entry is ``None``. The engine allows an EOS
  id only where the constraint accepts; it is never text.
- ``v.special_token_ids`` is the sorted tuple of ids ``i < len(v.token_bytes)`` with
  ``v.token_bytes[i] is None`` (so it includes the EOS ids).
- ``v.special_token_names`` maps the text of each control / special token the source names
  (``added_tokens`` marked special in a ``tokenizer.json``, control tokens of a GGUF file, the
  ``special_tokens`` argument of ``from_token_bytes``) to its sorted ids; every such id is in
  ``v.special_token_ids``. Grammars use it to resolve ``<|eot_id|>``.
- ``v.size >= len(v.token_bytes)`` is the number of logits columns (``len(v) == v.size``); ids in
  ``[len(v.token_bytes), v.size)`` are padding of the model's embedding matrix and are never
  allowed.
- Entries are context-free. Decoders sometimes edit a whole decoded *sequence* (SentencePiece's
  ``Strip`` drops the leading space of the text; WordPiece glues ``##`` pieces); only per-token
  meaning is recorded here. ``v.add_prefix_space`` says whether the *encoder* prepends a space
  to the text it encodes (SentencePiece's dummy prefix, GPT-2's ``add_prefix_space``), which is
  what the decoder's leading-space strip undoes; filters that care compose it in.
- A byte-level BPE vocabulary entry with a character outside GPT-2's byte-to-unicode alphabet
  is ``None``: the byte-level encoder only ever produces alphabet characters, so it can never
  emit that entry, and its bytes are ambiguous (Command-R's vocabulary has 1,403 emoji written
  literally; Hugging Face would decode them as UTF-8, llama.cpp as ``[UNK_BYTE_..]``).
- Different ids may have equal bytes (a ``<0x41>`` byte-fallback token and the token ``A``;
  added tokens repeating a vocabulary entry). That is normal and kept.
- Immutable in spirit: the public attributes are read-only properties. The instance
  ``__dict__`` stays open (no ``__slots__``) because the engine caches derived data (its C++
  trie) on the instance.

Where the bytes come from:

- ``from_tokenizer_json`` / ``from_hf``: a Hugging Face ``tokenizer.json``. Byte-level BPE
  (GPT-2, Llama 3, Qwen2: the decoder or pre-tokenizer is ``ByteLevel``) maps each character of a
  token back through GPT-2's bytes-to-unicode table. SentencePiece-style vocabularies (Llama 2,
  Gemma, Mistral: a ``Metaspace`` decoder or ``Replace("▁", " ")``) turn ``▁`` into a space and,
  with ``ByteFallback``, ``<0xNN>`` into the raw byte ``0xNN``. Added tokens marked ``special``
  are control tokens; other added tokens contribute their content as literal UTF-8 text
  (they are matched against raw text by the encoder, so they are *not* byte-mapped). A decoder
  step this module does not understand is refused, not ignored.
- ``from_gguf``: the ``tokenizer.ggml.*`` metadata of a GGUF file, with llama.cpp's meaning of
  the token types (1 normal, 2 unknown, 3 control, 4 user-defined: literal text, 5 unused,
  6 byte). The metadata section is parsed directly, not with ``gguf.GGUFReader``, which builds a
  numpy view per array element and needs 10+ s for a 262k-token vocabulary (the tests check
  the two agree).

EOS ids are, unless given explicitly: the ids the source names (``tokenizer_config.json`` /
``generation_config.json`` next to a ``tokenizer.json``, ``tokenizer.eos_token_id`` of a
transformers tokenizer, ``tokenizer.ggml.eos_token_id`` / ``eot_token_id`` / ``eom_token_id`` of
a GGUF file) plus every *special* token whose text is one of :data:`WELL_KNOWN_EOS_NAMES`
(``<end_of_turn>`` ends a Gemma chat turn although Gemma's ``eos_token`` is ``<eos>``). A
non-special token spelled like an EOS name is text, never EOS (Gemma 3 has an HTML ``</s>``
token).
"""

from __future__ import annotations

import json
import mmap
import operator
import os
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from .errors import InvalidArgument, VocabularyError

__all__ = ["Vocabulary", "WELL_KNOWN_EOS_NAMES"]

#: Texts of special tokens that end generation in common model families. Only tokens that are
#: special / control in their tokenizer count.
WELL_KNOWN_EOS_NAMES: frozenset[str] = frozenset({
    "</s>",               # Llama 2, Mistral, T5
    "<|endoftext|>",      # GPT-2, Qwen, Phi-3, StarCoder
    "<|eot_id|>",         # Llama 3 (end of turn)
    "<|eom_id|>",         # Llama 3.1 (end of message, tool calls)
    "<|end_of_text|>",    # Llama 3
    "<eos>",              # Gemma
    "<end_of_turn>",      # Gemma (end of turn)
    "<|im_end|>",         # ChatML (Qwen)
    "<|end|>",            # Phi-3 (end of turn)
    "<turn|>",            # Gemma 4 (end of turn)
})

_WELL_KNOWN_EOS_BYTES = frozenset(name.encode("utf-8") for name in WELL_KNOWN_EOS_NAMES)

# Kinds of vocabulary, for repr and for filters that care how the tokenizer spells spaces.
KIND_BYTES = "bytes"                  # built from explicit byte strings
KIND_BYTE_LEVEL = "byte-level"        # GPT-2 style byte-to-unicode alphabet
KIND_SENTENCEPIECE = "sentencepiece"  # ``▁`` marks a space, ``<0xNN>`` byte fallback
_KINDS = frozenset({KIND_BYTES, KIND_BYTE_LEVEL, KIND_SENTENCEPIECE})

_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>\Z")


class Vocabulary:
    """Token id -> bytes, plus the EOS ids and the number of logits columns.

    Example::

        >>> from tokamata.vocab import Vocabulary
        >>> v = Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_token_ids=[3], size=8)
        >>> v.token_bytes[2], v.eos_token_ids, v.special_token_ids, len(v)
        (b'ab', (3,), (3,), 8)
        >>> v.decode([2, 0, 3])
        b'aba'

    Real tokenizers: ``Vocabulary.from_tokenizer_json("tokenizer.json")``,
    ``Vocabulary.from_hf(transformers_tokenizer, size=model.config.vocab_size)``,
    ``Vocabulary.from_gguf("model.gguf")``.
    """

    def __init__(
        self,
        token_bytes: Sequence[bytes | bytearray | memoryview | None],
        eos_token_ids: Iterable[int],
        *,
        size: int | None = None,
        kind: str = KIND_BYTES,
        add_prefix_space: bool = False,
        name: str = "",
        special_token_names: Mapping[str, int | Sequence[int]] | None = None,
    ) -> None:
        tokens = _normalize_tokens(token_bytes)
        n = len(tokens)
        if size is None:
            size = n
        else:
            size = _as_int(size, "size")
            if size < n:
                raise VocabularyError(
                    f"size={size} is smaller than the tokenizer's id range: {n} token ids; "
                    f"size is the number of logits columns and must be >= {n}")
        eos = _check_eos(eos_token_ids, n)
        if any(tokens[e] is not None for e in eos):
            as_list = list(tokens)
            for e in eos:
                as_list[e] = None  # EOS is never text
            tokens = tuple(as_list)
        if kind not in _KINDS:
            raise InvalidArgument(f"kind must be one of {sorted(_KINDS)}, got {kind!r}")
        self._token_bytes: tuple[bytes | None, ...] = tokens
        self._eos_token_ids: tuple[int, ...] = eos
        self._size: int = size
        self._special_token_ids: tuple[int, ...] = tuple(
            i for i, b in enumerate(tokens) if b is None)
        self._kind = kind
        self._add_prefix_space = bool(add_prefix_space)
        self._name = name
        self._special_token_names: Mapping[str, tuple[int, ...]] = MappingProxyType(
            _check_special_names(special_token_names or {}, tokens))

    # ----------------------------------------------------------------- read-only attributes

    @property
    def token_bytes(self) -> tuple[bytes | None, ...]:
        """Bytes of each tokenizer id; ``None`` for ids that are never text (see module doc)."""
        return self._token_bytes

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        """Sorted ids that end generation; each has ``token_bytes[i] is None``."""
        return self._eos_token_ids

    @property
    def size(self) -> int:
        """Number of logits columns: ``max(len(token_bytes), size argument)``."""
        return self._size

    @property
    def special_token_ids(self) -> tuple[int, ...]:
        """Sorted tokenizer ids whose ``token_bytes`` entry is ``None`` (EOS included,
        padding ids ``>= len(token_bytes)`` excluded)."""
        return self._special_token_ids

    @property
    def special_token_names(self) -> Mapping[str, tuple[int, ...]]:
        """Text of each named control / special token -> its sorted ids (read-only; empty when
        the source names none). Every id is in :attr:`special_token_ids`."""
        return self._special_token_names

    @property
    def kind(self) -> str:
        """``"byte-level"``, ``"sentencepiece"`` or ``"bytes"`` (built from a byte list)."""
        return self._kind

    @property
    def add_prefix_space(self) -> bool:
        """True if the tokenizer's encoder prepends a space to the text it encodes."""
        return self._add_prefix_space

    @property
    def name(self) -> str:
        """Where the vocabulary came from (a file name, a tokenizer name), for messages."""
        return self._name

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        eos = ", ".join(map(str, self._eos_token_ids[:4]))
        if len(self._eos_token_ids) > 4:
            eos += ", ..."
        name = f"{self._name!r}, " if self._name else ""
        return (f"Vocabulary({name}kind={self._kind!r}, tokens={len(self._token_bytes)}, "
                f"size={self._size}, eos=[{eos}])")

    def decode(self, token_ids: Iterable[int]) -> bytes:
        """Concatenate the bytes of ``token_ids``; ids that are never text contribute nothing.

        Raises :class:`InvalidArgument` for an id outside ``[0, size)``.
        """
        tokens = self._token_bytes
        n, size = len(tokens), self._size
        out = []
        for t in token_ids:
            i = _as_int(t, "token id")
            if not 0 <= i < size:
                raise InvalidArgument(f"token id {i} is out of range [0, {size})")
            if i < n:
                b = tokens[i]
                if b is not None:
                    out.append(b)
        return b"".join(out)

    # ----------------------------------------------------------------------- constructors

    @classmethod
    def from_token_bytes(
        cls,
        tokens: Sequence[bytes | bytearray | memoryview | None],
        eos_token_ids: Iterable[int],
        *,
        size: int | None = None,
        special_tokens: Mapping[str, int | Sequence[int]] | None = None,
    ) -> Vocabulary:
        """A vocabulary from explicit byte strings: ``tokens[i]`` is the text of id ``i``,
        ``None`` for a control token. ``eos_token_ids`` must be non-empty.
        ``special_tokens`` names control tokens (``{"<|eot_id|>": 3}``); each id must be one whose
        entry is ``None`` (or an EOS id), else :class:`InvalidArgument`."""
        return cls(tokens, eos_token_ids, size=size, kind=KIND_BYTES, name="",
                   special_token_names=special_tokens)

    @classmethod
    def from_tokenizer_json(
        cls,
        path: str | os.PathLike[str],
        *,
        eos_token_ids: Iterable[int] | None = None,
        size: int | None = None,
    ) -> Vocabulary:
        """A vocabulary from a Hugging Face ``tokenizer.json`` (or a folder holding one).

        Without ``eos_token_ids`` they are inferred from ``tokenizer_config.json`` and
        ``generation_config.json`` next to the file, plus the special tokens named in
        :data:`WELL_KNOWN_EOS_NAMES`; :class:`VocabularyError` if none is found.
        """
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

    @classmethod
    def from_hf(cls, tokenizer: Any, *, size: int | None = None) -> Vocabulary:
        """A vocabulary from a transformers (fast) tokenizer.

        Reads ``tokenizer.backend_tokenizer.to_str()`` (the same ``tokenizer.json`` path as
        :meth:`from_tokenizer_json`); EOS ids are ``tokenizer.eos_token_id`` plus the special
        tokens named in :data:`WELL_KNOWN_EOS_NAMES`. ``size`` is usually the model's
        ``config.vocab_size``, which may exceed the tokenizer's id range.
        """
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

    @classmethod
    def from_gguf(cls, path: str | os.PathLike[str], *, size: int | None = None) -> Vocabulary:
        """A vocabulary from the tokenizer metadata of a GGUF file (a model or a vocab-only file).

        ``tokenizer.ggml.model`` ``"gpt2"`` is byte-level BPE; ``"llama"``, ``"gemma4"`` and
        ``"t5"`` are SentencePiece-style; other tokenizer models raise
        :class:`VocabularyError`. Only the metadata section is read (no tensor data).
        """
        file = os.fspath(path)
        meta = _read_gguf_metadata(file, _GGUF_KEYS)
        label = os.path.basename(file)
        model = meta.get("tokenizer.ggml.model")
        tokens = meta.get("tokenizer.ggml.tokens")
        if not isinstance(model, str) or not isinstance(tokens, list):
            raise VocabularyError(f"{file!r} has no tokenizer metadata "
                                  "(tokenizer.ggml.model / tokenizer.ggml.tokens)")
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
            types = [_GGUF_NORMAL] * n
        elif len(types) != n:
            raise VocabularyError(f"{file!r}: tokenizer.ggml.token_type has {len(types)} entries "
                                  f"for {n} tokens")
        result = _gguf_token_bytes(tokens, types, kind, file)
        eos: set[int] = set()
        for key in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                    "tokenizer.ggml.eom_token_id"):
            value = meta.get(key)
            if value is None:
                continue
            if not isinstance(value, int) or not 0 <= value < n:
                raise VocabularyError(f"{file!r}: {key}={value!r} is not a token id in [0, {n})")
            eos.add(value)
        eos.update(i for i, ty in enumerate(types)
                   if ty == _GGUF_CONTROL and tokens[i] in _WELL_KNOWN_EOS_BYTES)
        if not eos:
            raise VocabularyError(f"{file!r}: no EOS token (no tokenizer.ggml.eos_token_id and "
                                  "no control token named like one)")
        control: dict[str, list[int]] = {}
        for i, ty in enumerate(types):
            if ty == _GGUF_CONTROL:
                try:
                    control.setdefault(tokens[i].decode("utf-8"), []).append(i)
                except UnicodeDecodeError:
                    pass  # a control token without a UTF-8 name cannot be named in a grammar
        return cls(result, sorted(eos), size=size, kind=kind,
                   add_prefix_space=add_prefix_space, name=label, special_token_names=control)


# ------------------------------------------------------------------------ argument checks


def _as_int(value: object, what: str) -> int:
    if isinstance(value, bool):
        raise InvalidArgument(f"{what} must be an int, got {value!r}")
    try:
        result = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidArgument(f"{what} must be an int, got {type(value).__name__}") from None
    if result < 0:
        raise InvalidArgument(f"{what} must be >= 0, got {result}")
    return result


def _check_special_names(names: Mapping[str, int | Sequence[int]],
                         tokens: tuple[bytes | None, ...]) -> dict[str, tuple[int, ...]]:
    if not isinstance(names, Mapping):
        raise InvalidArgument(f"special tokens must be a mapping from text to ids, got "
                              f"{type(names).__name__}")
    out: dict[str, tuple[int, ...]] = {}
    for text, value in names.items():
        if not isinstance(text, str) or not text:
            raise InvalidArgument(f"a special token's text must be a non-empty str, got {text!r}")
        raw = [value] if isinstance(value, int) and not isinstance(value, bool) else value
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Iterable):
            raise InvalidArgument(f"special token {text!r}: ids must be an int or a sequence of "
                                  f"ints, got {value!r}")
        ids = sorted({_as_int(i, f"special token {text!r} id") for i in raw})
        if not ids:
            raise InvalidArgument(f"special token {text!r} has no id")
        for i in ids:
            if not 0 <= i < len(tokens):
                raise InvalidArgument(f"special token {text!r}: id {i} is not a token id in "
                                      f"[0, {len(tokens)})")
            if tokens[i] is not None:
                raise InvalidArgument(f"special token {text!r}: id {i} is text "
                                      f"({tokens[i]!r}); a special token's entry must be None")
        out[text] = tuple(ids)
    return out


def _normalize_tokens(tokens: Sequence[Any]) -> tuple[bytes | None, ...]:
    if isinstance(tokens, (bytes, bytearray, str)):
        raise InvalidArgument("tokens must be a sequence of byte strings, not a single "
                              f"{type(tokens).__name__}")
    out: list[bytes | None] = []
    for i, t in enumerate(tokens):
        if t is None:
            out.append(None)
        elif type(t) is bytes:
            out.append(t or None)
        elif isinstance(t, (bytes, bytearray, memoryview)):
            b = bytes(t)
            out.append(b or None)
        else:
            raise InvalidArgument(f"token {i} must be bytes or None, got {type(t).__name__} "
                                  f"{t!r:.40}")
    return tuple(out)


def _check_eos(eos_token_ids: Iterable[int], n: int) -> tuple[int, ...]:
    if isinstance(eos_token_ids, (int, str, bytes)):
        raise InvalidArgument("eos_token_ids must be an iterable of ints, got "
                              f"{type(eos_token_ids).__name__}")
    try:
        ids = sorted({_as_int(e, "EOS token id") for e in eos_token_ids})
    except TypeError:
        raise InvalidArgument("eos_token_ids must be an iterable of ints") from None
    if not ids:
        raise InvalidArgument("eos_token_ids is empty: a vocabulary needs at least one EOS id")
    bad = [e for e in ids if e >= n]
    if bad:
        raise InvalidArgument(f"EOS token id(s) {bad} out of range: the tokenizer has ids "
                              f"[0, {n})")
    return tuple(ids)


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


def _byte_level_decode(token: str) -> bytes | None:
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
            tokens[i] = _byte_level_decode(piece)  # None: unreachable, see module doc
    else:
        space = marker.encode("utf-8")
        for i, piece in pieces.items():
            if byte_fallback and len(piece) == 6 and (m := _BYTE_TOKEN.match(piece)):
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


# ---------------------------------------------------------------------------------- GGUF

_GGUF_NORMAL, _GGUF_UNKNOWN, _GGUF_CONTROL, _GGUF_USER, _GGUF_UNUSED, _GGUF_BYTE = 1, 2, 3, 4, 5, 6
_GGUF_KEYS = frozenset({
    "tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
    "tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
    "tokenizer.ggml.add_space_prefix",
})
# GGUF value types (gguf.GGUFValueType) -> struct format of scalars.
_GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?",
                 10: "Q", 11: "q", 12: "d"}
_GGUF_STRING, _GGUF_ARRAY = 8, 9


def _read_gguf_metadata(path: str, wanted: frozenset[str]) -> dict[str, Any]:
    """The metadata values of ``wanted`` keys in a GGUF file (versions 2 and 3).

    A direct reader of the key/value section: ``gguf.GGUFReader`` builds a numpy view for every
    array element, which takes 10+ seconds for a 262k-token vocabulary; this takes a fraction
    of a second. Strings come back as ``str`` except the elements of string arrays, which stay
    ``bytes``; numeric arrays are lists of numbers.
    """
    try:
        with open(path, "rb") as f:
            try:
                buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:  # empty file
                buf = b""  # type: ignore[assignment]
    except OSError as e:
        raise VocabularyError(f"cannot read GGUF file {path!r}: {e.strerror or e}") from e
    try:
        return _parse_gguf_kv(buf, path, wanted)
    except (struct.error, IndexError, OverflowError, UnicodeDecodeError, MemoryError) as e:
        raise VocabularyError(f"{path!r}: truncated or corrupt GGUF metadata ({e})") from e
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()


def _parse_gguf_kv(buf: Any, path: str, wanted: frozenset[str]) -> dict[str, Any]:
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

    def read_string(offset: int) -> tuple[bytes, int]:
        (length,) = u64(buf, offset)
        end = offset + 8 + length
        if end > size:
            raise IndexError("string runs past the end of the file")
        return bytes(buf[offset + 8:end]), end

    def read_value(vtype: int, offset: int, keep: bool) -> tuple[Any, int]:
        fmt = _GGUF_SCALARS.get(vtype)
        if fmt is not None:
            return struct.unpack_from(order + fmt, buf, offset)[0], offset + struct.calcsize(fmt)
        if vtype == _GGUF_STRING:
            raw, offset = read_string(offset)
            return raw.decode("utf-8"), offset
        if vtype == _GGUF_ARRAY:
            (etype,) = u32(buf, offset)
            (count,) = u64(buf, offset + 4)
            offset += 12
            if etype == _GGUF_STRING:
                items: list[bytes] = []
                append = items.append
                for _ in range(count):
                    (length,) = u64(buf, offset)
                    end = offset + 8 + length
                    if keep:
                        append(buf[offset + 8:end])
                    offset = end
                if offset > size:
                    raise IndexError("string array runs past the end of the file")
                return items, offset
            fmt = _GGUF_SCALARS.get(etype)
            if fmt is not None:
                width = struct.calcsize(fmt)
                end = offset + width * count
                if end > size:
                    raise IndexError("array runs past the end of the file")
                values = list(struct.unpack_from(f"{order}{count}{fmt}", buf, offset)) if keep \
                    else []
                return values, end
            if etype == _GGUF_ARRAY:  # arrays of arrays: walk them to skip
                values = []
                for _ in range(count):
                    value, offset = read_value(_GGUF_ARRAY, offset, keep)
                    values.append(value)
                return values, offset
            raise VocabularyError(f"{path!r}: unknown GGUF array element type {etype}")
        raise VocabularyError(f"{path!r}: unknown GGUF value type {vtype}")

    found: dict[str, Any] = {}
    for _ in range(kv_count):
        raw_key, offset = read_string(offset)
        key = raw_key.decode("utf-8")
        (vtype,) = u32(buf, offset)
        offset += 4
        keep = key in wanted
        value, offset = read_value(vtype, offset, keep)
        if keep:
            found[key] = value
            if len(found) == len(wanted):
                break
    return found


def _gguf_token_bytes(tokens: list[bytes], types: Sequence[int], kind: str,
                      source: str) -> list[bytes | None]:
    out: list[bytes | None] = [None] * len(tokens)
    space = "\u2581".encode("utf-8")
    byte_level = kind == KIND_BYTE_LEVEL
    for i, (raw, ty) in enumerate(zip(tokens, types)):
        if ty == _GGUF_NORMAL:
            if byte_level:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise VocabularyError(f"{source!r}: token {i} is not UTF-8: {raw!r}") from e
                out[i] = _byte_level_decode(text)  # None: unreachable, see module doc
            else:
                out[i] = raw.replace(space, b" ")
        elif ty == _GGUF_USER:
            out[i] = raw  # literal text, matched against raw text by the encoder
        elif ty == _GGUF_BYTE:
            m = _BYTE_TOKEN.match(raw.decode("utf-8", "replace"))
            if m is None:
                raise VocabularyError(f"{source!r}: token {i} has the byte type but reads {raw!r}, "
                                      "not <0xNN>")
            out[i] = bytes([int(m.group(1), 16)])
        # unknown, control, unused, undefined: never text
    return out
