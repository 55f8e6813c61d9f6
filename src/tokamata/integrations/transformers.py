"""Hugging Face transformers adapter: :class:`TokamataLogitsProcessor`.

Usage::

    from transformers import LogitsProcessorList
    from tokamata.integrations.transformers import TokamataLogitsProcessor

    vocab = tokamata.Vocabulary.from_hf(tokenizer, size=model.config.vocab_size)
    constraint = tokamata.compile_regex(r"\\d{4}-\\d\\d-\\d\\d", vocab)
    out = model.generate(**inputs, logits_processor=LogitsProcessorList(
        [TokamataLogitsProcessor(constraint)]), max_new_tokens=20)

Put the processor last in the list (after temperature, top-k, repetition penalty ...), so that
nothing re-enables a token it removed.

How the stateless protocol is handled. transformers calls ``processor(input_ids, scores)`` with
the whole sequences so far, one row per sequence (per beam under beam search), and keeps no
state for us. The processor keeps one :class:`tokamata.Matcher` per row together with the tokens
it consumed. On each call the generated part of every row (``input_ids[:, prompt_length:]``) is
matched against those records:

- the common case, the row grew by one token: consume it;
- beam search reordered or duplicated rows: the row is rebuilt from the old row with the longest
  common prefix (a copy of its matcher, rolled back to the shared prefix, then fed the rest);
- assisted decoding or a shorter sequence: roll back to the common prefix.

Invariants:
- Every row of the processed scores has at least one finite entry: the constraint never reaches a
  state without an allowed token, and a row that has generated an EOS token allows only EOS from
  then on (transformers pads finished rows; the pad tokens are not fed to the matcher). This
  keeps sampling and beam search well defined.
- A generated token the constraint does not allow is an error (:class:`InvalidArgument`), never
  silently skipped: it means the constraint's vocabulary is not the model's, or another processor
  after this one re-enabled tokens, or ``prompt_length`` is wrong.
- Score columns beyond the constraint's vocabulary (models often pad their embedding matrix) are
  set to -inf; fewer score columns than the vocabulary has is an error.
- ``prompt_length`` is inferred from the first call (with left padding every row's prompt ends
  at the same column). The processor notices a new ``generate`` call (different batch size or
  prompt) and starts over, so one processor can serve several calls, one at a time. It is not
  thread-safe: use one processor per concurrent ``generate``.
"""

from __future__ import annotations

import sys
from typing import cast

import numpy as np

try:
    import torch
    from transformers import LogitsProcessor
except ImportError as exc:  # pragma: no cover - exercised only without the extras
    raise ImportError(
        "tokamata.integrations.transformers needs torch and transformers; install them with: "
        "pip install 'tokamata[transformers]'"
    ) from exc

from tokamata.bitmask import token_bitmask_row
from tokamata.integrations.apply import apply_bitmask
from tokamata.errors import InvalidArgument
from tokamata.integrations.resolve import resolve_constraint

__all__ = ["TokamataLogitsProcessor"]


class _Row:
    """The decoding state of one sequence: its matcher and the generated tokens it consumed."""

    __slots__ = ("matcher", "tokens", "done", "group")

    def __init__(self, matcher, tokens: list[int], done: bool, group: int):
        self.matcher = matcher
        self.tokens = tokens  # generated tokens fed to the matcher, EOS included, pads excluded
        self.done = done  # an EOS token was consumed
        self.group = group  # index of the row's constraint

    def copy(self) -> "_Row":
        return _Row(self.matcher.copy(), list(self.tokens), self.done, self.group)


class TokamataLogitsProcessor(LogitsProcessor):
    """Masks the scores of every row to the tokens that ``constraint`` allows next.

    ``constraint`` is a compiled tokamata constraint (e.g. from :func:`tokamata.compile_regex`)
    over the model's vocabulary, or a list of them, one per prompt of the batch: with ``k``
    constraints and ``n`` rows, rows ``i*n/k .. (i+1)*n/k - 1`` follow constraint ``i`` (this is
    how ``generate`` lays out ``num_beams`` and ``num_return_sequences`` copies of a prompt).
    All of them must share one vocabulary. ``prompt_length`` is the number of ``input_ids``
    columns that are prompt (not constrained); by default the length of the first call's
    ``input_ids``. A Python type (a dataclass, a pydantic model, ...) may stand for a
    constraint: it is compiled with :func:`tokamata.compile_type` over ``vocab`` (JSON, or
    ``syntax="python"``), and ``processor.constraint.parse(text)`` gives the instance back.

    ``max_new_tokens`` (the budget mode; pass the same value as ``generate``'s): every row is
    masked with a token budget (:meth:`tokamata.Matcher.fill_bitmask` with ``max_tokens`` =
    ``max_new_tokens`` less the columns generated so far), so each row ends with EOS after a
    complete output within ``max_new_tokens`` tokens (JSON closed, required keys present)
    instead of being cut off. A budget too small for any completion raises
    :class:`InvalidArgument` at the first step.
    """

    def __init__(self, constraint, prompt_length: int | None = None, *, vocab=None, syntax: str = "json",
                 max_new_tokens: int | None = None):
        if prompt_length is not None and (not isinstance(prompt_length, int) or prompt_length < 0):
            raise InvalidArgument(f"prompt_length must be a non-negative int or None, not {prompt_length!r}")
        if max_new_tokens is not None and (isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int)
                                           or max_new_tokens < 1):
            raise InvalidArgument(f"max_new_tokens must be an int >= 1 or None, not {max_new_tokens!r}")
        #: the token budget of every row (None: plain masks)
        self.max_new_tokens = max_new_tokens
        constraints = list(constraint) if isinstance(constraint, (list, tuple)) else [constraint]
        constraints = [resolve_constraint(c, vocab, syntax) for c in constraints]
        if not constraints:
            raise InvalidArgument("at least one constraint is needed")
        self.constraints = constraints
        self.constraint = constraints[0]
        self.vocab = self.constraint.vocab
        for c in constraints[1:]:
            if c.vocab is not self.vocab and (
                c.vocab.size != self.vocab.size
                or tuple(c.vocab.eos_token_ids) != tuple(self.vocab.eos_token_ids)
            ):
                raise InvalidArgument("all constraints of one TokamataLogitsProcessor must share a vocabulary")
        self.vocab_size = int(self.vocab.size)
        self._eos = sorted(int(t) for t in self.vocab.eos_token_ids)
        self._eos_set = frozenset(self._eos)
        self._fixed_prompt_length = prompt_length
        self.prompt_length: int | None = prompt_length
        self._prompt: torch.Tensor | None = None
        self._rows: list[_Row] = []
        self._bitmask: np.ndarray | None = None
        self._eos_only = token_bitmask_row(self._eos, self.vocab_size)

    def reset(self) -> None:
        """Forget all rows; the next call starts a new generation."""
        self.prompt_length = self._fixed_prompt_length
        self._prompt = None
        self._rows = []

    # -- the protocol --------------------------------------------------------------------------

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if input_ids.dim() != 2 or scores.dim() != 2 or input_ids.shape[0] != scores.shape[0]:
            raise InvalidArgument(
                f"expected input_ids [batch, length] and scores [batch, vocab], got "
                f"{tuple(input_ids.shape)} and {tuple(scores.shape)}"
            )
        if scores.shape[1] < self.vocab_size:
            raise InvalidArgument(
                f"the model produces {scores.shape[1]} logits per token but the constraint's "
                f"vocabulary has {self.vocab_size} tokens: the constraint was compiled for another "
                f"tokenizer (build the Vocabulary from this model's tokenizer, with "
                f"size=model.config.vocab_size)"
            )
        self._sync(input_ids)
        batch = input_ids.shape[0]
        if self._bitmask is None or self._bitmask.shape[0] != batch:
            self._bitmask = np.zeros((batch, (self.vocab_size + 31) // 32), dtype=np.int32)
        bitmask = self._bitmask
        left = None
        if self.max_new_tokens is not None:
            assert self.prompt_length is not None  # (set by _sync)
            left = self.max_new_tokens - (input_ids.shape[1] - self.prompt_length)
            if left < 1:
                raise InvalidArgument(f"generate asks for token {input_ids.shape[1] - self.prompt_length + 1} but "
                                      f"the processor's max_new_tokens is {self.max_new_tokens}: pass it the "
                                      f"same max_new_tokens as generate")
        for b, row in enumerate(self._rows):
            if row.done:
                bitmask[b] = self._eos_only
            elif left is None:
                row.matcher.fill_bitmask(bitmask, b)
            else:
                row.matcher.fill_bitmask(bitmask, b, max_tokens=left)
                if not row.tokens and not bitmask[b].any():
                    raise InvalidArgument(f"max_new_tokens={self.max_new_tokens} is too small for any output of "
                                          f"the constraint (it needs {row.matcher.budget_needed()} tokens, EOS "
                                          f"included)")
        return cast("torch.FloatTensor", _apply(scores, bitmask))  # (a FloatTensor in, the same out)

    # -- state tracking ------------------------------------------------------------------------

    def _sync(self, input_ids: torch.Tensor) -> None:
        """Bring the per-row matchers in line with ``input_ids``."""
        batch, length = input_ids.shape
        if self._rows and not self._same_generation(input_ids):
            self.reset()
        if self.prompt_length is None:
            self.prompt_length = length
        if length < self.prompt_length:
            raise InvalidArgument(
                f"input_ids has {length} columns, fewer than prompt_length={self.prompt_length}"
            )
        if not self._rows:
            k = len(self.constraints)
            if batch % k:
                raise InvalidArgument(
                    f"{k} constraints cannot be spread over a batch of {batch} rows; give one "
                    f"constraint per prompt (rows per prompt = num_beams * num_return_sequences)"
                )
            per = batch // k
            self._prompt = input_ids[:, : self.prompt_length].detach().clone()
            self._rows = [_Row(self.constraints[b // per].matcher(), [], False, b // per) for b in range(batch)]
        generated = input_ids[:, self.prompt_length:].tolist()
        old = self._rows
        # Fast path: each row continues the row at the same index.
        if all(_is_continuation(r.tokens, g) for r, g in zip(old, generated)):
            for b, (row, seq) in enumerate(zip(old, generated)):
                self._advance(row, seq, b)
            return
        # Rows were reordered (beam search) or cut back (assisted decoding): rebuild each row
        # from the old row sharing the longest prefix with it; copy only when shared.
        # Rows never move between prompts, so parents are searched within the row's group.
        by_tokens: dict[tuple[int, tuple[int, ...]], _Row] = {}
        for row in old:
            by_tokens.setdefault((row.group, tuple(row.tokens)), row)
        taken: set[int] = set()
        new_rows = []
        for b, seq in enumerate(generated):
            group = old[b].group
            parent = by_tokens.get((group, tuple(seq[:-1]))) if seq else None
            if parent is None:
                parent = max(
                    (r for r in old if r.group == group), key=lambda r: _common_prefix(r.tokens, seq)
                )
            if id(parent) in taken:
                row = parent.copy()
            else:
                taken.add(id(parent))
                row = parent
            new_rows.append(row)
        # All copies are made above, before any row advances (advancing mutates in place).
        for b, (row, seq) in enumerate(zip(new_rows, generated)):
            self._advance(row, seq, b)
        self._rows = new_rows

    def _same_generation(self, input_ids: torch.Tensor) -> bool:
        prompt = self._prompt
        if prompt is None or input_ids.shape[0] != prompt.shape[0]:
            return False
        if input_ids.shape[1] < prompt.shape[1]:
            return False
        if prompt.device != input_ids.device:
            prompt = prompt.to(input_ids.device)
        # Beam search reorders rows only within a batch item, whose beams share the prompt.
        return bool(torch.equal(input_ids[:, : prompt.shape[1]], prompt))

    def _advance(self, row: _Row, seq: list[int], b: int) -> None:
        """Make ``row`` match the generated tokens ``seq``: roll back, then consume the rest."""
        common = _common_prefix(row.tokens, seq)
        if common == 0 and row.tokens:
            row.matcher = self.constraints[row.group].matcher()  # cheaper than a full rollback
            row.tokens.clear()
            row.done = False
        elif common < len(row.tokens):
            row.matcher.rollback(len(row.tokens) - common)
            del row.tokens[common:]
            row.done = bool(row.tokens) and row.tokens[-1] in self._eos_set
        if row.done:
            return  # the rest is padding after EOS
        for pos in range(common, len(seq)):
            token = seq[pos]
            if not row.matcher.consume(token):
                raise InvalidArgument(self._not_allowed_message(row, seq, pos, b))
            row.tokens.append(token)
            if token in self._eos_set:
                row.done = True
                return

    def _not_allowed_message(self, row: _Row, seq: list[int], pos: int, b: int) -> str:
        token = seq[pos]
        shown = None
        if 0 <= token < self.vocab_size:
            shown = self.vocab.token_bytes[token]
        so_far = b"".join(self.vocab.token_bytes[t] or b"" for t in row.tokens if t not in self._eos_set)
        return (
            f"row {b} generated token {token} ({shown!r}) after {so_far[-60:]!r} "
            f"(generated position {pos}), which the constraint does not allow. The masked scores "
            f"cannot produce it, so the model's vocabulary differs from the constraint's "
            f"(Vocabulary built from another tokenizer), a logits processor after this one "
            f"re-enabled tokens, or prompt_length={self.prompt_length} is wrong."
        )


def _is_continuation(done: list[int], seq: list[int]) -> bool:
    n = len(done)
    return len(seq) >= n and seq[:n] == done


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    i = 0
    while a[i] == b[i]:
        i += 1
    return i


def _apply(scores: torch.Tensor, bitmask: np.ndarray) -> torch.Tensor:
    """``scores[b, t] = -inf`` where bit t of row b is 0 (or t is past the bitmask), in place.

    Bits past the vocabulary are never set, so padded score columns become -inf too. On the
    CPU the bits are unpacked with numpy (2-3x faster than shifting int32 words in torch for a
    128k vocabulary, more on a busy machine); on other devices the words travel and are
    unpacked there.
    """
    if scores.device.type != "cpu" or sys.byteorder != "little":
        return apply_bitmask(scores, bitmask)
    blocked = torch.from_numpy(np.unpackbits((~bitmask).view(np.uint8), axis=-1, bitorder="little").view(np.bool_))
    width = scores.shape[1]
    if blocked.shape[1] >= width:
        blocked = blocked[:, :width]
    else:
        blocked = torch.nn.functional.pad(blocked, (0, width - blocked.shape[1]), value=True)
    return scores.masked_fill_(blocked, float("-inf"))
