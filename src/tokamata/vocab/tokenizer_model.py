"""The tokenizer model: how a vocabulary's tokenizer *encodes* text, as plain data, and an
exact reference encoder over it.

A :class:`~tokamata.vocab.vocabulary.Vocabulary` says what each token id decodes to; its
:class:`TokenizerModel` (``vocab.tokenizer_model``) says which ids the tokenizer itself would
produce for a text: the model type, the merges, the normalizer and pre-tokenizer steps
(:mod:`tokamata.vocab.normalize`, :mod:`tokamata.vocab.pretokenize`), byte fallback,
``ignore_merges`` and the added tokens matched in raw text. Canonical masks are built on it.

Encoding, exactly as Hugging Face ``tokenizers`` does for these models (:meth:`encode`):

1. the text is cut at the non-special added tokens (leftmost, then longest match in the raw
   text); each match is its token;
2. every other stretch is normalized, then pre-tokenized into pretokens;
3. each pretoken goes through the model: with ``ignore_merges``, a pretoken that is a piece of
   the vocabulary is that token; otherwise its initial symbols (one per character: for a
   byte-level vocabulary, one per byte, since pretokens are spelled in GPT-2's byte alphabet;
   a character that is no piece becomes its UTF-8 bytes' ``<0xNN>`` tokens with byte fallback,
   else the unknown token) are merged by :func:`tokamata.vocab.bpe.merge`.

Choices, documented because canonical masks inherit them:

- *Continuation mode*: no special tokens, no BOS, and nothing that marks the start of a text
  (``Prepend`` normalizers, ``Metaspace`` ``prepend_scheme``, ``ByteLevel``
  ``add_prefix_space``): the text is encoded as it would be after earlier text ending at a
  pretoken boundary. For Llama 2 style tokenizers, ``encode(" " + text)`` is what
  ``tokenizers`` returns for ``text``.
- The texts of *special* (control) tokens are ordinary text here: generated text never
  contains a control token, and ``tokenizers`` would turn ``"<eos>"`` typed in a text into the
  control token.

Supported (:meth:`TokenizerModel.require_exact` returns): BPE without dropout or word
affixes, byte-level (GPT-2, Llama 3, Qwen2) or SentencePiece-style with byte fallback (Gemma,
Llama 2, Mistral), with the normalizer and pre-tokenizer components the two modules above
reproduce. Anything else still loads as a vocabulary; ``require_exact`` raises
:class:`~tokamata.Unsupported` whose ``keyword`` names the first component that cannot be
reproduced (``"model Unigram"``, ``"pre_tokenizer Whitespace"``, ``"tokenizer.ggml.pre"``) and
whose ``reason`` lists them all.

Invariants: construction is cheap (no per-merge work): the readers hand over the parsed merge
list, or a function that reads it, and the merge table is built on the first encode, once per
model (a lock guards it), bounded by ``Limits.max_merges``. Instances are immutable; nothing
here imports ``tokenizers``.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import LimitExceeded, Unsupported, VocabularyError
from ..limits import Limits
from .bpe import build_merge_table, merge
from .normalize import NormalizerStep, normalize, parse_normalizer
from .pretokenize import (CHAR_TO_BYTE, ByteLevelStep, PretokenizerStep, byte_level_spell,
                          parse_pretokenizer, pretokenize)

__all__ = ["MODEL_BYTE_LEVEL", "MODEL_SENTENCEPIECE", "TokenizerModel",
           "model_from_tokenizer_json"]

MODEL_BYTE_LEVEL = "byte-level"        # pieces spelled in GPT-2's byte alphabet
MODEL_SENTENCEPIECE = "sentencepiece"  # pieces spelled in UTF-8, ``▁`` for a space

#: what a loader returns: the vocabulary (piece -> id) and the merges as pairs of pieces, in
#: rank order
Loaded = tuple[Mapping[str, int], Sequence[tuple[str, str]]]

_BYTE_PIECE = re.compile(r"<0x([0-9A-F]{2})>\Z")


@dataclass(frozen=True, eq=False)
class _Tables:
    pieces: Mapping[str, int]
    merges: dict[tuple[int, int], tuple[int, int]]
    piece_of: dict[int, str]
    byte_ids: tuple[int | None, ...]    # byte value -> id of its <0xNN> token (byte fallback)
    byte_of: dict[int, int]             # id of a <0xNN> token -> its byte
    added: Any                          # compiled alternation of the added tokens, or None


@dataclass(frozen=True)
class LoadedData:
    """A loader that holds what it returns, ``(pieces, merges)``: how a pickled model keeps its
    merges."""

    pieces: Mapping[str, int]
    merges: Sequence[tuple[str, str]]

    def __call__(self) -> Loaded:
        return self.pieces, self.merges


def _rebuild_model(fields: dict) -> "TokenizerModel":
    return TokenizerModel(**fields)


@dataclass(frozen=True, eq=False)
class TokenizerModel:
    """How a tokenizer encodes text (see the module docstring).

    ``model_type`` is the ``tokenizer.json`` model type (``"BPE"``, ``"Unigram"`` ...);
    ``kind`` how pieces spell bytes (:data:`MODEL_BYTE_LEVEL`, :data:`MODEL_SENTENCEPIECE`);
    ``normalizer`` and ``pretokenizer`` the steps; ``added_tokens`` the ``(text, id)`` of the
    non-special added tokens, matched in raw text before anything else; ``unsupported`` the
    ``(component, reason)`` pairs that cannot be reproduced; ``merge_count`` the number of
    merges listed (``-1`` when they are derived from scores on first use).

    Example::

        >>> from tokamata.vocab import TokenizerModel
        >>> m = TokenizerModel.from_pieces({"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4},
        ...                                [("a", "b"), ("ab", "c")])
        >>> m.encode("abcab"), m.pretokenize("abc ab")
        ([4, 3], ['abc ab'])
    """

    model_type: str
    kind: str
    normalizer: tuple[NormalizerStep, ...] = ()
    pretokenizer: tuple[PretokenizerStep, ...] = ()
    byte_fallback: bool = False
    ignore_merges: bool = False
    unk_id: int | None = None
    fuse_unk: bool = False
    added_tokens: tuple[tuple[str, int], ...] = ()
    unsupported: tuple[tuple[str, str], ...] = ()
    merge_count: int = 0
    source: str = ""
    load: Callable[[], Loaded] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_lock", threading.Lock())
        object.__setattr__(self, "_tables", None)

    def __reduce__(self):
        """Pickles as plain data: the pieces and merges are read now (the loader that reads
        them lazily from a file may not exist in the process that unpickles)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if self.load is not None and not isinstance(self.load, LoadedData):
            fields["load"] = LoadedData(*self.load())
        return _rebuild_model, (fields,)

    @classmethod
    def from_pieces(cls, pieces: Mapping[str, int], merges: Sequence[tuple[str, str]], *,
                    kind: str = MODEL_SENTENCEPIECE, **options: Any) -> TokenizerModel:
        """A BPE model from a vocabulary and merges in memory (tests, examples)."""
        return cls("BPE", kind, merge_count=len(merges), load=lambda: (pieces, merges),
                   **options)

    # ------------------------------------------------------------------------ exactness

    @property
    def exact(self) -> bool:
        """True when :meth:`encode` reproduces the tokenizer (nothing is unsupported)."""
        return not self.unsupported

    def require_exact(self) -> TokenizerModel:
        """``self``, or :class:`~tokamata.Unsupported` naming the first component that cannot
        be reproduced (``keyword``) and all of them (``reason``)."""
        if self.unsupported:
            component = self.unsupported[0][0]
            listed = "; ".join(f"{c}: {r}" for c, r in self.unsupported)
            raise Unsupported(component, f"{self.source or 'this tokenizer'}: cannot reproduce "
                              f"its encoding exactly ({listed})")
        return self

    # ------------------------------------------------------------------------ tables

    def tables(self) -> _Tables:
        """The vocabulary and merge table, built on first use (once; thread-safe)."""
        tables = self._tables  # type: ignore[attr-defined]
        if tables is not None:
            return tables
        with self._lock:  # type: ignore[attr-defined]
            if self._tables is None:  # type: ignore[attr-defined]
                self.require_exact()
                if self.load is None:
                    raise Unsupported("merges", f"{self.source}: no merges to encode with")
                pieces, merges = self.load()
                table = build_merge_table(merges, pieces, self.source)
                piece_of = {i: p for p, i in pieces.items()}
                byte_ids: list[int | None] = [None] * 256
                byte_of: dict[int, int] = {}
                if self.byte_fallback:
                    for b in range(256):
                        i = pieces.get(f"<0x{b:02X}>")
                        byte_ids[b] = i
                        if i is not None:
                            byte_of[i] = b
                added = None
                if self.added_tokens:
                    texts = sorted({t for t, _ in self.added_tokens if t}, key=len, reverse=True)
                    added = re.compile("|".join(map(re.escape, texts)))
                object.__setattr__(self, "_tables", _Tables(pieces, table, piece_of,
                                                            tuple(byte_ids), byte_of, added))
        return self._tables  # type: ignore[attr-defined]

    def piece(self, token_id: int) -> str | None:
        """The piece (model spelling) of ``token_id``, ``None`` if it has none."""
        return self.tables().piece_of.get(token_id)

    # ------------------------------------------------------------------------ encoding

    def normalize(self, text: str) -> str:
        """``text`` after the normalizer."""
        return normalize(self.normalizer, text)

    def pretokenize(self, text: str) -> list[str]:
        """The pretokens of ``text`` (normalized first), in the model's spelling: what
        ``pre_tokenize_str(normalize_str(text))`` gives (continuation mode). Added tokens are
        not split out here (see :meth:`split_added`)."""
        return pretokenize(self.pretokenizer, self.normalize(text))

    def split_added(self, text: str) -> list[tuple[str, int | None]]:
        """``text`` cut at the added tokens: ``(stretch, None)`` for ordinary text,
        ``(text, id)`` for an added token (leftmost, then longest)."""
        added = self.tables().added
        if added is None:
            return [(text, None)] if text else []
        ids = dict(self.added_tokens)
        out: list[tuple[str, int | None]] = []
        at = 0
        for m in added.finditer(text):
            if m.start() > at:
                out.append((text[at:m.start()], None))
            out.append((m.group(), ids[m.group()]))
            at = m.end()
        if at < len(text):
            out.append((text[at:], None))
        return out

    def initial_symbols(self, piece: str) -> list[int]:
        """The symbols BPE starts a pretoken from: one per character that is a piece, the
        ``<0xNN>`` tokens of its bytes with byte fallback, else the unknown token (fused with
        an unknown token before it when ``fuse_unk``); a character with none is dropped."""
        tables = self.tables()
        get = tables.pieces.get
        out: list[int] = []
        unk_before = False
        for ch in piece:
            i = get(ch)
            if i is not None:
                out.append(i)
                unk_before = False
                continue
            if self.byte_fallback:
                ids = [tables.byte_ids[b] for b in ch.encode("utf-8")]
                if None not in ids:
                    out.extend(ids)  # type: ignore[arg-type]
                    unk_before = False
                    continue
            if self.unk_id is not None:
                if not (self.fuse_unk and unk_before):
                    out.append(self.unk_id)
                unk_before = True
        return out

    def merge(self, symbols: Sequence[int]) -> list[int]:
        """``symbols`` after the merges alone (no ``ignore_merges`` shortcut)."""
        return merge(symbols, self.tables().merges)

    def encode_pretoken(self, piece: str) -> list[int]:
        """The model's tokens for one pretoken (model spelling)."""
        if self.ignore_merges:
            i = self.tables().pieces.get(piece)
            if i is not None:
                return [i]
        return self.merge(self.initial_symbols(piece))

    def encode(self, text: str) -> list[int]:
        """The token ids ``tokenizers`` gives ``text`` in continuation mode (no special tokens,
        no BOS, no prefix marker); :class:`~tokamata.Unsupported` unless :attr:`exact`.
        Cost: ``O(n log n)`` in ``len(text)``."""
        self.tables()
        out: list[int] = []
        for stretch, added in self.split_added(text):
            if added is not None:
                out.append(added)
                continue
            for piece in self.pretokenize(stretch):
                out.extend(self.encode_pretoken(piece))
        return out

    # ------------------------------------------------------------------------ tokens

    def is_byte_token(self, token_id: int) -> bool:
        """True for a byte-fallback ``<0xNN>`` token (of a model with byte fallback)."""
        return token_id in self.tables().byte_of

    def token_symbols(self, token_id: int) -> list[int]:
        """The initial symbols of a token's piece (``[token_id]`` for a byte token)."""
        tables = self.tables()
        if token_id in tables.byte_of:
            return [token_id]
        piece = tables.piece_of.get(token_id)
        return [] if piece is None else self.initial_symbols(piece)

    def token_text_bytes(self, token_id: int) -> bytes | None:
        """The bytes a token stands for in *normalized* text: byte-level pieces their bytes,
        SentencePiece pieces their UTF-8 (``▁`` stays ``▁``), byte tokens their byte."""
        tables = self.tables()
        b = tables.byte_of.get(token_id)
        if b is not None:
            return bytes([b])
        piece = tables.piece_of.get(token_id)
        return None if piece is None else self.piece_bytes(piece)

    def piece_bytes(self, piece: str) -> bytes | None:
        """The normalized-text bytes a piece spells: a byte-level piece its bytes (``None`` if
        a character is outside the byte alphabet), any other its UTF-8."""
        if self.kind == MODEL_BYTE_LEVEL:
            try:
                return bytes([CHAR_TO_BYTE[c] for c in piece])
            except KeyError:
                return None
        return piece.encode("utf-8")

    def bytes_piece(self, data: bytes) -> str:
        """The piece spelling of normalized-text bytes (inverse of :meth:`piece_bytes`;
        invalid UTF-8 of a non-byte-level model is replaced)."""
        if self.kind == MODEL_BYTE_LEVEL:
            return byte_level_spell(data)
        return data.decode("utf-8", "replace")


# --------------------------------------------------------------------- tokenizer.json


def _pairs(merges: Sequence[Any], source: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for rank, m in enumerate(merges):
        if isinstance(m, str):
            parts = m.split(" ")
            if len(parts) != 2:
                raise VocabularyError(f"{source!r}: merge {rank} {m!r:.60} is not two pieces "
                                      "separated by one space")
            out.append((parts[0], parts[1]))
        elif (isinstance(m, list) and len(m) == 2 and isinstance(m[0], str)
              and isinstance(m[1], str)):
            out.append((m[0], m[1]))
        else:
            raise VocabularyError(f"{source!r}: merge {rank} is {m!r:.60}, not 'a b' or [a, b]")
    return out


def model_from_tokenizer_json(data: Mapping[str, Any], kind: str, source: str,
                              limits: Limits) -> TokenizerModel:
    """The :class:`TokenizerModel` of a parsed ``tokenizer.json`` whose vocabulary the reader
    found to be of ``kind``. Cheap: the merge list is only counted here."""
    model = data["model"]
    model_type = str(model.get("type"))
    problems: list[tuple[str, str]] = []
    normalizer, found = parse_normalizer(data.get("normalizer"))
    problems += found
    pretokenizer, found = parse_pretokenizer(data.get("pre_tokenizer"))
    problems += found
    merges = model.get("merges")
    vocab = model.get("vocab")
    count = 0
    if model_type != "BPE":
        problems.insert(0, (f"model {model_type}", "only BPE models have a reproducible "
                            "canonical encoding here"))
    else:
        if not isinstance(merges, list):
            problems.insert(0, ("merges", "model.merges is missing or not a list"))
            merges = []
        count = len(merges)
        if count > limits.max_merges:
            raise LimitExceeded("max_merges", count, limits.max_merges)
        if model.get("dropout") not in (None, 0, 0.0):
            problems.append(("BPE dropout", "encoding with dropout is random"))
        for affix in ("continuing_subword_prefix", "end_of_word_suffix"):
            if model.get(affix):
                problems.append((f"BPE {affix}", f"{model.get(affix)!r}"))
    if kind == MODEL_BYTE_LEVEL and not any(isinstance(s, ByteLevelStep) for s in pretokenizer):
        problems.append(("pre_tokenizer", "a byte-level vocabulary without a ByteLevel "
                         "pre-tokenizer step"))
    added: list[tuple[str, int]] = []
    for entry in data.get("added_tokens") or ():
        if not isinstance(entry, dict) or entry.get("special"):
            continue
        content, i = entry.get("content"), entry.get("id")
        if not isinstance(content, str) or not isinstance(i, int):
            continue
        flags = [f for f in ("normalized", "lstrip", "rstrip", "single_word") if entry.get(f)]
        if flags:
            problems.append((f"added token {content!r:.40}", f"{', '.join(flags)} matching"))
        added.append((content, i))
    unk = model.get("unk_token")
    unk_id = vocab.get(unk) if isinstance(unk, str) and isinstance(vocab, dict) else None

    def load() -> Loaded:
        if not isinstance(vocab, dict):
            raise VocabularyError(f"{source!r}: model.vocab is not an object")
        return vocab, _pairs(merges, source)

    return TokenizerModel(
        model_type, kind, normalizer, pretokenizer,
        byte_fallback=bool(model.get("byte_fallback")),
        ignore_merges=bool(model.get("ignore_merges")),
        unk_id=unk_id if isinstance(unk_id, int) else None,
        fuse_unk=bool(model.get("fuse_unk")), added_tokens=tuple(added),
        unsupported=tuple(problems), merge_count=count, source=source, load=load)
