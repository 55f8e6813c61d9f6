"""The per-sequence matcher: fill_bitmask / consume / rollback on the C++ hot path.

Invariants:
- A matcher's state only changes through ``consume``/``consume_many`` (forward) and
  ``rollback`` (back); a refused token leaves it unchanged.
- EOS is allowed exactly when the output so far is a full match; consuming it terminates
  the matcher, after which only EOS is allowed in bitmasks and ``allowed_tokens`` is empty.
- Argument errors (token ids out of range, bitmask of the wrong dtype/shape/device) raise
  :class:`InvalidArgument` before anything is written.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from .bitmask import check_bitmask
from .errors import InvalidArgument

__all__ = ["Matcher", "fill_bitmasks"]


class Matcher:
    """Where one sequence is in a :class:`~tokamata.compile.Constraint`.

    Example::

        m = constraint.matcher()
        while not m.is_terminated():
            m.fill_bitmask(bitmask, 0)
            token = sample(apply_bitmask(logits, bitmask))
            m.consume(token)
    """

    __slots__ = ("constraint", "_core")

    def __init__(self, constraint, core):
        self.constraint = constraint
        self._core = core

    def fill_bitmask(self, bitmask, index: int = 0) -> None:
        """Write the allowed next tokens into row ``index`` of an int32 ``[B, ceil(V/32)]``
        array (numpy, or a CPU torch tensor); bit ``t % 32`` of word ``t // 32`` is token t."""
        try:  # the core checks dtype, rank, contiguity, device, width and index itself
            self._core.fill_bitmask(bitmask, index)
        except (TypeError, ValueError, IndexError):
            check_bitmask(bitmask, self.constraint.vocab_size)  # raises the precise error
            raise InvalidArgument(f"bitmask row index {index!r} out of range for batch {len(bitmask)}") from None

    def allowed_tokens(self) -> np.ndarray:
        """Sorted int32 array of the token ids allowed next (EOS ids included when accepting)."""
        if self._core.is_terminated():
            return np.zeros(0, dtype=np.int32)
        return np.asarray(self._core.allowed_tokens(), dtype=np.int32)

    def consume(self, token_id: int) -> bool:
        """Advance by one token. Returns False (state unchanged) if it is not allowed."""
        status = self._core.consume(_token(token_id, self.constraint.vocab_size))
        return status == 0

    def consume_many(self, token_ids: Iterable[int]) -> int:
        """Consume tokens in order; returns how many were accepted before the first refusal."""
        count = 0
        size = self.constraint.vocab_size
        for token in token_ids:
            if self._core.consume(_token(token, size)) != 0:
                break
            count += 1
        return count

    def rollback(self, n: int = 1) -> None:
        """Undo the last ``n`` consumed tokens (EOS included)."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise InvalidArgument(f"rollback count must be a non-negative int, got {n!r}")
        if n > self._core.history_length:
            raise InvalidArgument(f"cannot roll back {n} tokens: only {self._core.history_length} consumed")
        self._core.rollback(int(n))

    def is_accepting(self) -> bool:
        """The output so far is a complete match (EOS is allowed now)."""
        return self._core.is_accepting()

    def is_terminated(self) -> bool:
        """EOS has been consumed."""
        return self._core.is_terminated()

    def copy(self) -> "Matcher":
        """An independent matcher at the same position with the same history."""
        return Matcher(self.constraint, self._core.copy())

    @property
    def num_consumed(self) -> int:
        """Tokens consumed so far and not rolled back."""
        return self._core.history_length

    def __repr__(self) -> str:
        return (f"Matcher(consumed={self._core.history_length}, accepting={self.is_accepting()}, "
                f"terminated={self.is_terminated()})")


def fill_bitmasks(matchers: Sequence[Matcher], bitmask, indices: Sequence[int] | None = None) -> None:
    """Fill row ``indices[i]`` (default ``i``) of ``bitmask`` for each matcher, in one call
    that releases the GIL for the whole batch.

    Example::

        tokamata.fill_bitmasks([m0, m1], bitmask)   # rows 0 and 1
    """
    from . import _core

    matchers = list(matchers)
    rows = np.arange(len(matchers), dtype=np.int32) if indices is None else np.asarray(indices, dtype=np.int32)
    if rows.shape != (len(matchers),):
        raise InvalidArgument(f"need one row index per matcher, got {rows.shape[0] if rows.ndim else rows} for {len(matchers)}")
    from .grammar.matcher import GrammarMatcher

    for m in matchers:
        if not isinstance(m, (Matcher, GrammarMatcher)):
            raise InvalidArgument(f"fill_bitmasks takes Matcher objects, got {type(m).__name__}")
        check_bitmask(bitmask, m.constraint.vocab_size)
    if len(rows) and (rows.min() < 0 or rows.max() >= len(bitmask)):
        raise InvalidArgument(f"row indices must be in [0, {len(bitmask)})")
    regex = [i for i, m in enumerate(matchers) if isinstance(m, Matcher)]
    if len(regex) == len(matchers):
        _core.fill_bitmasks([m._core for m in matchers], bitmask, rows)
        return
    if regex:
        _core.fill_bitmasks([matchers[i]._core for i in regex], bitmask, rows[regex])
    for i, m in enumerate(matchers):
        if not isinstance(m, Matcher):
            m.fill_bitmask(bitmask, int(rows[i]))


def _token(token_id, vocab_size: int) -> int:
    if isinstance(token_id, bool) or not isinstance(token_id, (int, np.integer)):
        try:  # 0-d arrays / tensors
            token_id = int(token_id.item())  # type: ignore[union-attr]
        except (AttributeError, ValueError, TypeError):
            raise InvalidArgument(f"token id must be an int, got {type(token_id).__name__}") from None
    token_id = int(token_id)
    if not 0 <= token_id < vocab_size:
        raise InvalidArgument(f"token id {token_id} out of range [0, {vocab_size})")
    return token_id
