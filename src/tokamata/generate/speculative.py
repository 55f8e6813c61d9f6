"""Speculative decoding under a constraint (seed 000, section 5.3; Leviathan et al., 2023; Chen
et al., 2023): a draft model proposes up to ``k`` tokens under the constraint's masks, the
target model scores all of them in one call under the same masks, and the standard rule keeps
a prefix of them and adds one token of the target's own.

Invariants:
- One mask row per position, filled once and shared by both models (seed 000 5.3: the
  penalties are shared with the target, never re-evaluated). A round fills row ``j`` of its
  buffer when the draft reaches position ``j``: ``Matcher.fill_bitmask`` after the draft's
  token was consumed, or, over a forced run, ``Matcher.fill_bitmask_draft`` (the run's rows
  and the one after it in one native call). The draft samples under row ``j`` and the target's
  logits at position ``j`` are read under the same row. The next round starts after the
  target's token, at a position no round has filled.
- The matcher advances with the draft and is rolled back (``Matcher.rollback``) over every
  draft token the target rejects before the target's token is consumed: after a round it is
  exactly where plain decoding of the kept tokens leaves it.
- Forced tokens (``Matcher.forced_tokens``, or a row with one allowed token, such as an EOS
  that is the only way on) cost no call to either model and are always kept (both masked
  distributions give them probability 1). They count in ``forced_steps``, never in
  ``draft_proposed``. A round made of forced tokens only, which ends the output, makes no
  target call (the pipeline's last call scores them, as in plain decoding).
- Greedy: a draft token is kept while it is the target's masked argmax; the target's token is
  its masked argmax at the first disagreement or after the last draft token, so the output is
  plain greedy decoding with the target, token for token (up to float rounding between a
  one-token and a k-token forward pass). Sampling: the draft token ``d`` at position ``j`` is
  kept with probability ``min(1, p_j(d) / q_j(d))``, ``p`` and ``q`` the target's and the
  draft's distributions at ``j`` after the mask and the sampling settings
  (:func:`~tokamata.generate.scoring.support`, renormalized over what the row allows); at the
  first rejection the target's token is drawn from ``max(0, p_j - q_j)`` renormalized, and
  after a fully kept draft from ``p``. Every output is then distributed as plain constrained
  sampling from the target with the same settings.
- The reported log-probabilities are the target's, as plain ``Pipeline.generate`` reports
  them (unconstrained: ``log_softmax``; constrained: renormalized over the row; forced: 0).
- Calls: one target ``Backend.logits`` call per round (over the output so far and the draft),
  one draft call per sampled draft token; the backends' caches cut back rejected tokens.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ..bitmask import allocate_bitmask, unpack_bitmask
from ..errors import InvalidArgument
from ..matcher import Matcher
from .backend import Backend
from .scoring import (SamplingParams, check_row, constrained_log_prob, greedy, support, unconstrained_log_prob)

__all__ = ["SpeculativeOutcome", "speculative_decode"]


@dataclasses.dataclass
class SpeculativeOutcome:
    """What a speculative loop did (the token lists it was given are extended in place)."""

    reason: str = ""
    pending: int = 0  # the first position whose unconstrained log-probability is still unknown
    forced: int = 0
    target_calls: int = 0
    draft_calls: int = 0
    proposed: int = 0  # draft tokens the draft model sampled
    accepted: int = 0  # of those, kept by the target
    rounds: int = 0


def speculative_decode(target: Backend, draft: Backend, matcher: Matcher | None, eos: frozenset[int],
                       ids: list[int], base: int, unc: list[float | None], con: list[float], pending: int,
                       max_new_tokens: int, limit: int, params: SamplingParams, rng: np.random.Generator,
                       k: int, describe: Callable[[int], str], budget: bool = False) -> SpeculativeOutcome:
    """Decode after ``ids`` (``ids[base:]`` already output, ``unc``/``con`` their log-probabilities,
    ``unc`` None where not yet known from ``pending`` on) until EOS, ``max_new_tokens`` outputs or
    ``limit`` tokens in all, with rounds of at most ``k`` sampled draft tokens (see the module
    docstring). ``describe(token)`` spells a token for errors. ``budget``: rows are token-budget
    masks (``max_tokens`` = the outputs left, EOS included), so the output ends complete."""
    size = target.vocab.size
    out = SpeculativeOutcome(pending=pending)
    buffer = allocate_bitmask(k + 1, size)
    draft_limit = draft.context_length if draft.context_length is not None else 2**62
    while not out.reason:
        produced = len(ids) - base
        if produced >= max_new_tokens:
            out.reason = "length"
            break
        if len(ids) >= limit:
            out.reason = "context"
            break
        room = min(max_new_tokens - produced, limit - len(ids))
        out.rounds += 1
        # ---- draft: tokens, whether each was forced, the unpacked row of each position
        drafted: list[int] = []
        forced: list[bool] = []
        masks: list[np.ndarray | None] = []  # masks[j]: what row j allows (None: forced, or no constraint)
        q_dense: dict[int, np.ndarray] = {}  # the draft's sampling distribution at each sampled position
        sampled = 0
        ended = False
        while not ended and len(drafted) < room:
            j = len(drafted)
            allowed = None
            if matcher is not None:
                run = matcher.forced_tokens(room - j)
                if run:
                    if len(buffer) < j + len(run) + 1:
                        buffer = _grown(buffer, j + len(run) + 1, size)
                    if not budget:
                        matcher.fill_bitmask_draft(run, buffer, j)  # rows j .. j + len(run), each once
                    matcher.consume_many(run)
                    drafted.extend(run)
                    forced.extend([True] * len(run))
                    masks.extend([None] * len(run))
                    j = len(drafted)
                    if j == room:
                        break
                    if budget:  # (the run's own rows are not needed: only the row after it)
                        matcher.fill_bitmask(buffer, j, max_tokens=max_new_tokens - produced - j)
                else:
                    if len(buffer) < j + 1:
                        buffer = _grown(buffer, j + 1, size)
                    if budget:
                        matcher.fill_bitmask(buffer, j, max_tokens=max_new_tokens - produced - j)
                    else:
                        matcher.fill_bitmask(buffer, j)
                allowed = unpack_bitmask(buffer[j], size)
                only = np.flatnonzero(allowed)
                if len(only) == 1:  # one way on (an EOS, or a run cut at Limits.max_forced_length)
                    token = int(only[0])
                    matcher.consume(token)
                    drafted.append(token)
                    forced.append(True)
                    masks.append(None)
                    ended = token in eos
                    continue
            masks.append(allowed)  # row j: the next draft token's, or the target's own token's
            if sampled == k or j + 1 >= room or len(ids) + j >= draft_limit:
                break  # (the last position of the room is the target's own)
            seq = ids + drafted
            row = draft.logits(seq, len(seq))[-1]
            out.draft_calls += 1
            check_row(row, f"of the draft model at output position {len(seq) - base}")
            if params.do_sample:
                tokens, probs = support(row, allowed, params)
                token = int(tokens[int(rng.choice(len(probs), p=probs))])
                q = np.zeros(size, dtype=np.float64)
                q[tokens] = probs
                q_dense[j] = q
            else:
                token = greedy(row, allowed)
                if allowed is not None and not allowed[token]:  # every allowed logit -inf: the target decides
                    break
            if matcher is not None:
                matcher.consume(token)
            drafted.append(token)
            forced.append(False)
            sampled += 1
            ended = token in eos
        out.proposed += sampled
        # ---- verify: one target call over the output so far and the draft
        if sampled == 0 and (ended or len(drafted) == room):
            ids.extend(drafted)
            unc.extend([None] * len(drafted))
            con.extend([0.0] * len(drafted))
            out.forced += len(drafted)
            if ended:
                out.reason = "eos"
            continue
        seq = ids + drafted
        rows = target.logits(seq, out.pending)
        out.target_calls += 1
        first = len(ids)
        for position in range(out.pending, first):  # tokens output since the last call (forced ones)
            check_row(rows[position - out.pending], f"at output position {position - base}")
            unc[position - base] = unconstrained_log_prob(rows[position - out.pending], ids[position])
        kept = 0
        own: int | None = None  # the target's token after the kept ones
        for j, token in enumerate(drafted):
            row = rows[first + j - out.pending]
            check_row(row, f"at output position {first + j - base}")
            if forced[j]:
                kept += 1
                continue
            allowed = masks[j]
            if not params.do_sample:
                best = greedy(row, allowed)
                if best != token:
                    own = best
                    break
            else:
                tokens, probs = support(row, allowed, params)
                p = np.zeros(size, dtype=np.float64)
                p[tokens] = probs
                q = q_dense[j]
                if not rng.random() * q[token] < p[token]:  # keep with probability min(1, p / q)
                    residual = np.maximum(p - q, 0.0)
                    total = residual.sum()
                    if not total > 0:  # (p == q up to rounding: p itself)
                        residual, total = p, 1.0
                    support_ids = np.flatnonzero(residual)
                    own = int(support_ids[int(rng.choice(len(support_ids), p=residual[support_ids] / total))])
                    break
            kept += 1
            out.accepted += 1
        if own is None and kept == len(drafted) and not ended and len(drafted) < room:
            row = rows[first + kept - out.pending]
            check_row(row, f"at output position {first + kept - base}")
            if params.do_sample:
                tokens, probs = support(row, masks[kept], params)
                own = int(tokens[int(rng.choice(len(probs), p=probs))])
            else:
                own = greedy(row, masks[kept])
        if matcher is not None:
            matcher.rollback(len(drafted) - kept)
        new = drafted[:kept] + ([own] if own is not None else [])
        for j, token in enumerate(new):
            row = rows[first + j - out.pending]
            u = unconstrained_log_prob(row, token)
            unc.append(u)
            if j < kept and forced[j]:
                con.append(0.0)
                out.forced += 1
                continue
            allowed = masks[j]
            if allowed is None:
                con.append(u)
                continue
            assert matcher is not None  # (a row was filled)
            if j == kept and not matcher.consume(token):
                raise InvalidArgument(f"token {token} ({describe(token)!r}) at output position {first + j - base} "
                                      f"is not allowed by the constraint")
            con.append(constrained_log_prob(row, allowed, token))
        ids.extend(new)
        out.pending = len(ids)
        if new and new[-1] in eos:
            out.reason = "eos"
    return out


def _grown(buffer: np.ndarray, rows: int, size: int) -> np.ndarray:
    """A bitmask of at least ``rows`` rows holding ``buffer``'s rows first."""
    bigger = allocate_bitmask(max(rows, 2 * len(buffer)), size)
    bigger[: len(buffer)] = buffer
    return bigger
