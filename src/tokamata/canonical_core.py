"""A matcher core with a canonical filter state next to its engine position: what
``canonical=True`` gives a :class:`~tokamata.Matcher` in place of the bare ``MatcherCore``.

It has ``MatcherCore``'s methods and keeps its invariants (the matcher calls it the same way):
``fill_bitmask`` sets exactly what ``consume`` accepts, EOS is allowed exactly when the output
is complete *and* its tokens are the tokenizer's own encoding of it, ``rollback`` undoes
tokens and their filter states together, ``copy`` is independent. The engine position is the
one ``MatcherCore`` (one walk, no second matcher); the filter state is a stack of
:data:`~tokamata.vocab.canonical_filter.State` per consumed token, and the allowed tokens are
the engine's allowed tokens that :class:`~tokamata.vocab.canonical_filter.CanonicalFilter`
keeps (cached per (engine position, filter state) in the constraint's filter).

What this first version computes in Python (the engine mask stays native): the filter over
the engine's allowed tokens, ``forced_tokens`` (by stepping copies), and the batch fill of
canonical matchers. ``forced_bytes`` is the engine's: the bytes every continuation of the
language begins with, a prefix of the bytes every canonical continuation begins with (true,
maybe shorter).
"""

from __future__ import annotations

from typing import Any

import numpy as np


__all__ = ["CanonicalCore"]


class CanonicalCore:
    """``MatcherCore`` plus a canonical filter state (module docstring)."""

    __slots__ = ("core", "filter", "states")

    def __init__(self, core: Any, canonical: Any, states: list[Any] | None = None):
        self.core = core
        #: a CanonicalFilter, or its native twin (tokamata.canonical_native): same methods
        self.filter = canonical
        #: one state per consumed token, after it (the first: before any)
        self.states = states if states is not None else [canonical.initial_state]

    @property
    def state(self) -> Any:
        return self.states[-1]

    def allowed_tokens(self) -> list[int]:
        if self.core.is_terminated():
            return self.core.allowed_tokens()
        return list(self.filter.allowed(self.core, self.state))

    def fill_bitmask(self, bitmask: Any, index: int) -> None:
        self.filter.fill_row(self.core, self.state, bitmask, index)

    def filter_row(self, bitmask: Any, index: int) -> None:
        """Row ``index`` (the engine's row, filled) narrowed to the canonical tokens."""
        self.filter.fill_row(self.core, self.state, bitmask, index)

    def consume(self, token: int) -> int:
        if self.core.is_terminated() or not 0 <= token < len(self.filter.token_bytes):
            return self.core.consume(token)
        after = self.filter.accepts(self.core, self.state, token)
        if after is None:
            return 1
        status = self.core.consume(token)
        if status == 0:
            self.states.append(after)
        return status

    def consume_many(self, tokens: Any) -> tuple[int, int]:
        count = 0
        for t in np.asarray(tokens).tolist():
            status = self.consume(int(t))
            if status != 0:
                return count, status
            count += 1
        return count, 0

    def rollback(self, n: int) -> int:
        out = self.core.rollback(n)
        if n:
            del self.states[-n:]
        return out

    def is_accepting(self) -> bool:
        return self.core.is_accepting() and self.filter.complete(self.state)

    def is_terminated(self) -> bool:
        return self.core.is_terminated()

    @property
    def history_length(self) -> int:
        return self.core.history_length

    @property
    def num_configurations(self) -> int:
        return self.core.num_configurations

    def position(self) -> list[tuple[int, int, bool]]:
        return self.core.position()

    def copy(self) -> "CanonicalCore":
        return CanonicalCore(self.core.copy(), self.filter, list(self.states))

    def forced_tokens(self, max_tokens: int) -> list[int]:
        walk = self.copy()
        out: list[int] = []
        while len(out) < max_tokens and not walk.is_terminated():
            allowed = walk.allowed_tokens()
            if len(allowed) != 1 or allowed[0] in self.filter.eos:
                break
            walk.consume(allowed[0])
            out.append(allowed[0])
        return out

    def forced_bytes(self, max_bytes: int) -> bytes:
        return self.core.forced_bytes(max_bytes)
