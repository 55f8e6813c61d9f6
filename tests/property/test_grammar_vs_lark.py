"""tokamata's grammar masks against lark, on real tokenizers, for the corpus in
tests/data/grammars/ (lark's Earley with ``lexer="dynamic_complete"`` is the reference).

- Completeness: sentences from tests/grammar_samples.py (each parsed by lark), encoded by the
  real tokenizer and also cut into random vocabulary tokens, are allowed token by token and
  end accepting with EOS allowed.
- Soundness: seeded random walks through the mask (EOS taken with growing probability; the
  class of a token's first byte drawn uniformly, then short tokens preferred): a walk ended
  by EOS decodes to UTF-8 text lark parses; a walk cut by its step budget (extended by a few
  steps to finish a UTF-8 character) decodes to an exact prefix of some sentence
  (tests/lark_prefix.py), and the matcher is accepting exactly when lark parses the text.
  Where a walk stops (cut or EOS), a sample of one-byte tokens is also checked both ways
  against the prefix oracle (allowed iff text + byte is still a prefix).
- Hand-written examples (accepted and rejected, ``grammar_samples.EXAMPLES``) replayed over
  a one-byte-per-token vocabulary: the matcher refuses the first byte exactly where lark says
  the text stops being a prefix (checked at character boundaries), and accepts at the end
  exactly when lark parses the text.

``make test`` runs llama3 on a small sample; the ``slow`` sweep adds Gemma 3 and more.
"""

from __future__ import annotations

import codecs
import functools
import random
import zlib

import numpy as np
import pytest

import real_tokenizers
import tokamata
from grammar_samples import EXAMPLES, GRAMMAR_NAMES, SentenceGenerator, grammar_text
from lark_prefix import PrefixOracle

TOKENIZERS = {"llama3": real_tokenizers.llama3, "gemma3": real_tokenizers.gemma3}


@functools.lru_cache(maxsize=None)
def _constraint(tokenizer: str, grammar: str):
    return tokamata.compile_grammar(grammar_text(grammar), TOKENIZERS[tokenizer]().vocab)


@functools.lru_cache(maxsize=None)
def _oracle(grammar: str) -> PrefixOracle:
    return PrefixOracle(grammar_text(grammar))


@functools.lru_cache(maxsize=None)
def _token_lengths(tokenizer: str) -> np.ndarray:
    vocab = TOKENIZERS[tokenizer]().vocab
    return np.array([len(b) if b else 0 for b in vocab.token_bytes], dtype=np.float64)


def _seed(*parts: object) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def _contains(sorted_ids: np.ndarray, token: int) -> bool:
    i = int(np.searchsorted(sorted_ids, token))
    return i < len(sorted_ids) and int(sorted_ids[i]) == token


# --------------------------------------------------------------------------- completeness


@functools.lru_cache(maxsize=None)
def _ids_by_bytes(tokenizer: str) -> dict[bytes, int]:
    vocab = TOKENIZERS[tokenizer]().vocab
    eos = set(vocab.eos_token_ids)
    found: dict[bytes, int] = {}
    for i, b in enumerate(vocab.token_bytes):
        if b and i not in eos:
            found.setdefault(bytes(b), i)
    return found


def _random_segmentation(tokenizer: str, data: bytes, rng: random.Random) -> list[int] | None:
    """``data`` cut into random vocabulary tokens (any that fits, not the encoder's choice),
    so tokens that straddle lexemes or split characters show up; None if some byte has no
    token."""
    ids_by_bytes = _ids_by_bytes(tokenizer)
    ids = []
    at = 0
    while at < len(data):
        fits = [data[at:at + k] for k in range(1, min(24, len(data) - at) + 1)
                if data[at:at + k] in ids_by_bytes]
        if not fits:
            return None
        piece = rng.choice(fits)
        ids.append(ids_by_bytes[piece])
        at += len(piece)
    return ids


def _accept_ids(tokenizer: str, grammar: str, text: str, ids: list[int], how: str) -> None:
    vocab = TOKENIZERS[tokenizer]().vocab
    matcher = _constraint(tokenizer, grammar).matcher()
    where = f"{tokenizer}/{grammar} ({how})"
    for step, token in enumerate(ids):
        allowed = matcher.allowed_tokens()
        assert _contains(allowed, token), (
            f"{where}: token {token} {vocab.token_bytes[token]!r} forbidden at step {step} of "
            f"{text!r} after {b''.join(vocab.token_bytes[i] for i in ids[:step])!r}; ids {ids}")
        assert matcher.consume(token), (where, text, step, token)
    assert matcher.is_accepting(), f"{where}: {text!r} ends not accepting; ids {ids}"
    eos = [t for t in vocab.eos_token_ids if _contains(matcher.allowed_tokens(), t)]
    assert eos, f"{where}: no EOS allowed after {text!r}"
    assert matcher.consume(eos[0]) and matcher.is_terminated()


def _check_sentences(tokenizer: str, grammar: str, count: int, seed: int) -> None:
    tok = TOKENIZERS[tokenizer]()
    generator = SentenceGenerator(grammar_text(grammar))
    rng = random.Random(seed)
    encoded = 0
    for text in generator.sentences(count, seed):
        data = text.encode()
        ids = tok.encode(text)
        if b"".join(tok.vocab.token_bytes[i] for i in ids) == data:
            encoded += 1  # else the tokenizer normalizes this text: its ids do not spell it
            _accept_ids(tokenizer, grammar, text, ids, "encoder")
        segmented = _random_segmentation(tokenizer, data, rng)
        if segmented is not None:
            _accept_ids(tokenizer, grammar, text, segmented, "random segmentation")
    assert encoded >= count * 3 // 4, f"{tokenizer} round-trips only {encoded} of {count} sentences"
    assert generator.discards <= max(2, generator.attempts // 20), generator.rejected


@pytest.mark.parametrize("grammar", GRAMMAR_NAMES)
def test_sentences_are_accepted_llama3(grammar: str) -> None:
    _check_sentences("llama3", grammar, count=24, seed=_seed("complete", grammar))


@pytest.mark.slow
@pytest.mark.parametrize("tokenizer", sorted(TOKENIZERS))
@pytest.mark.parametrize("grammar", GRAMMAR_NAMES)
def test_sentences_are_accepted_sweep(tokenizer: str, grammar: str) -> None:
    _check_sentences(tokenizer, grammar, count=150, seed=_seed("sweep", tokenizer, grammar))


# ------------------------------------------------------------------------------ soundness


def _utf8_complete(data: bytes) -> bool:
    """True if ``data`` is valid UTF-8 ending on a character boundary; raises
    ``UnicodeDecodeError`` if it is not a prefix of valid UTF-8 at all."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    decoder.decode(data, final=False)
    return decoder.getstate()[0] == b""


@functools.lru_cache(maxsize=None)
def _first_byte_classes(tokenizer: str) -> np.ndarray:
    """Per token, the class of its first byte: the byte itself for ASCII punctuation, else one
    class each for letters, digits, whitespace, non-ASCII and empty tokens."""
    table = np.arange(256, dtype=np.int32)
    for b in range(256):
        ch = chr(b)
        if b >= 0x80:
            table[b] = 259
        elif ch.isalpha():
            table[b] = 256
        elif ch.isdigit():
            table[b] = 257
        elif ch.isspace():
            table[b] = 258
    vocab = TOKENIZERS[tokenizer]().vocab
    return np.array([table[b[0]] if b else 260 for b in vocab.token_bytes], dtype=np.int32)


def _pick(rng: random.Random, allowed: np.ndarray, lengths: np.ndarray, classes: np.ndarray) -> int:
    """A class of first byte uniformly (so punctuation is as likely as the many name tokens),
    then a token of that class: uniformly half the time, else weighted by 1/len^2."""
    kinds = classes[allowed]
    choices = np.unique(kinds)
    allowed = allowed[kinds == choices[rng.randrange(len(choices))]]
    if rng.random() < 0.5:
        return int(allowed[rng.randrange(len(allowed))])
    cumulative = np.cumsum(1.0 / np.maximum(lengths[allowed], 1.0) ** 2)
    index = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
    return int(allowed[min(index, len(allowed) - 1)])


def _walk(tokenizer: str, grammar: str, seed: int, steps: int, probes: int) -> str:
    """One random walk of at most ``steps`` tokens (the budget itself is drawn, so walks stop
    at many depths); returns "eos" or "cut" (for the caller's tally)."""
    vocab = TOKENIZERS[tokenizer]().vocab
    constraint = _constraint(tokenizer, grammar)
    oracle = _oracle(grammar)
    lengths = _token_lengths(tokenizer)
    classes = _first_byte_classes(tokenizer)
    eos = np.array(sorted(vocab.eos_token_ids), dtype=np.int32)
    rng = random.Random(seed)
    steps = rng.randint(1, steps)
    matcher = constraint.matcher()
    data = b""
    path: list[int] = []
    where = f"{tokenizer}/{grammar} seed {seed}"
    for step in range(steps + 8):
        allowed = matcher.allowed_tokens()
        assert len(allowed), f"{where}: nothing allowed after {data!r} (path {path})"
        eos_allowed = np.isin(eos, allowed)
        if eos_allowed.any() and rng.random() < min(0.9, 0.15 + step / steps):
            text = data.decode("utf-8")  # strict: EOS after a partial character is a bug
            assert oracle.accepts(text), f"{where}: EOS allowed but lark rejects {text!r} (path {path})"
            _probe_single_bytes(tokenizer, matcher, text, oracle, rng, probes, where)
            assert matcher.consume(int(eos[eos_allowed][0])) and matcher.is_terminated()
            return "eos"
        if step >= steps and _utf8_complete(data):
            break
        text_ids = allowed[~np.isin(allowed, eos)]
        assert len(text_ids), f"{where}: only EOS allowed but not accepting? {data!r}"
        token = _pick(rng, text_ids, lengths, classes)
        assert matcher.consume(token), f"{where}: allowed token {token} refused after {data!r}"
        path.append(token)
        data += vocab.token_bytes[token]
        _utf8_complete(data)  # raises on bytes that can never be UTF-8
    if not _utf8_complete(data):
        return "cut"  # still inside a character after 8 more steps: nothing exact to ask
    text = data.decode("utf-8")
    assert oracle.is_prefix(text), f"{where}: {text!r} is no prefix of any sentence (path {path})"
    assert matcher.is_accepting() == oracle.accepts(text), (
        f"{where}: is_accepting() is {matcher.is_accepting()} after {text!r}")
    _probe_single_bytes(tokenizer, matcher, text, oracle, rng, probes, where)
    return "cut"


@functools.lru_cache(maxsize=None)
def _single_byte_tokens(tokenizer: str) -> tuple[tuple[int, str], ...]:
    """(id, character) of one token per printable ASCII character (plus tab, newline)."""
    vocab = TOKENIZERS[tokenizer]().vocab
    found: dict[str, int] = {}
    for i, b in enumerate(vocab.token_bytes):
        if b and len(b) == 1 and (0x20 <= b[0] < 0x7F or b in (b"\t", b"\n")):
            found.setdefault(b.decode(), i)
    return tuple(sorted((i, ch) for ch, i in found.items()))


def _probe_single_bytes(tokenizer: str, matcher, text: str, oracle: PrefixOracle,
                        rng: random.Random, probes: int, where: str) -> None:
    candidates = _single_byte_tokens(tokenizer)
    allowed = set(matcher.allowed_tokens().tolist())
    for token, ch in rng.sample(candidates, min(probes, len(candidates))):
        expected = oracle.is_prefix(text + ch)
        assert (token in allowed) == expected, (
            f"{where}: after {text!r}, {ch!r} is {'allowed' if token in allowed else 'forbidden'} "
            f"but lark says prefix={expected}")


def _check_walks(tokenizer: str, grammar: str, walks: int, steps: int, probes: int) -> None:
    outcomes = [_walk(tokenizer, grammar, _seed("walk", tokenizer, grammar, w), steps, probes)
                for w in range(walks)]
    assert len(outcomes) == walks


@pytest.mark.parametrize("grammar", GRAMMAR_NAMES)
def test_random_walks_stay_in_the_language_llama3(grammar: str) -> None:
    _check_walks("llama3", grammar, walks=16, steps=24, probes=8)


@pytest.mark.slow
@pytest.mark.parametrize("tokenizer", sorted(TOKENIZERS))
@pytest.mark.parametrize("grammar", GRAMMAR_NAMES)
def test_random_walks_sweep(tokenizer: str, grammar: str) -> None:
    _check_walks(tokenizer, grammar, walks=40, steps=30, probes=12)


# ------------------------------------------------------------------ examples, byte by byte

BYTE_EOS = 256


@functools.lru_cache(maxsize=None)
def _byte_constraint(grammar: str):
    vocab = tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None],
                                                  eos_token_ids=[BYTE_EOS])
    return tokamata.compile_grammar(grammar_text(grammar), vocab)


@pytest.mark.parametrize("grammar", GRAMMAR_NAMES)
def test_examples_byte_by_byte(grammar: str) -> None:
    oracle = _oracle(grammar)
    accepted, rejected = EXAMPLES[grammar]
    for text in accepted + rejected:
        matcher = _byte_constraint(grammar).matcher()
        refused_at = None  # character index of the first character the matcher refuses
        for k, ch in enumerate(text):
            if not all(matcher.consume(b) for b in ch.encode()):
                refused_at = k
                break
        if refused_at is None:
            assert oracle.is_prefix(text), f"{grammar}: the matcher consumed all of {text!r}"
            assert matcher.is_accepting() == oracle.accepts(text), (
                f"{grammar}: is_accepting() is {matcher.is_accepting()} at the end of {text!r}")
            eos_allowed = _contains(matcher.allowed_tokens(), BYTE_EOS)
            assert eos_allowed == oracle.accepts(text), (grammar, text)
        else:
            assert oracle.is_prefix(text[:refused_at]), (grammar, text, refused_at)
            assert not oracle.is_prefix(text[:refused_at + 1]), (
                f"{grammar}: the matcher refuses {text[refused_at]!r} after {text[:refused_at]!r}, "
                "which lark continues")
