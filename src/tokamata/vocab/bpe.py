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
lists none (GGUF ``llama`` files), as transformers' converter does.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence

from ..errors import LimitExceeded, VocabularyError

__all__ = ["MergeTable", "build_merge_table", "merge", "merges_from_scores"]

#: ``(left id, right id) -> (rank, merged id)``
MergeTable = Mapping[tuple[int, int], tuple[int, int]]


def build_merge_table(merges: Iterable[tuple[str, str]], pieces: Mapping[str, int],
                      source: str) -> dict[tuple[int, int], tuple[int, int]]:
    """The merge table of ``merges`` (in rank order) over the vocabulary ``pieces``
    (piece -> id). :class:`VocabularyError` names a merge whose parts or result is no piece."""
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


def merges_from_scores(pieces: Sequence[str], scores: Sequence[float],
                       max_merges: int) -> list[tuple[str, str]]:
    """The merges of a SentencePiece-style vocabulary without a merge list, best first.

    Every way to cut a piece into two pieces of the vocabulary is a merge; merges are ordered
    by the score of the piece they make (higher first), then by the length of the left part,
    then of the right part (longer first); ties keep the order of the pieces in ``pieces``
    (first occurrence) and, within one piece, of the ids of its parts. This is the order
    transformers' converter (``generate_merges``) gives, so the encodings agree with the
    tokenizer transformers builds from the same file. A piece listed twice keeps its last id
    and its last score, as a Python dict built in order does. :class:`LimitExceeded`
    (``max_merges``) past ``max_merges`` merges.
    """
    ids: dict[str, int] = {}
    score_of: dict[str, float] = {}
    for i, (piece, score) in enumerate(zip(pieces, scores)):
        ids[piece] = i
        score_of[piece] = score
    found: list[tuple[float, int, int, int, str, str]] = []
    for order, (piece, score) in enumerate(score_of.items()):
        local = []
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            a, b = ids.get(left), ids.get(right)
            if a is not None and b is not None:
                local.append((a, b, left, right))
        local.sort()
        for a, b, left, right in local:
            found.append((score, len(left), len(right), len(found), left, right))
        if len(found) > max_merges:
            raise LimitExceeded("max_merges", len(found), max_merges)
    # higher score, longer left, longer right first; then the order found (a stable sort)
    found.sort(key=lambda m: (-m[0], -m[1], -m[2], m[3]))
    return [(m[4], m[5]) for m in found]
