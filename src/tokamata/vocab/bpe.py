"""Byte-pair merges: the merge table and the merge loop of one pretoken.

A merge table maps a pair of adjacent symbol ids ``(left, right)`` to ``(rank, merged id)``;
a lower rank merges first. :func:`merge` applies the table to a list of symbol ids the way
Hugging Face ``tokenizers`` does: repeatedly merge the adjacent pair of lowest rank, the
leftmost one among equal ranks, until no adjacent pair is in the table. It keeps the symbols
in a linked list and the candidate pairs in a heap (``(rank, position)``), so a word of ``n``
symbols costs ``O(n log n)``; a heap entry whose pair has changed since it was pushed is
skipped when popped (the same staleness test ``tokenizers`` makes).

:func:`build_merge_table` turns merges given as pairs of piece strings (``tokenizer.json`` or
GGUF order: rank = position) into ids; like ``tokenizers``, a pair listed twice keeps its last
rank. :func:`merges_from_scores` recovers the merges of a SentencePiece-style vocabulary that
lists none (GGUF ``llama`` and Gemma files), as transformers' converter does, vectorized
(numpy), as a :class:`DerivedMerges` whose table needs no piece lookups.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..errors import LimitExceeded, VocabularyError

__all__ = ["DerivedMerges", "MergeTable", "build_merge_table", "merge", "merges_from_scores"]

#: ``(left id, right id) -> (rank, merged id)``
MergeTable = Mapping[tuple[int, int], tuple[int, int]]


def build_merge_table(merges: Iterable[tuple[str, str]], pieces: Mapping[str, int],
                      source: str) -> dict[tuple[int, int], tuple[int, int]]:
    """The merge table of ``merges`` (in rank order) over the vocabulary ``pieces``
    (piece -> id). :class:`VocabularyError` names a merge whose parts or result is no piece.
    Merges derived over the same pieces (:class:`DerivedMerges`) carry their ids already."""
    if isinstance(merges, DerivedMerges):
        return merges.merge_table()
    table: dict[tuple[int, int], tuple[int, int]] = {}
    get = pieces.get
    for rank, (left, right) in enumerate(merges):
        a, b, c = get(left), get(right), get(left + right)
        if a is None or b is None or c is None:
            raise VocabularyError(f"{source!r}: merge {rank} ({left!r}, {right!r}) names a "
                                  "piece that is not in the vocabulary")
        table[a, b] = (rank, c)
    return table


def merge(symbols: Sequence[int], table: MergeTable,
          trace: list[tuple[int, int, int]] | None = None) -> list[int]:
    """``symbols`` after every merge of ``table`` (lowest rank first, leftmost first).
    ``trace``, when given, receives one ``(first symbol, last symbol, rank)`` per state the
    list goes through, ``rank`` being that of the merge that ends the state (``-1`` for the
    final state): what a merge across either end of the list competes with.

    >>> table = {(0, 1): (0, 3), (3, 2): (1, 4), (2, 2): (2, 5)}  # ab, abc, cc
    >>> merge([0, 1, 2, 2, 0, 1], table)
    [4, 2, 3]
    >>> trace = []
    >>> merge([0, 1, 2], table, trace), trace
    ([4], [(0, 2, 0), (3, 2, 1), (4, 4, -1)])
    """
    n = len(symbols)
    if n < 2:
        if trace is not None and n:
            trace.append((symbols[0], symbols[0], -1))
        return list(symbols)
    last = n - 1
    sym = list(symbols)
    nxt = list(range(1, n + 1))
    nxt[-1] = -1
    prv = list(range(-1, n - 1))
    alive = [True] * n
    get = table.get
    heap = []
    for i in range(n - 1):
        found = get((sym[i], sym[i + 1]))
        if found is not None:
            heap.append((found[0], i, sym[i], sym[i + 1], found[1]))
    heapq.heapify(heap)
    while heap:
        _rank, i, a, b, c = heapq.heappop(heap)
        if not alive[i] or sym[i] != a:
            continue
        j = nxt[i]
        if j < 0 or sym[j] != b:
            continue
        if trace is not None:
            trace.append((sym[0], sym[last], _rank))
            if j == last:
                last = i
        sym[i] = c
        alive[j] = False
        k = nxt[j]
        nxt[i] = k
        if k >= 0:
            prv[k] = i
            found = get((c, sym[k]))
            if found is not None:
                heapq.heappush(heap, (found[0], i, c, sym[k], found[1]))
        p = prv[i]
        if p >= 0:
            found = get((sym[p], c))
            if found is not None:
                heapq.heappush(heap, (found[0], p, sym[p], c, found[1]))
    if trace is not None:
        trace.append((sym[0], sym[last], -1))
    out = []
    i = 0
    while i >= 0:
        out.append(sym[i])
        i = nxt[i]
    return out


class DerivedMerges(Sequence[tuple[str, str]]):
    """Merges held as token ids (what :func:`merges_from_scores` returns): a sequence of
    ``(left, right)`` piece pairs in rank order, made on access, whose merge table
    (:meth:`merge_table`) is built from the ids without looking a piece up.
    :func:`build_merge_table` takes it from here."""

    __slots__ = ("pieces", "left", "right", "merged")

    def __init__(self, pieces: Sequence[str], left: Sequence[int], right: Sequence[int],
                 merged: Sequence[int]):
        self.pieces = pieces  # piece by id
        self.left, self.right, self.merged = left, right, merged  # ids, one per merge

    def __len__(self) -> int:
        return len(self.left)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self.pieces[self.left[index]], self.pieces[self.right[index]]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def merge_table(self) -> dict[tuple[int, int], tuple[int, int]]:
        """``(left id, right id) -> (rank, merged id)`` (each pair is listed once)."""
        left, right, merged = (np.asarray(x, dtype=np.int64).tolist() for x in (self.left, self.right, self.merged))
        return dict(zip(zip(left, right), zip(range(len(left)), merged)))


_HASH_BASE = 0x9E3779B97F4A7C15  # (odd: invertible modulo 2**64)
_HASH_LENGTH = 0xC2B2AE3D27D4EB4F


def merges_from_scores(pieces: Sequence[str], scores: Sequence[float],
                       max_merges: int) -> DerivedMerges:
    """The merges of a SentencePiece-style vocabulary without a merge list, best first.

    Every way to cut a piece into two pieces of the vocabulary is a merge; merges are ordered
    by the score of the piece they make (higher first), then by the length of the left part,
    then of the right part (longer first); ties keep the order of the pieces in ``pieces``
    (first occurrence). This is the order transformers' converter (``generate_merges``) gives,
    so the encodings agree with the tokenizer transformers builds from the same file. A piece
    listed twice keeps its last id and its last score, as a Python dict built in order does.
    :class:`LimitExceeded` (``max_merges``) past ``max_merges`` merges.

    How (vectorized with numpy: Gemma 3's 262,144 pieces have 1.2 million cuts and give
    514,906 merges in about half a second, where a loop over the cuts took seconds): the
    pieces' UTF-8 is one byte array; every cut at a character boundary is a row; each side's
    key (a polynomial hash mod ``2**64`` from prefix sums, with the byte length, mixed) is
    looked up among the whole pieces' keys, bucketed by their top bits, and every merge found
    is then compared byte for byte (a collision costs a comparison, never a wrong merge;
    pieces whose own keys collide are derived by the plain loop, :func:`_merges_by_loop`).

    >>> m = merges_from_scores(["a", "b", "c", "ab", "bc", "abc"], [0, 0, 0, -1, -2, -0.5], 10)
    >>> list(m)
    [('ab', 'c'), ('a', 'bc'), ('a', 'b'), ('b', 'c')]
    """
    if len(scores) != len(pieces):
        raise ValueError(f"{len(scores)} scores for {len(pieces)} pieces")
    ids: dict[str, int] = dict(zip(pieces, range(len(pieces))))  # (first place, last id)
    if not ids:
        return DerivedMerges(pieces, [], [], [])
    distinct = list(ids)
    last = np.fromiter(ids.values(), dtype=np.int64, count=len(distinct))
    chars = np.fromiter(map(len, distinct), dtype=np.int64, count=len(distinct))
    data = np.frombuffer("".join(distinct).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    starts = np.flatnonzero((data & 0xC0) != 0x80)  # byte offset of every character
    starts = np.append(starts, len(data))
    first_char = np.zeros(len(distinct) + 1, dtype=np.int64)
    np.cumsum(chars, out=first_char[1:])
    begin = starts[first_char[:-1]]  # byte offsets of each piece
    end = starts[first_char[1:]]
    # the cuts: piece k, j characters on the left (1 <= j < chars[k])
    cuts_of = np.maximum(chars - 1, 0)
    k = np.repeat(np.arange(len(distinct)), cuts_of)
    j = np.arange(len(k)) - np.repeat(np.cumsum(cuts_of) - cuts_of, cuts_of) + 1
    at = starts[first_char[k] + j]  # the cut's byte offset
    sums, inverse = _hash_tables(data)

    def key(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Bytes [a, b) -> their hash and length, mixed (splitmix64's finalizer, a bijection:
        short pieces' hashes are small numbers, and the buckets read the top bits)."""
        x = (sums[b] - sums[a]) * inverse[a] + (b - a).astype(np.uint64) * np.uint64(_HASH_LENGTH)
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
        return x

    whole = key(begin, end)
    order = np.argsort(whole, kind="stable")
    sorted_keys = whole[order]
    if len(sorted_keys) > 1 and bool((sorted_keys[1:] == sorted_keys[:-1]).any()):
        return _merges_by_loop(pieces, scores, max_merges)  # (two pieces share a key)
    # buckets by the keys' top bits (about 4 per piece): a query reads one or two entries
    shift = np.uint64(64 - max(1, min(len(sorted_keys) * 4, 1 << 26).bit_length()))
    bucket_start = np.searchsorted(sorted_keys >> shift, np.arange((1 << (64 - int(shift))) + 1, dtype=np.uint64))

    def find(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The distinct piece whose key is that of bytes [a, b) (-1: none; see verify)."""
        wanted = key(a, b)
        bucket = (wanted >> shift).astype(np.int64)
        lo, hi = bucket_start[bucket], bucket_start[bucket + 1]
        q = np.full(len(a), -1, dtype=np.int64)
        live = np.flatnonzero(hi > lo)
        while len(live):  # (the r-th entry of every bucket that has one, r = 0, 1, ...)
            at_key = lo[live]
            match = sorted_keys[at_key] == wanted[live]
            q[live[match]] = order[at_key[match]]
            lo[live] += 1
            live = live[~match & (lo[live] < hi[live])]
        return q

    def verify(a: np.ndarray, b: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Bytes [a, b) are exactly piece q's (byte for byte: keys may collide)."""
        n = b - a
        same = (end[q] - begin[q]) == n
        n = np.where(same, n, 0)
        offsets = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        differs = data[np.repeat(a, n) + offsets] != data[np.repeat(begin[q], n) + offsets]
        mismatches = np.bincount(np.repeat(np.arange(len(a)), n)[differs], minlength=len(a))
        return same & (mismatches == 0)

    left = find(begin[k], at)
    keep = np.flatnonzero(left >= 0)
    right = find(at[keep], end[k[keep]])
    keep, right = keep[right >= 0], right[right >= 0]
    exact = verify(begin[k[keep]], at[keep], left[keep]) & verify(at[keep], end[k[keep]], right)
    keep, right = keep[exact], right[exact]
    if len(keep) > max_merges:
        raise LimitExceeded("max_merges", len(keep), max_merges)
    k, j, left = k[keep], j[keep], left[keep]
    score = np.asarray(scores, dtype=np.float64)[last[k]] if len(keep) else np.zeros(0)
    # higher score, longer left, longer right, then the pieces' order (one cut per length)
    rank = np.lexsort((k, -(chars[k] - j), -j, -score))
    return DerivedMerges(pieces, last[left[rank]], last[right[rank]], last[k[rank]])


def _hash_tables(data) -> tuple:
    """For the byte array ``data``: per position ``x`` the prefix sum of ``(byte + 1) *
    base**y`` over ``y < x``, and ``base**-x`` (mod ``2**64``), so that bytes ``[a, b)`` hash
    to ``(sums[b] - sums[a]) * inverse[a]`` wherever they sit."""
    n = len(data)
    powers = np.empty(n + 1, dtype=np.uint64)
    inverse = np.empty(n + 1, dtype=np.uint64)
    powers[0] = inverse[0] = 1
    powers[1:] = _HASH_BASE
    inverse[1:] = pow(_HASH_BASE, -1, 1 << 64)
    np.multiply.accumulate(powers, out=powers)  # (uint64 arithmetic wraps: mod 2**64)
    np.multiply.accumulate(inverse, out=inverse)
    sums = np.zeros(n + 1, dtype=np.uint64)
    np.cumsum((data.astype(np.uint64) + np.uint64(1)) * powers[:n], out=sums[1:])
    return sums, inverse


def _merges_by_loop(pieces: Sequence[str], scores: Sequence[float], max_merges: int) -> DerivedMerges:
    """:func:`merges_from_scores` one cut at a time (for pieces whose hash keys collide)."""
    ids: dict[str, int] = {}
    score_of: dict[str, float] = {}
    for i, (piece, score) in enumerate(zip(pieces, scores)):
        ids[piece] = i
        score_of[piece] = score
    found: list[tuple[float, int, int, int, int, int, int]] = []
    for piece, score in score_of.items():
        local = []
        for cut in range(1, len(piece)):
            a, b = ids.get(piece[:cut]), ids.get(piece[cut:])
            if a is not None and b is not None:
                local.append((a, b, cut))
        local.sort()
        for a, b, cut in local:
            found.append((-score, -cut, cut - len(piece), len(found), a, b, ids[piece]))
        if len(found) > max_merges:
            raise LimitExceeded("max_merges", len(found), max_merges)
    found.sort()
    return DerivedMerges(pieces, [m[4] for m in found], [m[5] for m in found], [m[6] for m in found])
