"""Property checks of canonical masks shared by the canonical test files (byte-level BPE in
tests/unit/test_canonical_masks.py, SentencePiece in tests/unit/test_canonical_sentencepiece.py),
each against the tokenizer's own encodings (``tokenizer.encode``, the ``tokenizers`` library).

- :func:`check_encodings_accepted` (completeness): the encoding of any text of the language
  (hypothesis strings of ``texts``) walks to EOS.
- :func:`check_walks_are_encodings` (soundness): a random walk through the masks, ended by EOS,
  is the encoding of its own text, and never meets an empty mask.
- :func:`compile_canonical`: a regex, Lark grammar or JSON Schema compiled with canonical=True.
- :func:`check_masks_along_trie` (exact, finite languages): at every node of the trie of the
  encodings, the mask is exactly that node's next tokens (EOS where an encoding ends).
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def check_encodings_accepted(constraint, tokenizer, texts: str, examples: int) -> None:
    eos = tokenizer.vocab.eos_token_ids[0]

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.from_regex(texts, fullmatch=True))
    def run(text):
        ids = tokenizer.encode(text)
        m = constraint.matcher()
        assert m.consume_many(ids) == len(ids), (text, ids)
        assert m.is_accepting() and m.consume(eos), text

    run()


def check_walks_are_encodings(constraint, tokenizer, seed: int, walks: int) -> None:
    vocab = tokenizer.vocab
    eos = set(vocab.eos_token_ids)
    rng = random.Random(seed)
    for _ in range(walks):
        m = constraint.matcher()
        walk: list[int] = []
        while True:
            allowed = m.allowed_tokens().tolist()
            assert allowed, walk  # (never a dead end)
            # lean to long tokens, and to EOS once it is allowed, to keep walks short
            t = next((e for e in allowed if e in eos), None) if rng.random() < 0.3 else None
            if t is None:
                k = 4 if rng.random() < 0.5 else 1
                t = max(rng.sample(allowed, min(k, len(allowed))), key=lambda i: len(vocab.token_bytes[i] or b""))
            assert m.consume(t)
            if t in eos:
                break
            walk.append(t)
        text = vocab.decode(walk).decode("utf-8")
        assert tokenizer.encode(text) == walk, text


def encoding_trie(tokenizer, strings: list[str]) -> dict[tuple[int, ...], set[int]]:
    """node (a prefix of some encoding) -> its next tokens, with -1 for "an encoding ends"."""
    trie: dict[tuple[int, ...], set[int]] = {}
    for s in strings:
        ids = tuple(tokenizer.encode(s))
        for k in range(len(ids)):
            trie.setdefault(ids[:k], set()).add(ids[k])
        trie.setdefault(ids, set()).add(-1)
    return trie


def check_masks_along_trie(matcher, trie, vocab, what) -> list[tuple[int, ...]]:
    """Walk every node of ``trie`` (token prefix -> next tokens, -1 for the end: the encodings
    of a finite language) from ``matcher``'s start: the allowed tokens are exactly the node's
    (EOS ids for -1) and the position accepts exactly there. ``what`` names the case in
    failures. Returns the nodes where an encoding ends."""
    eos = set(vocab.eos_token_ids)
    ends = []
    pending: list[tuple[int, ...]] = [()]
    while pending:
        node = pending.pop()
        walk = matcher.copy()
        walk.rollback(walk.num_consumed)
        assert walk.consume_many(node) == len(node)
        expected = {t for t in trie[node] if t >= 0} | (eos if -1 in trie[node] else set())
        got = set(walk.allowed_tokens().tolist())
        assert got == expected, (what, node, [vocab.token_bytes[t] for t in sorted(got ^ expected) if t not in eos])
        assert walk.is_accepting() == (-1 in trie[node])
        if -1 in trie[node]:
            ends.append(node)
        pending.extend(node + (t,) for t in trie[node] if t >= 0)
    return ends


def compile_canonical(kind: str, spec, vocab):
    """``spec`` (``kind``: "regex", "grammar", else a JSON Schema) compiled with canonical=True."""
    import tokamata

    if kind == "regex":
        return tokamata.compile_regex(spec, vocab, canonical=True)
    if kind == "grammar":
        return tokamata.compile_grammar(spec, vocab, canonical=True)
    return tokamata.compile_json_schema(spec, vocab, canonical=True)
