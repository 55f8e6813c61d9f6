"""Seed 000, Appendix A: a grammar whose lexemes a token may straddle (``r(4``, ``(456)``).

Grammar ``start: FUNCTION "(" NUMBER ")"`` with ``FUNCTION: "foo" | "bar"`` and
``NUMBER: "123" | "456"`` over the appendix's vocabulary (multi-lexeme tokens ``o(``,
``(456)``, ``(123)``, ``r(4``; partial ones ``fo``, ``ba``; every single character), plus EOS.
The language is four sentences, so the expected masks are computed from the sentences
alone, never from tokamata:

- every tokenization of every sentence is allowed token by token and ends accepting, with
  EOS allowed then and only then;
- at every state reachable by consuming allowed tokens (all paths, BFS), the allowed set is
  exactly the tokens ``t`` with ``prefix + t`` a prefix of some sentence, plus EOS iff
  ``prefix`` is a sentence; ``fill_bitmask`` sets the same bits; a forbidden token is refused
  and leaves the matcher as it was.
"""

from __future__ import annotations

import numpy as np
import pytest

import tokamata
from tokamata import Vocabulary

GRAMMAR = '''
start: FUNCTION "(" NUMBER ")"
FUNCTION: "foo" | "bar"
NUMBER: "123" | "456"
'''

SENTENCES = (b"foo(123)", b"foo(456)", b"bar(123)", b"bar(456)")

TOKENS = (b"fo", b"o(", b"1", b"2", b"3", b")", b"bar", b"(456)", b"foo", b"(123)", b"ba",
          b"r(4", b"5", b"6", b"f", b"o", b"b", b"a", b"r", b"(", b"4", None)
EOS = len(TOKENS) - 1
TEXT_IDS = range(EOS)


@pytest.fixture(scope="module")
def constraint():
    vocab = Vocabulary.from_token_bytes(list(TOKENS), eos_token_ids=[EOS])
    return tokamata.compile_grammar(GRAMMAR, vocab)


def _tokenizations(text: bytes) -> list[tuple[int, ...]]:
    """Every way to spell ``text`` with the vocabulary's text tokens."""
    if not text:
        return [()]
    found = []
    for t in TEXT_IDS:
        if text.startswith(TOKENS[t]):
            found += [(t,) + rest for rest in _tokenizations(text[len(TOKENS[t]):])]
    return found


def _expected_allowed(prefix: bytes) -> set[int]:
    allowed = {t for t in TEXT_IDS if any(s.startswith(prefix + TOKENS[t]) for s in SENTENCES)}
    if prefix in SENTENCES:
        allowed.add(EOS)
    return allowed


def _bitmask_set(matcher) -> set[int]:
    bitmask = tokamata.allocate_bitmask(1, len(TOKENS))
    matcher.fill_bitmask(bitmask, 0)
    bits = np.unpackbits(bitmask.view(np.uint8), bitorder="little")[: len(TOKENS)]
    return set(np.flatnonzero(bits).tolist())


def test_the_vocabulary_spells_each_sentence_many_ways() -> None:
    counts = {s: len(_tokenizations(s)) for s in SENTENCES}
    assert counts == {b"foo(123)": 8, b"foo(456)": 8, b"bar(123)": 6, b"bar(456)": 8}
    assert (8, 7) in _tokenizations(b"foo(456)")  # foo (456)
    assert (0, 1, 2, 3, 4, 5) in _tokenizations(b"foo(123)")  # fo o( 1 2 3 )
    assert (10, 11, 12, 13, 5) in _tokenizations(b"bar(456)")  # ba r(4 5 6 )


@pytest.mark.parametrize("sentence", SENTENCES)
def test_every_tokenization_is_accepted(constraint, sentence: bytes) -> None:
    for ids in _tokenizations(sentence):
        matcher = constraint.matcher()
        for i, t in enumerate(ids):
            allowed = set(matcher.allowed_tokens().tolist())
            assert t in allowed, (sentence, ids, i)
            assert matcher.consume(t), (sentence, ids, i)
        assert matcher.is_accepting(), (sentence, ids)
        assert set(matcher.allowed_tokens().tolist()) == {EOS}, (sentence, ids)
        assert matcher.consume(EOS)
        assert matcher.is_terminated()


def test_masks_at_every_reachable_state_are_exact(constraint) -> None:
    frontier = [(constraint.matcher(), b"", ())]
    states = 0
    while frontier:
        matcher, prefix, path = frontier.pop()
        states += 1
        expected = _expected_allowed(prefix)
        allowed = set(matcher.allowed_tokens().tolist())
        assert allowed == expected, (prefix, path, sorted(allowed ^ expected))
        assert _bitmask_set(matcher) == expected, (prefix, path)
        assert matcher.is_accepting() == (prefix in SENTENCES), (prefix, path)
        for t in TEXT_IDS:
            if t not in expected:
                before = matcher.num_consumed
                assert not matcher.consume(t), (prefix, path, TOKENS[t])
                assert matcher.num_consumed == before
                continue
            child = matcher.copy()
            assert child.consume(t)
            frontier.append((child, prefix + TOKENS[t], path + (t,)))
    # one state per tokenization of each distinct prefix (the empty one included)
    prefixes = {s[:k] for s in SENTENCES for k in range(len(s) + 1)}
    assert states == sum(len(_tokenizations(p)) for p in prefixes)
