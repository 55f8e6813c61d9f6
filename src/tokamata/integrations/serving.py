"""What the serving-engine backends (:mod:`.vllm`, :mod:`.sglang`) share: a request's spec
mapped to a front door, the model's vocabulary from its tokenizer, and :class:`RequestMatcher`,
one request's matcher with the engines' conventions (stop tokens, speculative drafts,
termination, failing alone). Imports no engine.

Invariants:
- A request kind maps to exactly one front door (:func:`request_recipe`): JSON Schema and
  JSON object -> ``json_schema``; regex -> ``regex``; choice -> a regex alternation of the
  escaped choices; grammar -> ``gbnf`` when a rule is written ``name ::=`` (GBNF), else Lark
  ``grammar``; structural tag -> ``structural_tag`` (its JSON Schema contents with the
  request's whitespace).
- ``stop`` ids (the request's EOS and user stop ids) are allowed exactly where the output is
  complete and end the request when accepted; elsewhere they are masked. Without ``stop``
  the vocabulary's EOS ids are the stop ids. A stop id is never consumed into the matcher.
- :meth:`RequestMatcher.validate` returns the accepted prefix of a draft and leaves the
  position unchanged; ``-1`` (speculative padding) ends the draft. It and :func:`fill_drafts`
  (the rows of many requests' drafts) run through the matcher's native draft calls
  (``Matcher.validate_tokens``, ``tokamata.fill_bitmasks_draft``): one call per request, or
  per batch, never a consume/fill/rollback loop per token.
- Errors fail the request alone: a token id out of range or refused makes ``accept`` return
  False; a limit reached while filling a mask (:class:`LimitExceeded`) is kept in
  :attr:`RequestMatcher.error`, the row allows only the stop ids, and every later ``accept``
  returns False, so the engine ends that request through its own error path.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

import numpy as np

from ..compile import recipe
from ..constraint import Constraint, Recipe
from ..errors import InvalidArgument, LimitExceeded, TokamataError, VocabularyError
from ..matcher import fill_bitmasks_draft
from ..vocab import Vocabulary

__all__ = ["RequestMatcher", "request_recipe", "vocabulary_from_tokenizer", "is_gbnf", "fill_drafts"]

_GBNF_RULE = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_-]*\s*::=", re.MULTILINE)

#: the request kinds (vLLM's StructuredOutputOptions names, lower case; SGLang's keys map here)
KINDS = ("json", "json_object", "regex", "grammar", "choice", "structural_tag")


def is_gbnf(text: str) -> bool:
    """True when a grammar writes its rules ``name ::= ...`` (GBNF) rather than Lark's
    ``name: ...``.

    >>> is_gbnf('root ::= "a"'), is_gbnf('start: "a"')
    (True, False)
    """
    return _GBNF_RULE.search(text) is not None


def request_recipe(kind: str, spec: Any, *, whitespace: str = "flexible", max_whitespace: int = 4,
                   limits=None) -> Recipe:
    """The recipe of a serving request: ``kind`` one of :data:`KINDS`, ``spec`` its text.
    JSON whitespace is ``whitespace`` (``"flexible"``: at most ``max_whitespace`` characters
    per place, so a model cannot loop on spaces until ``max_tokens``; or ``"compact"``).

    >>> request_recipe("choice", '["yes", "no"]').spec
    'yes|no'
    """
    if kind in ("json", "json_object"):
        schema = '{"type": "object"}' if kind == "json_object" else spec
        return recipe("json_schema", schema, whitespace=whitespace, max_whitespace=max_whitespace, limits=limits)
    if kind == "regex":
        return recipe("regex", spec, limits=limits)
    if kind == "grammar":
        if not isinstance(spec, str):
            raise InvalidArgument(f"a grammar must be text, got {type(spec).__name__}")
        return recipe("gbnf" if is_gbnf(spec) else "grammar", spec, limits=limits)
    if kind == "choice":
        choices = json.loads(spec) if isinstance(spec, str) else spec
        if not isinstance(choices, list) or not choices or not all(isinstance(c, str) for c in choices):
            raise InvalidArgument(f"choice must be a non-empty list of strings, got {spec!r:.80}")
        return recipe("regex", "|".join(re.escape(c) for c in choices), limits=limits)
    if kind == "structural_tag":
        return recipe("structural_tag", spec, whitespace=whitespace, max_whitespace=max_whitespace, limits=limits)
    raise InvalidArgument(f"unknown request kind {kind!r} (known: {', '.join(KINDS)})")


def vocabulary_from_tokenizer(tokenizer, vocab_size: int) -> Vocabulary:
    """The vocabulary of a transformers fast tokenizer over ``vocab_size`` logit columns. Ids
    the tokenizer has past ``vocab_size`` can never be sampled and are dropped; ids past the
    tokenizer's up to ``vocab_size`` are padding (never allowed)."""
    try:
        return Vocabulary.from_hf(tokenizer, size=vocab_size)
    except VocabularyError:
        full = Vocabulary.from_hf(tokenizer)
        if vocab_size >= full.size:
            raise
    eos = [e for e in full.eos_token_ids if e < vocab_size]
    if not eos:
        raise VocabularyError(f"every EOS id of the tokenizer is past the model's {vocab_size} logits")
    names = {text: [i for i in ids if i < vocab_size] for text, ids in full.special_token_names.items()}
    return Vocabulary.from_token_bytes(full.token_bytes[:vocab_size], eos, size=vocab_size,
                                       special_tokens={t: ids for t, ids in names.items() if ids})


class RequestMatcher:
    """One request's position in a constraint, with the engines' conventions (see the
    module docstring).

    >>> import tokamata
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", None, None], eos_token_ids=[2])
    >>> r = RequestMatcher(tokamata.compile_regex("ab", vocab), stop={2, 3})
    >>> r.validate([0, 1, 3, -1]), r.num_processed
    ([0, 1, 3], 0)
    >>> r.accept([0, 1, 3]), r.is_terminated()
    (True, True)
    """

    def __init__(self, constraint: Constraint, stop: Iterable[int] | None = None):
        self.constraint = constraint
        self.vocab_size = constraint.vocab_size
        eos = frozenset(constraint.vocab.eos_token_ids)
        self.stop = eos if stop is None else frozenset(int(t) for t in stop if 0 <= int(t) < self.vocab_size)
        self._eos_only = self.stop == eos
        self._stop_ids = np.asarray(sorted(self.stop), dtype=np.int64)
        self._eos_ids = np.asarray(sorted(eos - self.stop), dtype=np.int64)
        self.matcher = constraint.matcher()
        self.terminated = False
        self.num_processed = 0  #: tokens accepted and not rolled back (a stop id included)
        self.error: TokamataError | None = None  #: what failed this request mid-generation

    def _step(self, token: int) -> bool:
        """Advance by one token (not terminated); False when refused."""
        if token in self.stop:
            if not self.matcher.is_accepting():
                return False
            self.terminated = True
        elif not 0 <= token < self.vocab_size or not self.matcher.consume(token):
            return False
        self.num_processed += 1
        return True

    def accept(self, tokens: Iterable[int]) -> bool:
        """Advance by ``tokens`` in order; tokens after the request ended are ignored. False
        (the tokens before the refused one stay accepted) when one is refused or this
        request has failed."""
        if self.error is not None:
            return False
        try:
            for token in tokens:
                if self.terminated:
                    return True
                if not self._step(int(token)):
                    return False
        except TokamataError as error:
            self.error = error
            return False
        return True

    def validate(self, tokens: Iterable[int]) -> list[int]:
        """The longest prefix of ``tokens`` this request accepts (up to the first ``-1``, and
        up to the stop id that would end it), with the position unchanged."""
        if self.terminated or self.error is not None:
            return []
        draft, stop = self._cut(tokens)
        try:
            count = self.matcher.validate_tokens(draft)
            if stop is None or count < len(draft):
                return draft[:count]
            self.matcher.consume_many(draft)  # (a stop id after the whole draft: is the output complete?)
            try:
                complete = self.matcher.is_accepting()
            finally:
                self.matcher.rollback(len(draft))
        except TokamataError:
            return []  # (a limit in the draft: none of it is vouched for; fill_bitmask reports the error)
        return draft + [stop] if complete else draft

    def _cut(self, tokens: Iterable[int]) -> tuple[list[int], int | None]:
        """The draft up to its first ``-1``, id out of range or stop id (the stop id, or None)."""
        draft: list[int] = []
        for token in tokens:
            token = int(token)
            if not 0 <= token < self.vocab_size:
                break
            if token in self.stop:
                return draft, token
            draft.append(token)
        return draft, None

    def rollback(self, n: int) -> None:
        """Undo the last ``n`` accepted tokens (a stop id included)."""
        if n <= 0:
            return
        n = min(n, self.num_processed)
        self.num_processed -= n
        if self.terminated:
            self.terminated = False
            n -= 1
        self.matcher.rollback(n)

    def fill(self, bitmask, index: int) -> None:
        """Write the allowed next tokens into row ``index`` of an int32 bitmask (numpy or a
        CPU torch tensor); a request that failed or ended allows only its stop ids."""
        if self.live:
            try:
                self.matcher.fill_bitmask(bitmask, index)
            except TokamataError as error:
                self.error = error
            else:
                self.adjust_stops(bitmask, index)
                return
        row = np.asarray(bitmask[index]).view(np.uint32)
        row[:] = 0
        _set(row, self._stop_ids)

    @property
    def live(self) -> bool:
        """Neither ended nor failed: its rows come from its matcher."""
        return self.error is None and not self.terminated

    def adjust_stops(self, bitmask, index: int) -> None:
        """Make row ``index``, filled by this request's matcher, allow the stop ids exactly
        where the output is complete (a no-op when the stop ids are the vocabulary's EOS)."""
        if not self._eos_only:
            self._stops_into(np.asarray(bitmask[index]).view(np.uint32), self.matcher.is_accepting())

    def _stops_into(self, row: np.ndarray, complete: bool) -> None:
        """Row (uint32 words) of a position: the stop ids set iff ``complete``, the other EOS
        ids cleared."""
        _clear(row, self._eos_ids)
        if complete:
            _set(row, self._stop_ids)
        else:
            _clear(row, self._stop_ids)

    def is_terminated(self) -> bool:
        return self.terminated

    def reset(self) -> None:
        """Back to the start of the output."""
        self.matcher = self.constraint.matcher()
        self.terminated = False
        self.num_processed = 0
        self.error = None

    def copy(self) -> "RequestMatcher":
        """An independent request matcher at the same position."""
        twin = RequestMatcher.__new__(RequestMatcher)
        twin.__dict__.update(self.__dict__)
        twin.matcher = self.matcher.copy()
        return twin


def fill_drafts(requests: list[RequestMatcher], drafts: list, bitmask, starts: list[int]) -> list[tuple[int, bool]]:
    """The bitmask rows of many requests' speculative drafts in one native call (the GIL
    released for the batch): row ``starts[i] + j`` is what ``requests[i].fill`` writes after
    ``requests[i].accept(drafts[i][:j])``, for ``j`` from 0 until the draft ends (its first
    ``-1``, or its end) or a token is refused or ends the request (that token's row included,
    then it stops). Returns per request ``(rows written, ended)``: ``ended`` when its last
    written row's token is a stop id that ends it (or it had ended before). Nothing moves.
    A request that had failed writes its one stop-ids row; a limit reached in a draft fails
    that request alone (:attr:`RequestMatcher.error`, its row allows only its stop ids).

    >>> import tokamata
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", None], eos_token_ids=[2])
    >>> r = RequestMatcher(tokamata.compile_regex("ab", vocab))
    >>> bitmask = tokamata.allocate_bitmask(5, vocab.size)
    >>> fill_drafts([r], [[0, 1, 2, 0]], bitmask, [0]), bitmask[:, 0].tolist()
    ([(3, True)], [1, 2, 4, 0, 0])
    """
    results: list[tuple[int, bool] | None] = [None] * len(requests)
    cuts = [r._cut(d) if r.live else ([], None) for r, d in zip(requests, drafts)]
    live = [i for i, r in enumerate(requests) if r.live]
    complete = np.zeros(len(bitmask), dtype=np.uint8)
    written: list[int]
    try:
        written = fill_bitmasks_draft([requests[i].matcher for i in live], [cuts[i][0] for i in live], bitmask,
                                      [starts[i] for i in live], accepting=complete).tolist()
    except LimitExceeded:  # a limit in some draft: each on its own, to fail only that request
        written = []
        for i in live:
            try:
                written.append(int(fill_bitmasks_draft([requests[i].matcher], [cuts[i][0]], bitmask, [starts[i]],
                                                       accepting=complete)[0]))
            except LimitExceeded as error:
                requests[i].error = error
                written.append(0)
    rows = np.asarray(bitmask).view(np.uint32)
    for i, count in zip(live, written):
        request = requests[i]
        if request.error is not None:
            continue
        start = starts[i]
        if not request._eos_only:
            for j in range(count):
                request._stops_into(rows[start + j], bool(complete[start + j]))
        draft, stop = cuts[i]
        ended = stop is not None and count == len(draft) + 1 and bool(complete[start + count - 1])
        results[i] = (count, ended)
    for i, request in enumerate(requests):
        if results[i] is None:  # failed before or in its draft, or ended before it
            request.fill(bitmask, starts[i])
            results[i] = (1, request.terminated)
    return results  # type: ignore[return-value]


def _set(row: np.ndarray, ids: np.ndarray) -> None:
    if len(ids):
        np.bitwise_or.at(row, ids >> 5, (np.uint32(1) << (ids & 31).astype(np.uint32)))


def _clear(row: np.ndarray, ids: np.ndarray) -> None:
    if len(ids):
        np.bitwise_and.at(row, ids >> 5, ~(np.uint32(1) << (ids & 31).astype(np.uint32)))
