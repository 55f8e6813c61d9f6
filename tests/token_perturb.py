"""Texts and token-sequence perturbations for the canonicality tests (shared helpers).

``TEXTS`` is a hypothesis strategy for strings that stress pre-tokenizers and merges: words
in several scripts, digit runs of every length, whitespace runs with newlines and tabs,
punctuation, English contractions in both cases, emoji (with modifiers and ZWJ), combining
marks. ``perturb`` rewrites a token sequence into another that decodes to the *same bytes*:
split a token into two tokens that spell it, merge two neighbours into the token that spells
both, move the boundary between two neighbours, or spell a token in byte-fallback tokens. A
perturbed sequence of a canonical one is canonical iff it is unchanged.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from hypothesis import strategies as st

from tokamata.vocab import Vocabulary

_SCRIPTS = ["abcxyzABCXYZ", "éüßñçÉ", "αβγδΩλ", "жщЯёд", "世界中文字", "한국어말", "مرحبا",
            "नमस्ते", "ſK"]
_WORD = st.sampled_from(_SCRIPTS).flatmap(lambda s: st.text(st.sampled_from(s), min_size=1,
                                                                 max_size=8))
_DIGITS = st.integers(1, 14).flatmap(lambda n: st.text(st.sampled_from("0123456789"),
                                                        min_size=n, max_size=n))
_SPACES = [" ", " ", " ", "\n", "\t", "\r\n", "\u00a0", "\u3000", "\x0b", "\x0c", "\x85",
           "\u2028"]
_SPACE = st.lists(st.sampled_from(_SPACES), min_size=1, max_size=6).map("".join)
_PUNCT = st.text(st.sampled_from(list(".,;:!?'\"()[]{}<>-_/\\@#$%^&*+=~`|")), min_size=1,
                 max_size=4)
_CONTRACTIONS = ["'s", "'S", "'ll", "'LL", "'re", "'Re", "'ve", "'m", "'d",
                 "'t", "'T", "n't", "'ſ"]
_CONTRACTION = st.sampled_from(_CONTRACTIONS)
_SYMBOLS = ["🎉", "👍🏽", "❤️", "🇫🇷", "👨‍👩‍👧", "🤖", "e\u0301", "\u0301", "a\u0308\u0323",
            "\u0915\u094d\u0937", "٣", "²", "½", "Ⅻ", "\u200b", "\ufeff", "▁"]
_EMOJI = st.sampled_from(_SYMBOLS[:6])
_MARKS = st.sampled_from(_SYMBOLS[6:10])
_OTHER = st.sampled_from(_SYMBOLS[10:])

#: texts that stress pre-tokenizers and merges (see the module docstring)
TEXTS = st.lists(st.one_of(_WORD, _WORD, _DIGITS, _SPACE, _PUNCT, _CONTRACTION, _EMOJI,
                           _MARKS, _OTHER), max_size=12).map("".join)


def random_text(rng: random.Random) -> str:
    """A text like those of :data:`TEXTS`, from ``rng`` (for sweeps outside hypothesis)."""
    parts = []
    for _ in range(rng.randrange(13)):
        kind = rng.randrange(7)
        if kind <= 1:
            script = rng.choice(_SCRIPTS)
            parts.append("".join(rng.choice(script) for _ in range(rng.randint(1, 8))))
        elif kind == 2:
            parts.append("".join(rng.choice("0123456789") for _ in range(rng.randint(1, 14))))
        elif kind == 3:
            parts.append("".join(rng.choice(_SPACES) for _ in range(rng.randint(1, 6))))
        elif kind == 4:
            parts.append("".join(rng.choice(".,;:!?'\"()[]{}<>-_/\\@#$%^&*+=~`|")
                                 for _ in range(rng.randint(1, 4))))
        elif kind == 5:
            parts.append(rng.choice(_CONTRACTIONS))
        else:
            parts.append(rng.choice(_SYMBOLS))
    return "".join(parts)


class Spellings:
    """Raw bytes -> the ids whose ``token_bytes`` are those bytes (text tokens only)."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        self.ids: dict[bytes, list[int]] = {}
        for i, b in enumerate(vocab.token_bytes):
            if b is not None:
                self.ids.setdefault(b, []).append(i)

    def pick(self, data: bytes, rng: random.Random) -> int | None:
        found = self.ids.get(data)
        return rng.choice(found) if found else None


def perturb(ids: Sequence[int], spellings: Spellings, rng: random.Random,
            steps: int = 1) -> list[int]:
    """``ids`` rewritten ``steps`` times (when a rewrite applies), decoding to the same bytes."""
    out = list(ids)
    tb = spellings.vocab.token_bytes
    for _ in range(steps):
        if not out:
            break
        kind = rng.randrange(4)
        k = rng.randrange(len(out))
        data = tb[out[k]] or b""
        if kind == 0 and len(data) > 1:  # split one token
            cut = rng.randrange(1, len(data))
            a, b = spellings.pick(data[:cut], rng), spellings.pick(data[cut:], rng)
            if a is not None and b is not None:
                out[k:k + 1] = [a, b]
        elif kind == 1 and k + 1 < len(out):  # merge two neighbours
            c = spellings.pick(data + (tb[out[k + 1]] or b""), rng)
            if c is not None:
                out[k:k + 2] = [c]
        elif kind == 2 and k + 1 < len(out):  # move the boundary between two neighbours
            joined = data + (tb[out[k + 1]] or b"")
            cut = rng.randrange(1, len(joined))
            a, b = spellings.pick(joined[:cut], rng), spellings.pick(joined[cut:], rng)
            if a is not None and b is not None:
                out[k:k + 2] = [a, b]
        elif kind == 3:  # spell one token in single-byte tokens (byte fallback)
            singles = [spellings.pick(bytes([x]), rng) for x in data]
            if singles and None not in singles:
                out[k:k + 1] = singles  # type: ignore[assignment]
    return out
