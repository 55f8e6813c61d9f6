"""The :class:`Vocabulary`: token id -> the exact bytes that token appends to the output text.

This is the tokenizer as the engine sees it (DESIGN.md, "the vocabulary is an automaton too"):
detokenization is a map from token ids to byte strings, and the engine composes byte automata
with it. Everything tokenizer-specific (GPT-2's byte-to-unicode alphabet, SentencePiece's
``▁`` space marker, ``<0xNN>`` byte-fallback tokens, added and control tokens) is resolved by
the readers (:mod:`tokamata.vocab.huggingface`, :mod:`tokamata.vocab.gguf`), once, so that
nothing downstream ever sees a token *string*. This module holds the class, its invariants and
the argument checks; it knows no file format.

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
  allowed. ``v.size <= limits.max_vocab_size`` (:class:`~tokamata.LimitExceeded` otherwise),
  so every id fits the C++ core's ``int32``.
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
- Pickling sends the token table only (the bytes of each id, no caches) plus a content
  digest; unpickling skips the checks (the pickle came from a checked
  vocabulary) and returns the vocabulary already alive in this process with that digest when
  there is one, so constraints unpickled one by one share one vocabulary and its caches.
  ``copy.copy`` and ``copy.deepcopy`` return the vocabulary itself (it is immutable).

Where the bytes come from: ``from_token_bytes`` (explicit byte strings, here);
``from_tokenizer_json`` / ``from_hf`` (a Hugging Face ``tokenizer.json``:
:mod:`tokamata.vocab.huggingface`); ``from_gguf`` (the ``tokenizer.ggml.*`` metadata of a GGUF
file: :mod:`tokamata.vocab.gguf`). The readers import this module (for the class, the kinds and
the EOS names), so this module cannot import them: each registers its constructors with
:func:`register_reader` when imported, and the package's ``__init__`` imports both. Python runs
a package's ``__init__`` before any of its modules, so the classmethods ``from_tokenizer_json``,
``from_hf`` and ``from_gguf`` always find their reader, whichever module is imported first.

EOS ids are, unless given explicitly: the ids the source names (``tokenizer_config.json`` /
``generation_config.json`` next to a ``tokenizer.json``, ``tokenizer.eos_token_id`` of a
transformers tokenizer, ``tokenizer.ggml.eos_token_id`` / ``eot_token_id`` / ``eom_token_id`` of
a GGUF file) plus every *special* token whose text is one of :data:`WELL_KNOWN_EOS_NAMES`
(``<end_of_turn>`` ends a Gemma chat turn although Gemma's ``eos_token`` is ``<eos>``). A
non-special token spelled like an EOS name is text, never EOS (Gemma 3 has an HTML ``</s>``
token).
"""

from __future__ import annotations

import hashlib
import operator
import os
import sys
from array import array
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ..errors import InvalidArgument, LimitExceeded, Unsupported, VocabularyError
from ..limits import DEFAULT_LIMITS, Limits
from .tokenizer_model import TokenizerModel

__all__ = ["Vocabulary", "WELL_KNOWN_EOS_NAMES", "KIND_BYTES", "KIND_BYTE_LEVEL",
           "KIND_SENTENCEPIECE", "KINDS", "register_reader"]

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

# Kinds of vocabulary, for repr and for filters that care how the tokenizer spells spaces.
KIND_BYTES = "bytes"                  # built from explicit byte strings
KIND_BYTE_LEVEL = "byte-level"        # GPT-2 style byte-to-unicode alphabet
KIND_SENTENCEPIECE = "sentencepiece"  # ``▁`` marks a space, ``<0xNN>`` byte fallback
KINDS: frozenset[str] = frozenset({KIND_BYTES, KIND_BYTE_LEVEL, KIND_SENTENCEPIECE})

#: The readers' constructors, by the name of the classmethod they implement without ``from_``
#: (``"tokenizer_json"``, ``"hf"``, ``"gguf"``); see the module docstring.
_READERS: dict[str, Callable[..., Any]] = {}


def register_reader(source: str, read: Callable[..., Vocabulary]) -> None:
    """Make ``read(cls, *args, **kwargs)`` the body of the classmethod ``Vocabulary.from_<source>``
    (called by the reader modules when imported)."""
    _READERS[source] = read


def _reader(source: str) -> Callable[..., Vocabulary]:
    try:
        return _READERS[source]
    except KeyError:
        raise VocabularyError(f"Vocabulary.from_{source} has no reader registered: import "
                              "tokamata.vocab (the package registers its readers)") from None


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
        limits: Limits | None = None,
        tokenizer_model: TokenizerModel | None = None,
    ) -> None:
        if tokenizer_model is not None and not isinstance(tokenizer_model, TokenizerModel):
            raise InvalidArgument("tokenizer_model must be a TokenizerModel, got "
                                  f"{type(tokenizer_model).__name__}")
        if limits is None:
            limits = DEFAULT_LIMITS
        elif not isinstance(limits, Limits):
            raise InvalidArgument(f"limits must be a tokamata.Limits, got {type(limits).__name__}")
        tokens = _normalize_tokens(token_bytes)
        n = len(tokens)
        if n > limits.max_vocab_size:
            raise LimitExceeded("max_vocab_size", n, limits.max_vocab_size)
        if size is None:
            size = n
        else:
            size = _as_int(size, "size")
            if size < n:
                raise VocabularyError(
                    f"size={size} is smaller than the tokenizer's id range: {n} token ids; "
                    f"size is the number of logits columns and must be >= {n}")
            if size > limits.max_vocab_size:
                raise LimitExceeded("max_vocab_size", size, limits.max_vocab_size)
        eos = _check_eos(eos_token_ids, n)
        if any(tokens[e] is not None for e in eos):
            as_list = list(tokens)
            for e in eos:
                as_list[e] = None  # EOS is never text
            tokens = tuple(as_list)
        if kind not in KINDS:
            raise InvalidArgument(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
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
        self._tokenizer_model = tokenizer_model

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

    @property
    def tokenizer_model(self) -> TokenizerModel | None:
        """How the tokenizer encodes text (merges, normalizer, pre-tokenizer: see
        :mod:`tokamata.vocab.tokenizer_model`); ``None`` for :meth:`from_token_bytes`."""
        return self._tokenizer_model

    def exact_tokenizer(self) -> TokenizerModel:
        """The tokenizer model, checked to encode exactly as the tokenizer does; else
        :class:`~tokamata.Unsupported` naming what cannot be reproduced (``"merges"`` for a
        vocabulary built from byte strings, which has no merge rules).

        >>> Vocabulary.from_token_bytes([b"a", None], eos_token_ids=[1]).exact_tokenizer()
        Traceback (most recent call last):
        tokamata.errors.Unsupported: unsupported: merges: ...
        """
        if self._tokenizer_model is None:
            raise Unsupported("merges", "a vocabulary built from token bytes has no merge rules "
                              "or pre-tokenizer; load it with from_tokenizer_json, from_hf "
                              "or from_gguf")
        return self._tokenizer_model.require_exact()

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

    # ------------------------------------------------------------------ pickling and copies

    def __reduce__(self):
        digest, state = self._pickled_state()
        return _unpickle_vocabulary, (digest, state)

    def __copy__(self) -> Vocabulary:
        return self

    def __deepcopy__(self, memo) -> Vocabulary:
        return self

    def _pickled_state(self) -> tuple[bytes, tuple]:
        """(digest, state) for pickling, computed once per vocabulary (see the module doc)."""
        cached = self.__dict__.get("_pickled")
        if cached is None:
            lengths = array("i", [-1 if b is None else len(b) for b in self._token_bytes])
            if sys.byteorder != "little":
                lengths.byteswap()  # (the digest reads little-endian lengths)
            names = {text: list(ids) for text, ids in self._special_token_names.items()}
            state = (self._token_bytes, self._eos_token_ids, self._size, self._kind, self._add_prefix_space,
                     self._name, names, self._special_token_ids, self._tokenizer_model)
            h = hashlib.blake2b(digest_size=20)
            h.update(b"".join(b for b in self._token_bytes if b is not None))
            h.update(lengths.tobytes())
            h.update(repr(state[1:7]).encode())
            if self._tokenizer_model is not None:  # (same tokens, another tokenizer: another vocabulary)
                h.update(repr(self._tokenizer_model).encode())
            cached = (h.digest(), state)
            self.__dict__["_pickled"] = cached
            with _INTERN_LOCK:
                _INTERNED.setdefault(cached[0], self)
        return cached

    # ----------------------------------------------------------------------- constructors

    @classmethod
    def from_token_bytes(
        cls,
        tokens: Sequence[bytes | bytearray | memoryview | None],
        eos_token_ids: Iterable[int],
        *,
        size: int | None = None,
        special_tokens: Mapping[str, int | Sequence[int]] | None = None,
        limits: Limits | None = None,
    ) -> Vocabulary:
        """A vocabulary from explicit byte strings: ``tokens[i]`` is the text of id ``i``,
        ``None`` for a control token. ``eos_token_ids`` must be non-empty.
        ``special_tokens`` names control tokens (``{"<|eot_id|>": 3}``); each id must be one whose
        entry is ``None`` (or an EOS id), else :class:`InvalidArgument`. ``size`` and the number
        of tokens are bounded by ``limits.max_vocab_size``."""
        return cls(tokens, eos_token_ids, size=size, kind=KIND_BYTES, name="",
                   special_token_names=special_tokens, limits=limits)

    @classmethod
    def from_tokenizer_json(
        cls,
        path: str | os.PathLike[str],
        *,
        eos_token_ids: Iterable[int] | None = None,
        size: int | None = None,
        limits: Limits | None = None,
    ) -> Vocabulary:
        """A vocabulary from a Hugging Face ``tokenizer.json`` (or a folder holding one).

        Without ``eos_token_ids`` they are inferred from ``tokenizer_config.json`` and
        ``generation_config.json`` next to the file, plus the special tokens named in
        :data:`WELL_KNOWN_EOS_NAMES`; :class:`VocabularyError` if none is found. A malformed
        file raises :class:`VocabularyError`; ``limits`` bounds what is read
        (``max_file_bytes``, ``max_nesting_depth``, ``max_vocab_size``: :class:`LimitExceeded`).
        """
        return _reader("tokenizer_json")(cls, path, eos_token_ids=eos_token_ids, size=size,
                                         limits=limits)

    @classmethod
    def from_hf(cls, tokenizer: Any, *, size: int | None = None,
                limits: Limits | None = None) -> Vocabulary:
        """A vocabulary from a transformers (fast) tokenizer.

        Reads ``tokenizer.backend_tokenizer.to_str()`` (the same ``tokenizer.json`` path as
        :meth:`from_tokenizer_json`); EOS ids are ``tokenizer.eos_token_id`` plus the special
        tokens named in :data:`WELL_KNOWN_EOS_NAMES`. ``size`` is usually the model's
        ``config.vocab_size``, which may exceed the tokenizer's id range.
        """
        return _reader("hf")(cls, tokenizer, size=size, limits=limits)

    @classmethod
    def from_gguf(cls, path: str | os.PathLike[str], *, size: int | None = None,
                  limits: Limits | None = None) -> Vocabulary:
        """A vocabulary from the tokenizer metadata of a GGUF file (a model or a vocab-only file).

        ``tokenizer.ggml.model`` ``"gpt2"`` is byte-level BPE; ``"llama"``, ``"gemma4"`` and
        ``"t5"`` are SentencePiece-style; other tokenizer models raise
        :class:`VocabularyError`. Only the metadata section is read (no tensor data); a corrupt
        or hostile one raises :class:`VocabularyError` or, past ``limits.max_vocab_size`` or
        ``limits.max_nesting_depth``, :class:`LimitExceeded`.
        """
        return _reader("gguf")(cls, path, size=size, limits=limits)


# ------------------------------------------------------------------------ unpickling

#: vocabularies alive in this process by content digest (pickled or unpickled ones)
_INTERNED: weakref.WeakValueDictionary[bytes, Vocabulary] = weakref.WeakValueDictionary()
_INTERN_LOCK = threading.Lock()


def _unpickle_vocabulary(digest: bytes, state: tuple) -> Vocabulary:
    """The vocabulary of a pickle: the live one with this digest, else one rebuilt from the
    state without re-checking it (it was checked where it was made)."""
    with _INTERN_LOCK:
        alive = _INTERNED.get(digest)
    if alive is not None:
        return alive
    tokens, eos, size, kind, add_prefix_space, name, names, special, model = state
    vocab = Vocabulary.__new__(Vocabulary)
    vocab._token_bytes = tokens
    vocab._eos_token_ids = eos
    vocab._size = size
    vocab._special_token_ids = special
    vocab._kind = kind
    vocab._add_prefix_space = add_prefix_space
    vocab._name = name
    vocab._tokenizer_model = model
    vocab._special_token_names = MappingProxyType({text: tuple(ids) for text, ids in names.items()})
    vocab.__dict__["_pickled"] = (digest, state)
    with _INTERN_LOCK:
        return _INTERNED.setdefault(digest, vocab)


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

