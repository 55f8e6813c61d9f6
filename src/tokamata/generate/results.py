"""What the generation layer returns: log-probabilities (seed 003, App. A.3's shape),
generations and probability masses.

Invariants:
- :class:`LogProbs` holds one list of per-token log-probabilities per sequence and, for each
  sequence, ``cumulative`` = the sum of its ``per_token`` values (``-inf`` once a token has
  probability 0). Values are natural logarithms, Python floats.
- :class:`SequenceLogProbs` pairs the model's own (``unconstrained``: ``log_softmax`` of its
  logits at temperature 1) and the constraint's (``constrained``: the same logits renormalized
  over the tokens the constraint allows at that step) log-probabilities of the same tokens.
  Without a constraint the two are equal.
- Nothing here computes: these are plain records, built by :mod:`tokamata.generate.pipeline`
  and :mod:`tokamata.generate.mass`.
"""

from __future__ import annotations

import dataclasses
import math

__all__ = ["LogProbs", "SequenceLogProbs", "GenerationResult", "ProbabilityMass"]


@dataclasses.dataclass(frozen=True)
class LogProbs:
    """Per-token and cumulative log-probabilities of several token sequences.

    >>> lp = LogProbs.of([[-1.0, -0.5], [0.0]])
    >>> lp.per_token, lp.cumulative
    ([[-1.0, -0.5], [0.0]], [-1.5, 0.0])
    """

    #: ``per_token[i][j]``: log-probability of token ``j`` of sequence ``i`` given what precedes it
    per_token: list[list[float]]
    #: ``cumulative[i]``: log-probability of sequence ``i`` (the sum of its ``per_token``)
    cumulative: list[float]

    @classmethod
    def of(cls, per_token: list[list[float]]) -> "LogProbs":
        """Records ``per_token`` with its sums."""
        rows = [[float(x) for x in row] for row in per_token]
        return cls(rows, [_sum(row) for row in rows])


@dataclasses.dataclass(frozen=True)
class SequenceLogProbs:
    """The model's (``unconstrained``) and the constraint's (``constrained``) log-probabilities
    of the same token sequences."""

    unconstrained: LogProbs
    constrained: LogProbs


@dataclasses.dataclass(frozen=True)
class GenerationResult:
    """One generation of :meth:`tokamata.generate.Pipeline.generate`.

    ``token_ids`` are the output's tokens in order: the ``response_prefix`` tokens, then the
    generated ones, and the EOS token that ended it, if one did. ``token_strs`` spells each one
    (its bytes decoded as UTF-8, undecodable bytes as ``\\xNN`` escapes; a special token by its
    name, else ``<id>``). ``text`` is the decoded bytes of the whole output (special tokens
    spell nothing; invalid UTF-8 replaced). With token healing the output begins with the
    ``healed`` bytes, the prompt's removed tail, which ``text`` includes.

    ``log_probs`` has one sequence, aligned with ``token_ids``. ``forced_steps`` counts the
    tokens that came from ``Matcher.forced_tokens`` (or, at the end, an EOS that was the only
    allowed token): no model call chose them, their constrained log-probability is 0 exactly,
    and their unconstrained one comes from the logits of the next model call, which evaluates
    them together (or from one last call after the loop). ``model_calls`` counts the backend's
    logits calls. ``finish_reason`` is ``"eos"``, ``"length"`` (``max_new_tokens`` reached) or
    ``"context"`` (the model's context is full).

    With a draft model (speculative decoding), ``draft_proposed`` counts the tokens the draft
    sampled, ``draft_accepted`` those the target kept (forced tokens are in neither),
    ``draft_calls`` the draft's logits calls; ``model_calls`` stays the target's.

    ``budget`` is the token budget the masks had (``max_new_tokens``, EOS included: the
    output is a complete sentence within it), None when they were plain.
    """

    text: str
    token_ids: list[int]
    token_strs: list[str]
    log_probs: SequenceLogProbs
    forced_steps: int
    model_calls: int
    finish_reason: str
    prompt_ids: list[int]
    healed: bytes = b""
    draft_proposed: int = 0
    draft_accepted: int = 0
    draft_calls: int = 0
    budget: int | None = None

    @property
    def finished(self) -> bool:
        """The output ended on an EOS token."""
        return self.finish_reason == "eos"

    @property
    def acceptance_rate(self) -> float | None:
        """``draft_accepted / draft_proposed``; None when no draft token was proposed."""
        return self.draft_accepted / self.draft_proposed if self.draft_proposed else None


@dataclasses.dataclass(frozen=True)
class ProbabilityMass:
    """The probability a model gives to a constraint's language, after one prompt.

    ``log_mass`` is the natural log of the estimate (``-inf`` for 0). ``standard_error`` is the
    standard error of ``mass`` (linear scale): 0 for ``method="exact"``; for
    ``"importance"`` the sample standard deviation of the importance weights over
    ``sqrt(samples)``. ``sequences`` counts the complete token sequences that were scored
    (exact: every one of the language; importance: the samples), ``truncated`` the samples
    that did not end within ``max_new_tokens`` (weighted 0: the estimate is then of the
    sentences that fit).

    >>> m = ProbabilityMass(log_mass=math.log(0.25), standard_error=0.0, method="exact", sequences=3)
    >>> round(m.mass, 6)
    0.25
    """

    log_mass: float
    standard_error: float
    method: str
    sequences: int
    truncated: int = 0

    @property
    def mass(self) -> float:
        """``exp(log_mass)``."""
        return math.exp(self.log_mass)


def _sum(values: list[float]) -> float:
    total = 0.0
    for v in values:
        total += v
    return total
