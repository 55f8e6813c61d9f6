"""What every fuzz target checks once an input compiled: a seeded random walk of a matcher in
which the mask and ``consume`` must agree (used inside the fuzz workers, see ``fuzz_harness``).

The vocabulary (:data:`VOCAB`) is small but hostile: every byte as a token (so every text can
be spelled and a live matcher always has an allowed token), multi-byte tokens that cross
lexeme and UTF-8 boundaries, the empty token, control tokens with names (``<|eot_id|>``,
``<|endoftext|>``), and ids past the tokenizer's end (a padded model vocabulary).

Invariants checked by :func:`walk` at every step:
- ``fill_bitmask`` sets exactly ``allowed_tokens()`` (plus nothing else);
- a token the mask allows is consumed (``consume`` returns True), and a few it does not
  allow are refused with the position unchanged;
- a matcher that consumed an allowed token is never stuck: it allows some token (the byte
  tokens spell every continuation; EOS when complete), unless a limit was reached;
- a terminated matcher allows nothing.
A :class:`tokamata.LimitExceeded` during the walk ends it (limits are allowed outcomes).
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np

import tokamata
from tokamata.bitmask import unpack_bitmask

EXTRA = [b"ab", b"abc", b" a", "é".encode(), "日本".encode(), b'{"', b'":', b'",', b"true", b"12", b"0.5",
         b"\xc3", b"\xa9", b"", b"\n\n", b"yes", b"no"]
EOS, EOT, EOT_TEXT = 256 + len(EXTRA), 257 + len(EXTRA), 258 + len(EXTRA)
TOKENS: list[bytes | None] = [bytes([b]) for b in range(256)] + EXTRA + [None, None, None]
VOCAB = tokamata.Vocabulary.from_token_bytes(
    TOKENS, eos_token_ids=[EOS], size=len(TOKENS) + 13,
    special_tokens={"<|endoftext|>": EOS, "<|eot_id|>": EOT, "<|im_end|>": EOT_TEXT})

#: limits for fuzzed compiles: small enough that a blow-up is a LimitExceeded well within the
#: worker's timeout
LIMITS = tokamata.Limits(max_compile_seconds=2.0, max_dfa_states=3_000, max_earley_items=20_000)


def compiled_outcome(compile_: Callable[[], tokamata.Constraint], seed: int, steps: int = 24) -> str:
    """``compile_()`` then :func:`walk`: ``"error <Class>"`` for a tokamata error, else the
    walk's outcome. Any other exception propagates (a finding)."""
    try:
        constraint = compile_()
    except tokamata.TokamataError as e:
        return f"error {type(e).__name__}"
    return walk(constraint, seed, steps)


def walk(constraint: tokamata.Constraint, seed: int, steps: int = 24,
         output_check: Callable[[bytes], None] | None = None, spellable: bool = True) -> str:
    """A random walk of ``steps`` tokens through ``constraint`` checking the invariants above;
    ``output_check(output)`` is called on the output when the walk ends with EOS.
    ``spellable=False`` for vocabularies that may not spell every continuation (masks are
    exact over bytes: a token ending inside a character is allowed when the character can
    be finished, whether or not a token holds its last byte), where a stuck walk just ends."""
    rng = random.Random(seed)
    vocab_size = constraint.vocab_size
    token_bytes = constraint.vocab.token_bytes if hasattr(constraint, "vocab") else VOCAB.token_bytes
    m = constraint.matcher()
    bitmask = tokamata.allocate_bitmask(2, vocab_size)
    output = bytearray()
    try:
        for step in range(steps):
            allowed = m.allowed_tokens()
            bitmask[:] = -1
            m.fill_bitmask(bitmask, 1)
            set_in_mask = np.flatnonzero(unpack_bitmask(bitmask[1:2], vocab_size)[0])
            if m.is_terminated():
                assert len(allowed) == 0, f"terminated but allows {allowed[:10]}"
                return f"terminated after {step} tokens"
            assert np.array_equal(set_in_mask, allowed), (
                f"step {step}: the mask sets {sorted(set(set_in_mask) ^ set(allowed))[:10]} "
                "differently from allowed_tokens()")
            if len(allowed) == 0:
                if not spellable:
                    return f"no token continues after {step} tokens"
                assert step == 0, f"stuck after {step} allowed tokens (output {bytes(output)!r})"
                return "empty language"
            allowed_set = set(allowed.tolist())
            for _ in range(3):
                probe = rng.randrange(vocab_size)
                if probe not in allowed_set:
                    before = m.num_consumed
                    assert not m.consume(probe), f"step {step}: token {probe} is not in the mask but consume took it"
                    assert m.num_consumed == before
            token = int(rng.choice(allowed))
            assert m.consume(token), f"step {step}: token {token} is in the mask but consume refused it"
            if m.is_terminated():
                if output_check is not None:
                    output_check(bytes(output))
                continue
            piece = token_bytes[token] if token < len(token_bytes) else None
            output += piece if piece is not None else b""  # (a control token the grammar spells)
    except tokamata.LimitExceeded as e:
        return f"limit {e.limit} during the walk"
    return f"walked {steps} tokens"
