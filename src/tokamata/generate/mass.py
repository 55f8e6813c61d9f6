"""The probability mass of a constraint's language: exact enumeration and importance sampling.

The mass is ``Z = sum p(t_1 ... t_n EOS | prompt)`` over every token sequence ``t`` the
constraint accepts followed by any EOS token it allows there: every tokenization of every
sentence counts (not only the tokenizer's own), and each EOS id is its own ending.

Invariants:
- :func:`enumerate_language` walks the matcher depth first (consume, recurse, roll back) and
  returns every complete sequence with the EOS ids allowed after it; it visits each token
  sequence (every prefix of a complete one counts, the empty one too) at most once and raises
  :class:`~tokamata.LimitExceeded` naming ``max_enumerated_sequences`` past that bound, which
  is how an infinite language is refused. The matcher is back where it started afterwards.
- :func:`importance_estimate` turns log importance weights ``log p(s) - log q(s)`` of samples
  drawn from the proposal ``q`` into the estimate of ``Z`` and its standard error, in a way
  that never overflows (weights are scaled by their maximum first). A sample that did not end
  has weight 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..errors import LimitExceeded
from ..matcher import Matcher
from .results import ProbabilityMass

__all__ = ["enumerate_language", "importance_estimate"]


def enumerate_language(matcher: Matcher, eos_ids: Sequence[int], bound: int) -> list[tuple[list[int], list[int]]]:
    """``(tokens, eos)`` for every complete token sequence from the matcher's position: the
    tokens (no EOS) and the EOS ids allowed after them, in depth-first order.

    >>> import tokamata
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_token_ids=[3])
    >>> enumerate_language(tokamata.compile_regex("ab?", vocab).matcher(), [3], 100)
    [([0], [3]), ([0, 1], [3]), ([2], [3])]
    """
    eos_set = frozenset(int(t) for t in eos_ids)
    path: list[int] = []
    found: list[tuple[list[int], list[int]]] = []
    visited = 0

    def visit() -> list[int]:
        nonlocal visited
        visited += 1
        if visited > bound:
            raise LimitExceeded("max_enumerated_sequences", visited, bound)
        allowed = matcher.allowed_tokens().tolist()
        ends = [t for t in allowed if t in eos_set]
        if ends:
            found.append((list(path), ends))
        return [t for t in allowed if t not in eos_set]

    base = matcher.num_consumed
    try:
        stack = [(visit(), 0)]
        while stack:
            children, i = stack[-1]
            if i == len(children):
                stack.pop()
                if path:
                    matcher.rollback(1)
                    path.pop()
                continue
            stack[-1] = (children, i + 1)
            token = children[i]
            matcher.consume(token)
            path.append(token)
            stack.append((visit(), 0))
    finally:
        if matcher.num_consumed > base:
            matcher.rollback(matcher.num_consumed - base)
    return found


def importance_estimate(log_weights: Sequence[float], truncated: int = 0) -> ProbabilityMass:
    """The mean of ``exp(log_weights)`` (log scale) and its standard error.

    >>> m = importance_estimate([math.log(0.2), math.log(0.4)])
    >>> round(m.mass, 6), round(m.standard_error, 6)
    (0.3, 0.1)
    """
    weights = np.asarray(log_weights, dtype=np.float64)
    n = weights.size
    top = float(np.max(weights)) if n else -math.inf
    if top == -math.inf:
        return ProbabilityMass(-math.inf, 0.0, "importance", n, truncated)
    scaled = np.exp(weights - top)
    log_mass = top + math.log(float(scaled.mean()))
    error = math.exp(top) * float(scaled.std(ddof=1)) / math.sqrt(n) if n > 1 else math.nan
    return ProbabilityMass(log_mass, error, "importance", n, truncated)
