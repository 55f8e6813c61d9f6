"""Every tokenization of a text: the oracle of exact probability-mass tests (a test sums the
model's probability over these sequences and compares with tokamata's enumeration)."""

from __future__ import annotations


def tokenizations(vocab, text: bytes) -> list[list[int]]:
    """Every sequence of text tokens of ``vocab`` whose bytes concatenate to ``text`` (a dynamic
    program over end positions; special tokens, which spell nothing, are never part of one)."""
    by_bytes: dict[bytes, list[int]] = {}
    for i, b in enumerate(vocab.token_bytes):
        if b and len(b) <= len(text) and text.find(b) >= 0:
            by_bytes.setdefault(b, []).append(i)
    ways: list[list[list[int]]] = [[] for _ in range(len(text) + 1)]
    ways[0] = [[]]
    for end in range(1, len(text) + 1):
        for start in range(end):
            for t in by_bytes.get(text[start:end], []):
                ways[end].extend(w + [t] for w in ways[start])
    return ways[len(text)]
