"""The canonical filter in C++: the same filter as
:class:`~tokamata.vocab.canonical_filter.CanonicalFilter`, run natively, for the tokenizers it
can follow; :func:`canonical_filter` picks it or keeps the Python filter.

Strategy (explicit): byte-level BPE whose split pattern is one of the families of
:func:`~tokamata.vocab.pretoken_region.region_family` (GPT-2, Llama 3, Qwen 2), no normalizer,
runs natively (``cpp/src/canonical_filter.cpp``: the same states, steps, liveness search and
limit, rows cached per (engine position, filter state), the GIL released), unless its added
texts use more ASCII characters than the native character keys hold (64). Every other
tokenizer the Python filter accepts keeps the Python filter (which stays the test oracle:
``tests/unit/test_canonical_native.py`` compares the two masks on random walks).

What crosses to C++ is plain data computed here once per tokenizer model: token bytes, the
pieces as bytes, the merges in rank order, the byte symbols, a code point class table
(``\\p{L}``, ``\\p{N}``, ``\\s`` as the ``regex`` module reads them, as ranges) and the
non-special added tokens. A filter state is an ``int`` (0: nothing open).

Token healing (a matcher with a ``prefix``) runs on the Python filter
(:meth:`NativeCanonicalFilter.for_prefix`): the C++ filter's positions are the constraint's.

Invariants: :class:`NativeCanonicalFilter` answers exactly what the Python filter answers
(``allowed``, ``accepts``, ``complete``; ``LimitExceeded`` from the same limit);
:func:`native_tokenizer` is built once per model (thread-safe, kept while the model lives).
"""

from __future__ import annotations

import functools
import threading
import weakref
from typing import Any

import numpy as np

from . import _core
from .limits import Limits
from .vocab.canonical_filter import CanonicalFilter
from .vocab.pretokenize import byte_level_spell, compiled
from .vocab.tokenizer_model import MODEL_BYTE_LEVEL, TokenizerModel
from .vocab.vocabulary import Vocabulary

__all__ = ["NativeCanonicalFilter", "canonical_filter", "native_tokenizer"]

#: pretokenizer families the native filter follows (cpp CanonicalFamily)
NATIVE_FAMILIES = {"gpt-2": 0, "llama3": 1, "qwen2": 2}

_LOCK = threading.Lock()
_TOKENIZERS: "weakref.WeakKeyDictionary[TokenizerModel, Any]" = weakref.WeakKeyDictionary()


@functools.lru_cache(maxsize=1)
def _classes() -> np.ndarray:
    """Code point ranges ``(start, end, bits)``: 1 ``\\p{L}``, 2 ``\\p{N}``, 4 ``\\s`` (disjoint),
    as flat int32, sorted by start."""
    every = "".join(map(chr, range(0x110000)))
    rows: list[tuple[int, int, int]] = []
    for pattern, bit in ((r"\p{L}+", 1), (r"\p{N}+", 2), (r"\s+", 4)):
        rows.extend((m.start(), m.end(), bit) for m in compiled(pattern).finditer(every))
    rows.sort()
    return np.asarray(rows, dtype=np.int32).reshape(-1)


def _flat(items: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in items], out=offsets[1:])
    return np.frombuffer(b"".join(items), dtype=np.uint8).copy(), offsets


def native_tokenizer(vocab: Vocabulary, family: str) -> Any:
    """The native tables of ``vocab``'s tokenizer model (built once per model)."""
    model = vocab.exact_tokenizer()
    with _LOCK:
        found = _TOKENIZERS.get(model)
        if found is not None:
            return found
    tables = model.tables()
    names = vocab.token_bytes
    token_bytes, token_offsets = _flat([b or b"" for b in names])
    has = np.asarray([b is not None for b in names], dtype=np.uint8)
    pieces = [(model.piece_bytes(p), i) for p, i in tables.pieces.items()]
    known: list[tuple[bytes, int]] = [(b, i) for b, i in pieces if b is not None]
    piece_bytes, piece_offsets = _flat([b for b, _ in known])
    piece_ids = np.asarray([i for _, i in known], dtype=np.int32)
    merges = sorted((rank, a, b, c) for (a, b), (rank, c) in tables.merges.items())
    merge_rows = np.asarray([(a, b, c) for _, a, b, c in merges], dtype=np.int32).reshape(-1)
    byte_symbols = np.asarray([tables.pieces.get(byte_level_spell(bytes([b])), -1) for b in range(256)],
                              dtype=np.int32)
    added = [(t.encode("utf-8"), i) for t, i in model.added_tokens if t]
    added_bytes, added_offsets = _flat([b for b, _ in added])
    added_ids = np.asarray([i for _, i in added], dtype=np.int32)
    eos = np.asarray(sorted(vocab.eos_token_ids), dtype=np.int32)
    built = _core.CanonicalTokenizer(NATIVE_FAMILIES[family], bool(model.ignore_merges), token_bytes, token_offsets,
                                     has, piece_bytes, piece_offsets, piece_ids, merge_rows, byte_symbols,
                                     _classes(), added_bytes, added_offsets, added_ids, eos)
    with _LOCK:
        return _TOKENIZERS.setdefault(model, built)


class NativeCanonicalFilter:
    """:class:`~tokamata.vocab.canonical_filter.CanonicalFilter`'s methods over the C++ filter
    of one constraint (states are ints; module docstring).

    >>> # (needs a real tokenizer: see tests/unit/test_canonical_native.py)
    """

    initial_state = 0

    def __init__(self, python: CanonicalFilter, constraint_core: Any):
        #: the Python filter it runs natively (the filter of healed matchers: for_prefix)
        self.python = python
        self.vocab = python.vocab
        self.limits: Limits = python.limits
        self.token_bytes = python.token_bytes
        self.eos = python.eos
        self.native = _core.CanonicalFilter(native_tokenizer(python.vocab, python.family), constraint_core,
                                            int(python.limits.max_canonical_search))

    def for_prefix(self, prefix: bytes) -> CanonicalFilter | NativeCanonicalFilter:
        """``self`` without a prefix; with one (token healing), the Python filter's
        :meth:`~tokamata.vocab.canonical_filter.CanonicalFilter.for_prefix`: the C++ filter
        reads masks and advances from the constraint (``ConstraintCore::mask`` / ``advance``),
        which do not know a matcher's prefix positions (``MatcherCore::prefix_mask`` /
        ``advance_prefix``), and its states cannot be made from the Python filter's."""
        return self if not prefix else self.python.for_prefix(prefix)

    def allowed(self, core: Any, state: int) -> list[int]:
        """The engine's allowed tokens that keep the sequence a canonical prefix, sorted."""
        return self.native.allowed(core, state)

    def accepts(self, core: Any, state: int, token: int) -> int | None:
        """The state after ``token`` if the filter allows it here, else ``None``."""
        after = self.native.accept(core, state, token)
        return None if after < 0 else after

    def complete(self, state: int) -> bool:
        """The open text encodes to exactly the open tokens."""
        return self.native.complete(state)

    def fill_row(self, core: Any, state: int, bitmask: Any, index: int) -> None:
        """Row ``index`` of ``bitmask``: the canonical allowed tokens at ``core``'s position."""
        self.native.fill(core, state, bitmask, index)


def canonical_filter(python: CanonicalFilter, constraint_core: Any) -> CanonicalFilter | NativeCanonicalFilter:
    """The filter a constraint's matchers use: native when the tokenizer's family is in
    :data:`NATIVE_FAMILIES`, else ``python`` itself."""
    family = getattr(python, "family", None)
    if family in NATIVE_FAMILIES and not python.model.normalizer and python.model.kind == MODEL_BYTE_LEVEL:
        try:
            return NativeCanonicalFilter(python, constraint_core)
        except ValueError:  # (added texts spelled with more characters than the native keys hold)
            pass
    return python
