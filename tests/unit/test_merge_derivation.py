"""The merges of a SentencePiece vocabulary without a merge list, derived from its scores
(``tokamata.vocab.bpe.merges_from_scores``, vectorized), against the plain loop it replaced
(:func:`reference`, the derivation as it was written first: every cut of every piece looked up
in a dict, then one sort).

- Synthetic vocabularies (hypothesis): pieces over a small alphabet with multi-byte and
  four-byte characters, repeated pieces (last id and last score win), tied scores: the same
  merges in the same order, and the same table once built.
- Real files: Llama 2's GGUF (61,249 merges) equal to the reference; Gemma 3's 514,906 merges
  hash to the table the reference derived (recorded below), and equal it in full (slow).
- The fallback for colliding hash keys (``_merges_by_loop``) equals the reference too.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import real_tokenizers as real
from tokamata import LimitExceeded
from tokamata.vocab import Vocabulary, bpe, gguf
from tokamata.vocab.bpe import _merges_by_loop, build_merge_table, merges_from_scores

#: sha256 of Gemma 3's merge table (rows (left, right, rank, merged) as int32, sorted) as
#: :func:`reference` derives it from the 270M GGUF's tokens
GEMMA3_TABLE_SHA256 = "71dc0f681daf7bb8f01fff2b3ab78c472c673be0e2a1c40a9ce2fbaf6373d3a9"


def reference(pieces, scores, max_merges):
    ids: dict[str, int] = {}
    score_of: dict[str, float] = {}
    for i, (piece, score) in enumerate(zip(pieces, scores)):
        ids[piece] = i
        score_of[piece] = score
    found = []
    for piece, score in score_of.items():
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
    found.sort(key=lambda m: (-m[0], -m[1], -m[2], m[3]))
    return [(m[4], m[5]) for m in found]


def table_sha256(table) -> str:
    rows = np.asarray(sorted((a, b, r, c) for (a, b), (r, c) in table.items()), dtype=np.int32)
    return hashlib.sha256(rows.tobytes()).hexdigest()


def file_pieces(path):
    """The pieces and scores the GGUF loader derives Gemma 3's / Llama 2's merges from."""
    vocab = Vocabulary.from_gguf(path)
    seen = {}
    real_derive = gguf.merges_from_scores
    try:
        gguf.merges_from_scores = lambda pieces, scores, limit: seen.setdefault("args", (list(pieces), list(scores)))
        vocab.tokenizer_model.load()
    finally:
        gguf.merges_from_scores = real_derive
    return seen["args"]


ALPHABET = ["a", "b", "c", "▁", "é", "日", "𒀀", "\ufffd"]
pieces_st = st.lists(st.text(st.sampled_from(ALPHABET), min_size=1, max_size=6), min_size=1, max_size=60)


@settings(max_examples=300, deadline=None)
@given(pieces_st, st.data())
def test_same_merges_as_the_loop(pieces, data):
    pieces = pieces + sorted(set("".join(pieces)))  # (every character is a piece, as in a real vocabulary)
    scores = data.draw(st.lists(st.sampled_from([0.0, -1.0, -1.5, -2.0, -7.25]),
                                min_size=len(pieces), max_size=len(pieces)))
    expected = reference(pieces, scores, 10_000)
    got = merges_from_scores(pieces, scores, 10_000)
    assert list(got) == expected
    assert list(_merges_by_loop(pieces, scores, 10_000)) == expected
    ids = dict(zip(pieces, range(len(pieces))))
    assert build_merge_table(got, ids, "x") == build_merge_table(expected, ids, "x")


def test_limit():
    pieces, scores = ["a", "b", "ab", "ba", "aba"], [0.0, 0.0, -1.0, -2.0, -3.0]
    assert len(reference(pieces, scores, 10)) == 4
    for derive in (merges_from_scores, _merges_by_loop):
        assert len(derive(pieces, scores, 4)) == 4
        with pytest.raises(LimitExceeded) as info:
            derive(pieces, scores, 3)
        assert info.value.limit == "max_merges"


def test_llama2_gguf_equals_the_loop():
    pieces, scores = file_pieces(real.ggml_vocab_path("llama-spm"))
    got = merges_from_scores(pieces, scores, 10**7)
    assert len(got) == 61_249 and list(got) == reference(pieces, scores, 10**7)


def test_gemma3_table_is_unchanged():
    pieces, scores = file_pieces(real.gemma3_model_path())
    got = merges_from_scores(pieces, scores, 10**7)
    table = build_merge_table(got, dict(zip(pieces, range(len(pieces)))), "gemma3")
    assert len(table) == 514_906 and table_sha256(table) == GEMMA3_TABLE_SHA256


@pytest.mark.slow
def test_gemma3_equals_the_loop():
    pieces, scores = file_pieces(real.gemma3_model_path())
    assert list(merges_from_scores(pieces, scores, 10**7)) == reference(pieces, scores, 10**7)
