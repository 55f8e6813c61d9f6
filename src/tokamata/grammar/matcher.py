"""The per-sequence matcher of a grammar constraint: the same API as :class:`tokamata.Matcher`.

Invariants:
- The position is a non-empty tuple of configurations (see ``grammar/constraint.py``); it only
  changes through ``consume``/``consume_many`` (forward) and ``rollback`` (back); a refused
  token leaves it unchanged.
- ``fill_bitmask`` sets exactly the tokens ``consume`` accepts: the union of the
  configurations' masks, plus EOS ids when some configuration is accepting. After EOS is
  consumed only EOS ids are set and ``allowed_tokens`` is empty.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from .. import _core
from ..bitmask import check_bitmask
from ..errors import InvalidArgument
from ..matcher import _token

__all__ = ["GrammarMatcher"]


class GrammarMatcher:
    """Where one sequence is in a :class:`~tokamata.grammar.constraint.GrammarConstraint`.

    Example::

        m = constraint.matcher()
        while not m.is_terminated():
            m.fill_bitmask(bitmask, 0)
            token = sample(apply_bitmask(logits, bitmask))
            m.consume(token)
    """

    __slots__ = ("constraint", "_configs", "_history", "_terminated")

    def __init__(self, constraint, configs):
        self.constraint = constraint
        self._configs = configs
        self._history: list = []
        self._terminated = False

    # ------------------------------------------------------------------ masks

    def _words(self) -> np.ndarray:
        """uint32 words of the allowed tokens (EOS included when accepting); read-only."""
        c = self.constraint
        if self._terminated:
            return c.eos_words
        return c.position_mask(self._configs)

    def fill_bitmask(self, bitmask, index: int = 0) -> None:
        """Write the allowed next tokens into row ``index`` of an int32 ``[B, ceil(V/32)]``
        array (numpy, or a CPU torch tensor); bit ``t % 32`` of word ``t // 32`` is token t."""
        words = self._words()
        try:  # the core checks dtype, rank, contiguity, device, width and index itself
            _core.write_bitmask_row(bitmask, index, words)
        except (TypeError, ValueError, IndexError):
            check_bitmask(bitmask, self.constraint.vocab_size)  # raises the precise error
            raise InvalidArgument(f"bitmask row index {index!r} out of range for batch {len(bitmask)}") from None

    def allowed_tokens(self) -> np.ndarray:
        """Sorted int32 array of the token ids allowed next (EOS ids included when accepting)."""
        if self._terminated:
            return np.zeros(0, dtype=np.int32)
        bits = np.unpackbits(self._words().view(np.uint8), bitorder="little")
        return np.flatnonzero(bits[: self.constraint.vocab_size]).astype(np.int32)

    # ------------------------------------------------------------------ moving

    def consume(self, token_id: int) -> bool:
        """Advance by one token. Returns False (state unchanged) if it is not allowed."""
        c = self.constraint
        token = _token(token_id, c.vocab_size)
        if self._terminated:
            return False
        if token in c._eos_set and token not in c._special_tokens:
            if not self.is_accepting():
                return False
            self._history.append(self._configs)
            self._terminated = True
            return True
        following = c.advance(self._configs, token)
        if not following:
            return False
        self._history.append(self._configs)
        self._configs = following
        return True

    def consume_many(self, token_ids: Iterable[int]) -> int:
        """Consume tokens in order; returns how many were accepted before the first refusal."""
        count = 0
        for token in token_ids:
            if not self.consume(token):
                break
            count += 1
        return count

    def rollback(self, n: int = 1) -> None:
        """Undo the last ``n`` consumed tokens (EOS included)."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise InvalidArgument(f"rollback count must be a non-negative int, got {n!r}")
        if n > len(self._history):
            raise InvalidArgument(f"cannot roll back {n} tokens: only {len(self._history)} consumed")
        for _ in range(int(n)):
            self._configs = self._history.pop()
            self._terminated = False

    def is_accepting(self) -> bool:
        """The output so far is a complete sentence (EOS is allowed now)."""
        if self._terminated:
            return True
        return any(self.constraint.accepting(config) for config in self._configs)

    def is_terminated(self) -> bool:
        """EOS has been consumed."""
        return self._terminated

    def copy(self) -> "GrammarMatcher":
        """An independent matcher at the same position with the same history."""
        twin = GrammarMatcher(self.constraint, self._configs)
        twin._history = list(self._history)
        twin._terminated = self._terminated
        return twin

    @property
    def num_consumed(self) -> int:
        """Tokens consumed so far and not rolled back."""
        return len(self._history)

    @property
    def num_configurations(self) -> int:
        """Ways the output so far lexes (1 for unambiguous text)."""
        return len(self._configs)

    def __repr__(self) -> str:
        return (f"GrammarMatcher(consumed={len(self._history)}, accepting={self.is_accepting()}, "
                f"terminated={self._terminated}, configurations={len(self._configs)})")
