"""The arithmetic of one decoding step: log-probabilities from logits, with and without a
mask, and sampling.

Invariants:
- All arithmetic is in float64 over the model's float32 logits.
- ``unconstrained_log_prob(row, t) = row[t] - logsumexp(row)``: the model's distribution at
  temperature 1, whatever the sampling settings.
- ``constrained_log_prob(row, allowed, t) = row[t] - logsumexp(row[allowed])``: the same
  logits renormalized over the allowed tokens; ``-inf`` when ``t`` is not allowed. A step with
  one allowed token gives 0 exactly.
- A row with a NaN or ``+inf`` entry, or whose allowed entries are all ``-inf``, raises
  :class:`~tokamata.InvalidArgument` (the model's output has no distribution there) before
  anything uses it. ``-inf`` entries elsewhere are a model's way to forbid tokens, and stay.
- Sampling: greedy is the first maximum of the masked logits; otherwise ``logits /
  temperature``, keep the ``top_k`` largest (0: all), then the smallest set of the largest
  whose probability reaches ``top_p``, renormalize, draw with the caller's
  ``numpy.random.Generator``. Only allowed tokens are ever drawn.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidArgument

__all__ = ["check_row", "logsumexp", "unconstrained_log_prob", "constrained_log_prob", "SamplingParams",
           "support", "greedy", "sample"]


def check_row(row: np.ndarray, where: str) -> None:
    """InvalidArgument when ``row`` has a NaN or ``+inf`` entry (``where`` names the position)."""
    if not np.all(np.isfinite(row) | np.isneginf(row)):
        bad = int(np.flatnonzero(~(np.isfinite(row) | np.isneginf(row)))[0])
        raise InvalidArgument(f"the model's logits {where} are not finite: token {bad} has {row[bad]!r} "
                              f"(a NaN or +inf logit has no probability; check the model's dtype and weights)")


def logsumexp(values: np.ndarray) -> float:
    """``log(sum(exp(values)))`` in float64; ``-inf`` for an empty or all ``-inf`` input."""
    if values.size == 0:
        return -math.inf
    top = float(np.max(values))
    if top == -math.inf:
        return -math.inf
    return top + math.log(float(np.sum(np.exp(values.astype(np.float64) - top))))


def unconstrained_log_prob(row: np.ndarray, token: int, norm: float | None = None) -> float:
    """The model's log-probability of ``token`` (``norm``: ``logsumexp(row)`` when known)."""
    if norm is None:
        norm = logsumexp(row)
    return float(row[token]) - norm


def constrained_log_prob(row: np.ndarray, allowed: np.ndarray, token: int) -> float:
    """``token``'s log-probability under ``row`` renormalized over ``allowed`` (a bool mask)."""
    if not allowed[token]:
        return -math.inf
    norm = logsumexp(row[allowed])
    if norm == -math.inf:
        raise InvalidArgument("the model gives every token the constraint allows a logit of -inf: the "
                              "constrained distribution is undefined at this step")
    return float(row[token]) - norm


class SamplingParams:
    """Checked sampling settings (see the module docstring)."""

    __slots__ = ("do_sample", "temperature", "top_k", "top_p")

    def __init__(self, do_sample: bool, temperature: float, top_k: int, top_p: float):
        if not isinstance(do_sample, bool):
            raise InvalidArgument(f"do_sample must be a bool, got {do_sample!r}")
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not (
                math.isfinite(temperature) and temperature > 0):
            raise InvalidArgument(f"temperature must be a finite number > 0, got {temperature!r}")
        if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 0:
            raise InvalidArgument(f"top_k must be an int >= 0 (0: no top-k), got {top_k!r}")
        if isinstance(top_p, bool) or not isinstance(top_p, (int, float)) or not 0 < top_p <= 1:
            raise InvalidArgument(f"top_p must be in (0, 1], got {top_p!r}")
        self.do_sample = do_sample
        self.temperature = float(temperature)
        self.top_k = int(top_k)
        self.top_p = float(top_p)


def support(row: np.ndarray, allowed: np.ndarray | None, params: SamplingParams) -> tuple[np.ndarray, np.ndarray]:
    """The sampling distribution of ``row`` (masked to ``allowed`` when given) under ``params``
    with ``do_sample``: ``(tokens, probs)``, the tokens that can be drawn, most likely first, and
    their float64 probabilities (summing to 1). What :func:`sample` draws from, and what
    speculative decoding compares a draft's and a target's steps by."""
    logits = row.astype(np.float64)
    if allowed is not None:
        logits = np.where(allowed, logits, -np.inf)
    candidates = np.flatnonzero(logits > -np.inf)
    if candidates.size == 0:
        raise InvalidArgument("no token has a finite logit at this step: nothing can be sampled")
    values = logits[candidates] / params.temperature
    order = np.argsort(-values, kind="stable")
    if params.top_k:
        order = order[: params.top_k]
    values = values[order]
    probs = np.exp(values - values[0])
    probs /= probs.sum()
    if params.top_p < 1.0:
        keep = int(np.searchsorted(np.cumsum(probs), params.top_p)) + 1
        probs = probs[:keep] / probs[:keep].sum()
        order = order[:keep]
    return candidates[order], probs


def greedy(row: np.ndarray, allowed: np.ndarray | None) -> int:
    """The first maximum of ``row`` masked to ``allowed`` (greedy decoding's token)."""
    logits = row.astype(np.float64)
    if allowed is not None:
        logits = np.where(allowed, logits, -np.inf)
    return int(np.argmax(logits))


def sample(row: np.ndarray, allowed: np.ndarray | None, params: SamplingParams, rng: np.random.Generator) -> int:
    """One token from ``row`` (masked to ``allowed`` when given), per ``params``."""
    if not params.do_sample:
        return greedy(row, allowed)
    tokens, probs = support(row, allowed, params)
    return int(tokens[int(rng.choice(len(probs), p=probs))])
