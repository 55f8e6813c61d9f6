"""The one per-sequence matcher: fill_bitmask / consume / rollback, all on the C++ hot path
(``cpp/include/tokamata/matcher_core.hpp``), for every kind of constraint.

Invariants:
- A matcher's position only changes through ``consume``/``consume_many`` (forward) and
  ``rollback`` (back); a refused token leaves it unchanged.
- ``fill_bitmask`` sets exactly the tokens ``consume`` accepts. EOS is allowed exactly when
  the output so far is complete; consuming it terminates the matcher, after which only EOS
  is set in bitmasks and ``allowed_tokens`` is empty.
- ``fill_bitmask``, ``consume``, ``consume_many``, ``is_accepting``, ``fill_bitmasks`` and
  ``consume_tokens`` run without the GIL. A matcher is used by one thread at a time;
  constraints are shared. ``consume_tokens`` (a batch's step: consume, then fill) is all or
  nothing per matcher: a matcher whose step raises is back where it was.
- ``copy.copy``/``copy.deepcopy`` give an independent matcher at the same position over the
  same (shared) constraint; a matcher does not pickle (its constraint does).
- Argument errors (token ids out of range, bitmask of the wrong dtype/shape/device) raise
  :class:`InvalidArgument` before anything is written or consumed: ``consume_many`` checks
  every id before consuming the first, and a :class:`LimitExceeded` in its middle rolls back
  what it consumed (nothing or all it reports). A token id is an ``int`` or an integer
  scalar (numpy integer, 0-d integer array or tensor); a float, even an integral one, or a
  bool is refused, never truncated.
- A matcher made with ``prefix`` (token healing) sets, until the output holds all of it, the
  tokens whose bytes are a prefix of the rest of it or begin with all of it and go on into a
  sentence; never EOS or special tokens. Everything above holds across that junction.
- ``validate_tokens`` and ``fill_bitmask_draft`` (speculative decoding) change nothing (but
  caches) and run without the GIL in one native call: they equal consume, fill and rollback
  token by token. At the first refused draft token they stop: ``fill_bitmask_draft`` has
  written the rows up to and including that token's position (the mask it was refused
  under) and nothing after it; draft ids that are not in ``[0, vocab_size)`` (``-1``
  padding included) raise :class:`InvalidArgument` before anything is written.
- ``fill_bitmask(..., max_tokens=n)`` (a token budget: n more tokens, EOS included) sets a
  subset of the plain row: the tokens after which a sentence then EOS fit in n - 1 tokens,
  and EOS when accepting. Exact for the regular strategy (lexer-state distances over the
  token graph); for ``"earley"`` sound (every set token leaves a concrete completion that
  fits) and non-empty when ``n >= budget_needed()``. The design and its proof are in
  ``cpp/src/matcher_budget.cpp``; a budget below every completion gives an empty row. Budgets are not
  combined with ``canonical=True`` (:class:`Unsupported`).
- ``forced_tokens`` and ``forced_bytes`` change nothing (but caches), run without the GIL and
  return at most ``Limits.max_forced_length`` items: the run of only-allowed tokens (no EOS),
  and the bytes every continuation of the output begins with.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from operator import attrgetter

import numpy as np

from . import _core
from .bitmask import check_bitmask
from .errors import InvalidArgument, TokamataError, Unsupported

__all__ = ["Matcher", "consume_tokens", "fill_bitmasks", "fill_bitmasks_draft"]

class Matcher:
    """Where one sequence is in a :class:`~tokamata.Constraint`.

    Example::

        m = constraint.matcher()
        while not m.is_terminated():
            m.fill_bitmask(bitmask, 0)
            token = sample(apply_bitmask(logits, bitmask))
            m.consume(token)
    """

    __slots__ = ("constraint", "_core", "prefix")

    def __init__(self, constraint, core, prefix: bytes = b""):
        self.constraint = constraint
        self._core = core
        #: the bytes the output must begin with (``Constraint.matcher(prefix=...)``)
        self.prefix = prefix

    def fill_bitmask(self, bitmask, index: int = 0, *, max_tokens: int | None = None) -> None:
        """Write the allowed next tokens into row ``index`` of an int32 ``[B, ceil(V/32)]``
        array (numpy, or a CPU torch tensor); bit ``t % 32`` of word ``t // 32`` is token t.

        With ``max_tokens=n`` (a token budget, n >= 1): only the tokens after which the
        output can still be ended, a sentence then EOS, within the n tokens left, this one and
        the EOS included; EOS when the output is complete. Pass ``max_new_tokens - generated``
        at each step and the generation ends in a sentence within its cap. Exact for the
        regular strategy; for ``"earley"`` sound (a set token always leaves a completion that
        fits), and never empty when ``n >= budget_needed()``. A budget too small for any
        completion gives an empty row (no bit set, not even EOS); see :meth:`budget_needed`.

        >>> import tokamata, numpy as np
        >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_token_ids=[3])
        >>> m = tokamata.compile_regex("a+b", vocab).matcher()
        >>> bitmask = np.zeros((1, 1), dtype=np.int32)
        >>> m.fill_bitmask(bitmask, max_tokens=2)     # "ab" then EOS fits; "a" would need 3
        >>> tuple(t for t in range(4) if bitmask[0, 0] >> t & 1)
        (2,)
        >>> m.fill_bitmask(bitmask, max_tokens=3)
        >>> tuple(t for t in range(4) if bitmask[0, 0] >> t & 1)
        (0, 2)
        """
        if max_tokens is not None:
            self._fill_budget(bitmask, index, max_tokens)
            return
        try:  # the core checks dtype, rank, contiguity, device, width and index itself
            self._core.fill_bitmask(bitmask, index)
        except (TypeError, ValueError, IndexError):
            check_bitmask(bitmask, self.constraint.vocab_size)  # raises the precise error
            raise InvalidArgument(f"bitmask row index {index!r} out of range for batch {len(bitmask)}") from None

    def _fill_budget(self, bitmask, index: int, max_tokens) -> None:
        budget = _budget(max_tokens)
        self._check_budget()
        try:
            self._core.fill_bitmask_budget(bitmask, index, budget, self.constraint.limits.max_budget_states)
        except (TypeError, ValueError, IndexError):
            check_bitmask(bitmask, self.constraint.vocab_size)
            raise InvalidArgument(f"bitmask row index {index!r} out of range for batch {len(bitmask)}") from None

    @property
    def supports_budgets(self) -> bool:
        """Whether token budgets (``fill_bitmask(..., max_tokens=n)``, :meth:`budget_needed`)
        are available for this matcher's constraint (not with ``canonical=True``)."""
        try:
            self._check_budget()
        except Unsupported:
            return False
        return True

    def _check_budget(self) -> None:
        if self.constraint.canonical is not None:
            raise Unsupported("token budgets with canonical=True", "the budget's completions are not checked "
                              "for canonical tokenization")
        if self.constraint.token_filter is not None:
            raise Unsupported("token budgets with token_filters", "the budget's completions are not checked "
                              "against the token filters")

    def budget_needed(self) -> int:
        """The fewest tokens, EOS included, within which the output can be ended from here
        (0 once terminated): exact for the regular strategy, an upper bound (a completion
        that was found) for ``"earley"``. ``fill_bitmask(..., max_tokens=n)`` is never empty
        for ``n >= budget_needed()``. Raises :class:`InvalidArgument` when no completion is
        known (a byte the vocabulary cannot spell), :class:`LimitExceeded` past
        ``Limits.max_budget_states``.

        >>> import tokamata
        >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_token_ids=[3])
        >>> m = tokamata.compile_regex("a+b", vocab).matcher()
        >>> m.budget_needed()       # "ab", then EOS
        2
        """
        self._check_budget()
        bound = self._core.budget_needed(self.constraint.limits.max_budget_states)
        if bound == _NO_BOUND:
            raise InvalidArgument("no completion of the output is known from here within the vocabulary")
        return bound

    def allowed_tokens(self) -> np.ndarray:
        """Sorted int32 array of the token ids allowed next (EOS ids included when accepting)."""
        if self._core.is_terminated():
            return np.zeros(0, dtype=np.int32)
        return np.asarray(self._core.allowed_tokens(), dtype=np.int32)

    def consume(self, token_id: int) -> bool:
        """Advance by one token. Returns False (position unchanged) if it is not allowed."""
        if type(token_id) is not int:
            token_id = _token_id(token_id)
        if not 0 <= token_id < self.constraint.vocab_size:
            raise InvalidArgument(f"token id {token_id} out of range [0, {self.constraint.vocab_size})")
        status = self._core.consume(token_id)
        return status == 0

    def consume_many(self, token_ids: Iterable[int]) -> int:
        """Consume tokens in order; returns how many were accepted before the first refusal.

        Every id is checked first: an id that is not an int in ``[0, vocab_size)`` raises
        :class:`InvalidArgument` with nothing consumed. An error while consuming (a
        :class:`LimitExceeded` from a limit reached by a later token) rolls back the tokens
        this call consumed before it is raised: the call consumes all it reports or nothing."""
        if isinstance(token_ids, (str, bytes, bytearray, memoryview)) or not isinstance(token_ids, Iterable):
            raise InvalidArgument(f"token ids must be an iterable of ints, got {type(token_ids).__name__}")
        try:
            tokens = [_token_id(t) for t in token_ids]
        except TypeError:  # (a 0-d array is an Iterable that cannot be iterated)
            raise InvalidArgument(f"token ids must be an iterable of ints, got {type(token_ids).__name__}") from None
        for t in tokens:
            if not 0 <= t < self.constraint.vocab_size:
                raise InvalidArgument(f"token id {t} out of range [0, {self.constraint.vocab_size})")
        before = self._core.history_length
        try:
            count, _ = self._core.consume_many(np.asarray(tokens, dtype=np.int32))
        except TokamataError:
            self._core.rollback(self._core.history_length - before)
            raise
        return count

    def rollback(self, n: int = 1) -> None:
        """Undo the last ``n`` consumed tokens (EOS included)."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise InvalidArgument(f"rollback count must be a non-negative int, got {n!r}")
        if n > self._core.history_length:
            raise InvalidArgument(f"cannot roll back {n} tokens: only {self._core.history_length} consumed")
        self._core.rollback(int(n))

    def is_accepting(self) -> bool:
        """The output so far is complete (EOS is allowed now)."""
        return self._core.is_accepting()

    def is_terminated(self) -> bool:
        """EOS has been consumed."""
        return self._core.is_terminated()

    def copy(self) -> "Matcher":
        """An independent matcher at the same position with the same history (what
        ``copy.copy`` and ``copy.deepcopy`` give too; the constraint is shared, immutable)."""
        return Matcher(self.constraint, self._core.copy(), self.prefix)

    def forced_tokens(self, max_tokens: int | None = None) -> list[int]:
        """The tokens forced from here: the run of tokens each of which is the only token
        allowed at its step. EOS is never part of it: a step where EOS is allowed (or is the
        only token), or where nothing is, ends the run. Nothing changes (consume the run with
        :meth:`consume_many` to skip those model calls). At most ``max_tokens`` tokens, and at
        most ``Limits.max_forced_length``.

        >>> import tokamata
        >>> vocab = tokamata.Vocabulary.from_token_bytes([b"ab", b"c", b"abc", None], eos_token_ids=[3])
        >>> m = tokamata.compile_regex("(abc)+", vocab).matcher()
        >>> m.forced_tokens()       # "ab" then "c" or "abc": two tokens allowed at the start
        []
        >>> m.consume(0), m.forced_tokens()
        (True, [1])
        """
        return self._core.forced_tokens(self._bound(max_tokens, "max_tokens"))

    def forced_bytes(self, max_bytes: int | None = None) -> bytes:
        """The bytes every allowed continuation of the output begins with, whatever its
        tokenization: empty when the output may end here, when a special token may come
        next, or when two different next bytes are possible. Nothing changes. At most
        ``max_bytes`` bytes, and at most ``Limits.max_forced_length``.

        >>> import tokamata
        >>> vocab = tokamata.Vocabulary.from_token_bytes([b"x", b" ", b"=", b"1", b"2", None], eos_token_ids=[5])
        >>> m = tokamata.compile_grammar('start: "x = " ("1" | "2")', vocab).matcher()
        >>> m.forced_bytes(), m.forced_tokens()
        (b'x = ', [0, 1, 2, 1])
        """
        return self._core.forced_bytes(self._bound(max_bytes, "max_bytes"))

    def validate_tokens(self, tokens: Iterable[int]) -> int:
        """How many leading tokens of a draft ``consume`` would accept in order (it stops at the
        first refused one); the matcher does not move. Ids must be in ``[0, vocab_size)``:
        strip speculative padding (``-1``) first.

        >>> import tokamata
        >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", None], eos_token_ids=[2])
        >>> m = tokamata.compile_regex("ab", vocab).matcher()
        >>> m.validate_tokens([0, 1, 2]), m.validate_tokens([0, 0, 1]), m.num_consumed
        (3, 1, 0)
        """
        ids = tokens if type(tokens) is list and all(type(t) is int for t in tokens) else \
            _draft_ids(tokens, self.constraint.vocab_size).tolist()
        try:  # the core checks the range of every id first
            return self._core.validate_draft(ids)
        except (TypeError, ValueError):
            _draft_ids(ids, self.constraint.vocab_size)  # raises the precise error
            raise

    def fill_bitmask_draft(self, tokens: Iterable[int], bitmask, start_index: int = 0) -> int:
        """The bitmask rows of a speculative draft, in one call: row ``start_index + i`` is the
        mask after consuming ``tokens[:i]``, for each accepted prefix; returns the rows
        written, ``validate_tokens(tokens) + 1``. At the first refused token it stops after
        that token's row (the mask the token was refused under); the rows after it are not
        written. The bitmask needs ``start_index + len(tokens) + 1`` rows. The matcher does
        not move.

        >>> import tokamata
        >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", None], eos_token_ids=[2])
        >>> m = tokamata.compile_regex("ab", vocab).matcher()
        >>> bitmask = tokamata.allocate_bitmask(4, vocab.size)
        >>> m.fill_bitmask_draft([0, 1, 2], bitmask)     # "a", then "b", then EOS, then only EOS
        4
        >>> bitmask[:, 0].tolist()
        [1, 2, 4, 4]
        """
        ids = tokens if type(tokens) is list and all(type(t) is int for t in tokens) else \
            _draft_ids(tokens, self.constraint.vocab_size).tolist()
        start = start_index if type(start_index) is int else _row_index(start_index)
        try:  # the core checks the ids' range, dtype, rank, contiguity, device, width and rows
            return self._core.fill_draft(ids, bitmask, start)
        except (TypeError, ValueError, IndexError):  # name what is wrong (nothing was written)
            _draft_ids(ids, self.constraint.vocab_size)
            _row_index(start)
            check_bitmask(bitmask, self.constraint.vocab_size)
            raise InvalidArgument(f"a draft of {len(ids)} tokens from row {start} needs "
                                  f"{start + len(ids) + 1} bitmask rows, the bitmask has {len(bitmask)}") from None

    def _bound(self, value: int | None, name: str) -> int:
        """``value`` (None: the limit) capped at ``Limits.max_forced_length``, or InvalidArgument."""
        bound = self.constraint.limits.max_forced_length
        if value is None:
            return bound
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise InvalidArgument(f"{name} must be a non-negative int or None, got {value!r}")
        return min(int(value), bound)

    def __copy__(self) -> "Matcher":
        return self.copy()

    def __deepcopy__(self, memo) -> "Matcher":
        return self.copy()

    def __reduce__(self):
        raise InvalidArgument("a Matcher does not pickle (it is one sequence's live position): pickle its "
                              "constraint and replay the sequence's tokens with consume_many")

    @property
    def num_consumed(self) -> int:
        """Tokens consumed so far and not rolled back."""
        return self._core.history_length

    @property
    def num_configurations(self) -> int:
        """Ways the output so far lexes and parses (1 for unambiguous text)."""
        return self._core.num_configurations

    def __repr__(self) -> str:
        return (f"Matcher(consumed={self._core.history_length}, accepting={self.is_accepting()}, "
                f"terminated={self.is_terminated()}, configurations={self._core.num_configurations})")


def fill_bitmasks(matchers: Sequence[Matcher], bitmask, indices: Sequence[int] | None = None, *,
                  threads: int = 1, max_tokens: Sequence[int] | None = None) -> None:
    """Fill row ``indices[i]`` (default ``i``) of ``bitmask`` for each matcher, in one call
    that releases the GIL for the whole batch; ``threads > 1`` spreads the matchers over that
    many threads (a matcher listed twice is filled by one thread). ``max_tokens``: one token
    budget per matcher (as :meth:`Matcher.fill_bitmask` takes it).

    Example::

        tokamata.fill_bitmasks([m0, m1], bitmask)   # rows 0 and 1
    """
    # (this is the serial part of a threaded batch: a few checks and one comprehension)
    matchers = _matcher_list(matchers, "fill_bitmasks")
    _check_threads(threads)
    rows = _batch_rows(indices, len(matchers))
    budgets = None
    if max_tokens is not None:
        if isinstance(max_tokens, (str, bytes)) or not isinstance(max_tokens, Iterable):
            raise InvalidArgument(f"max_tokens must be a sequence of ints, one per matcher, got "
                                  f"{type(max_tokens).__name__}")
        budgets = np.asarray([_budget(n) for n in max_tokens], dtype=np.int32)
        if budgets.shape != (len(matchers),):
            raise InvalidArgument(f"need one budget per matcher, got {budgets.shape[0]} for {len(matchers)}")
        for m in matchers:
            if isinstance(m, Matcher):
                m._check_budget()
    try:
        cores = list(map(_CORE_OF, matchers))  # (C-level loops: this part runs on one thread)
        if budgets is None:
            try:  # (all native cores: the common case, checked by the binding's conversion)
                _core.fill_bitmasks(cores, bitmask, rows, int(threads))
                return
            except TypeError:
                pass
        native = set(map(type, cores)) <= _NATIVE_CORES
        engines = cores if native else [getattr(c, "core", c) for c in cores]  # a canonical engine, filtered after
        if budgets is None:
            _core.fill_bitmasks(engines, bitmask, rows, int(threads))
        else:
            limit = min((m.constraint.limits.max_budget_states for m in matchers), default=1)
            _core.fill_bitmasks_budget(engines, bitmask, rows, budgets, limit, int(threads))
        if not native:
            for c, row in zip(cores, rows.tolist()):
                if c is not getattr(c, "core", c):
                    c.filter_row(bitmask, row)
    except (AttributeError, TypeError, ValueError, IndexError):
        # name what is wrong: the matchers, the bitmask, or the rows (nothing was written)
        for m in matchers:
            if not isinstance(m, Matcher):
                raise InvalidArgument(f"fill_bitmasks takes Matcher objects, got {type(m).__name__}") from None
        for size in {m.constraint.vocab_size for m in matchers} or {1}:  # (no matchers: dtype, rank, layout)
            check_bitmask(bitmask, size)
        if len(rows) and (rows.min() < 0 or rows.max() >= len(bitmask)):
            raise InvalidArgument(f"row indices must be in [0, {len(bitmask)})") from None
        raise


def consume_tokens(matchers: Sequence[Matcher], tokens: Sequence[int], bitmask=None,
                   indices: Sequence[int] | None = None, *, threads: int = 1) -> np.ndarray:
    """A server's decoding step for a batch, in one call that releases the GIL for the whole
    batch: matcher ``i`` consumes ``tokens[i]`` (``-1``: nothing, e.g. a request that has just
    joined the batch), then, when ``bitmask`` is given, fills row ``indices[i]`` (default
    ``i``) with its next allowed tokens: what ``consume`` then ``fill_bitmask`` do, per matcher.
    Returns a bool array: ``accepted[i]`` is what ``matchers[i].consume(tokens[i])`` returns
    (True for ``-1``). ``threads > 1`` spreads the matchers over that many threads; a matcher's
    consume and fill run on the same thread (the position the consume writes is what the fill
    reads), and a batch listed in the same order keeps its matchers on the same threads from
    step to step, here and in :func:`fill_bitmasks`.

    - Everything is checked before anything is consumed or written (:class:`InvalidArgument`):
      ids in ``[-1, vocab_size)``, one token (and row) per matcher, no matcher listed twice.
    - A refused token leaves its matcher where it was; its row is that position's mask.
    - When a matcher's consume or fill raises (a :class:`LimitExceeded`), every other matcher
      is consumed and filled as without it; that matcher is left where it was before the call
      (nothing consumed) and its row holds that position's mask (all zeros when that cannot
      be filled either). The error of the first such matcher is raised once the whole batch
      has run, with ``index`` its position in ``matchers``; any other failing matcher is left
      the same way (its ``num_consumed`` did not move).
    - Matchers with token filters (``canonical=True``, ``token_filters``) consume one by one
      in Python before the batch (their filter state lives there); their rows are filtered
      after it.

    >>> import tokamata
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", None], eos_token_ids=[2])
    >>> c = tokamata.compile_regex("a+b", vocab)
    >>> batch = [c.matcher(), c.matcher(), c.matcher()]
    >>> bitmask = tokamata.allocate_bitmask(3, vocab.size)
    >>> tokamata.consume_tokens(batch, [0, 1, -1], bitmask).tolist()   # "b" cannot start
    [True, False, True]
    >>> bitmask[:, 0].tolist()     # after "a": "a" or "b"; the other two are still at the start
    [3, 1, 1]
    """
    matchers = _matcher_list(matchers, "consume_tokens")
    _check_threads(threads)
    ids = _step_tokens(tokens, len(matchers))
    if bitmask is None:
        if indices is not None:
            raise InvalidArgument("row indices without a bitmask")
        rows = _ROWS[:0]
    else:
        rows = _batch_rows(indices, len(matchers))
    status = np.zeros(len(matchers), dtype=np.uint8)
    failed: list[tuple[int, TokamataError]] = []
    try:
        cores = list(map(_CORE_OF, matchers))  # (C-level loops: this part runs on one thread)
        try:  # (all native cores: the common case, checked by the binding's conversion)
            _core.consume_tokens(cores, ids, bitmask, rows, status, int(threads))
        except TypeError:
            if set(map(type, cores)) <= _NATIVE_CORES:
                raise
            _step_filtered(matchers, cores, ids, bitmask, rows, status, int(threads), failed)
        except TokamataError as error:  # (the first failed matcher's; every other step has run)
            failed.append((int(np.flatnonzero(status == _STEP_FAILED)[0]), error))
    except (AttributeError, TypeError, ValueError, IndexError):
        _diagnose_step(matchers, ids, bitmask, rows)
        raise
    if failed:
        index, first = min(failed, key=lambda pair: pair[0])
        first.index = index
        raise first
    return status == 0


def _step_filtered(matchers: list, cores: list, ids: np.ndarray, bitmask, rows: np.ndarray, status: np.ndarray,
                   threads: int, failed: list) -> None:
    """consume_tokens with matchers whose token filter lives in Python (canonical=True,
    token_filters): they consume one by one here, then step in the native batch without a token
    (a fill), and their rows are filtered after it; a failure is all or nothing as in the core."""
    _diagnose_step(matchers, ids, bitmask, rows)  # (nothing may be consumed before the checks)
    ids = ids.copy()
    filtered: dict[int, int] = {}  # their consume's status
    moved: set[int] = set()        # those that consumed their token
    for i, c in enumerate(cores):
        if type(c) in _NATIVE_CORES:
            continue
        filtered[i], token, ids[i] = 0, int(ids[i]), -1
        try:
            if token >= 0:
                filtered[i] = c.consume(token)
                if filtered[i] == 0:
                    moved.add(i)
        except TokamataError as error:
            filtered[i] = _STEP_FAILED
            failed.append((i, error))
    try:
        _core.consume_tokens([getattr(c, "core", c) for c in cores], ids, bitmask, rows, status, threads)
    except TokamataError as error:
        failed.append((int(np.flatnonzero(status == _STEP_FAILED)[0]), error))
    for i, consumed in filtered.items():
        if status[i] == _STEP_FAILED:  # its fill failed: undo its consume too
            if i in moved:
                cores[i].rollback(1)
            continue
        status[i] = consumed
        if bitmask is not None:
            cores[i].filter_row(bitmask, int(rows[i]))


def _step_tokens(tokens, count: int) -> np.ndarray:
    """One token per matcher as a 1-D int32 array (``-1``: none), or InvalidArgument (the core
    checks each id against its matcher's vocabulary)."""
    if type(tokens) is list:  # (a server's list of ints: one C-level conversion; ranges are checked natively)
        try:
            ids = np.frombuffer(array("i", tokens), dtype=np.int32)
        except (TypeError, OverflowError):
            ids = None
        if ids is not None and len(ids) == count:
            return ids
    if isinstance(tokens, np.ndarray) and tokens.dtype.kind in "iu" and tokens.ndim == 1:
        ids = tokens.astype(np.int64)
    else:
        if isinstance(tokens, (str, bytes, bytearray, memoryview)) or not isinstance(tokens, Iterable):
            raise InvalidArgument(f"tokens must be a sequence of ints, one per matcher, got {type(tokens).__name__}")
        try:
            ids = np.asarray([t if type(t) is int else _token_id(t) for t in tokens], dtype=np.int64)
        except OverflowError:
            raise InvalidArgument("token id out of range") from None
    if ids.shape != (count,):
        raise InvalidArgument(f"need one token per matcher, got {len(ids)} for {count}")
    if count and (int(ids.min()) < -1 or int(ids.max()) >= _INT32_END):
        raise InvalidArgument(f"token ids must be in [-1, vocab_size), got {int(ids.min())}..{int(ids.max())}")
    return ids.astype(np.int32)


def _diagnose_step(matchers: list, ids: np.ndarray, bitmask, rows: np.ndarray) -> None:
    """Raises the InvalidArgument that names what consume_tokens' core refused (nothing was
    consumed or written), or returns when none applies."""
    for i, m in enumerate(matchers):
        if not isinstance(m, Matcher):
            raise InvalidArgument(f"consume_tokens takes Matcher objects, got {type(m).__name__}", index=i) from None
        if not -1 <= int(ids[i]) < m.constraint.vocab_size:
            raise InvalidArgument(f"token id {int(ids[i])} out of range [-1, {m.constraint.vocab_size})",
                                  index=i) from None
    seen: dict[int, int] = {}
    for i, m in enumerate(matchers):
        if seen.setdefault(id(m), i) != i:
            raise InvalidArgument(f"a matcher is listed twice (entries {seen[id(m)]} and {i})", index=i) from None
    if bitmask is not None:
        for size in {m.constraint.vocab_size for m in matchers} or {1}:
            check_bitmask(bitmask, size)
        if len(rows) and (rows.min() < 0 or rows.max() >= len(bitmask)):
            raise InvalidArgument(f"row indices must be in [0, {len(bitmask)})") from None


def fill_bitmasks_draft(matchers: Sequence[Matcher], drafts: Sequence[Iterable[int]], bitmask,
                        starts: Sequence[int] | None = None, *, threads: int = 1, accepting=None) -> np.ndarray:
    """:meth:`Matcher.fill_bitmask_draft` for a batch, in one call that releases the GIL for the
    whole batch: matcher ``i``'s rows begin at ``starts[i]`` (default: right after the rows
    of the drafts before it, ``len(draft) + 1`` each); returns the rows written per matcher
    (int64). ``threads > 1`` spreads the matchers over that many threads; the drafts' rows
    must not overlap. ``accepting`` (optional, uint8, one entry per bitmask row) gets 1 for
    each written row whose position is complete (EOS allowed), else 0: for servers that map
    their own stop tokens onto the rows. Nothing moves.

    Example::

        # rows 0-4: request 0's draft of 4 tokens; rows 5-9: request 1's
        written = tokamata.fill_bitmasks_draft([m0, m1], [draft0, draft1], bitmask, [0, 5])
    """
    try:
        matchers = list(matchers)
        drafts = list(drafts)
    except TypeError:
        raise InvalidArgument("fill_bitmasks_draft takes a sequence of Matcher objects and one of drafts") from None
    if len(drafts) != len(matchers):
        raise InvalidArgument(f"need one draft per matcher, got {len(drafts)} for {len(matchers)}")
    for m in matchers:
        if not isinstance(m, Matcher):
            raise InvalidArgument(f"fill_bitmasks_draft takes Matcher objects, got {type(m).__name__}")
    _check_threads(threads)
    tokens, lengths = _draft_batch(matchers, drafts)
    offsets = np.zeros(len(drafts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if starts is None:
        rows = (offsets[:-1] + np.arange(len(drafts), dtype=np.int64)).astype(np.int32)
    else:
        rows = _row_indices(starts)
        if rows.shape != (len(matchers),):
            raise InvalidArgument(f"need one start row per matcher, got {rows.shape[0]} for {len(matchers)}")
    if accepting is not None and not (isinstance(accepting, np.ndarray) and accepting.dtype == np.uint8
                                      and accepting.ndim == 1 and accepting.flags.c_contiguous
                                      and accepting.flags.writeable):
        raise InvalidArgument("accepting must be a writable, contiguous 1-D uint8 numpy array")
    try:
        written = _core.fill_bitmasks_draft([m._core for m in matchers], tokens, offsets, bitmask, rows,
                                            int(threads), accepting)
    except (TypeError, ValueError, IndexError) as error:
        for size in {m.constraint.vocab_size for m in matchers} or {1}:
            check_bitmask(bitmask, size)
        if accepting is not None and len(accepting) < len(bitmask):
            raise InvalidArgument(f"accepting needs one entry per bitmask row ({len(bitmask)}), "
                                  f"got {len(accepting)}") from None
        ends = rows.astype(np.int64) + lengths + 1
        if len(ends) and int(ends.max()) > len(bitmask):
            raise InvalidArgument(f"the drafts need {int(ends.max())} bitmask rows, the bitmask has "
                                  f"{len(bitmask)}") from None
        raise InvalidArgument(f"fill_bitmasks_draft: {error}") from None
    return np.asarray(written, dtype=np.int64)


def _draft_batch(matchers: list[Matcher], drafts: list) -> tuple[np.ndarray, np.ndarray]:
    """The drafts as one flat int32 array of checked ids and their lengths (int64): one
    numpy check for lists of ints (a server's drafts), :func:`_draft_ids` per draft else."""
    if all(type(d) is list for d in drafts):
        flat = [t for d in drafts for t in d]
        if all(type(t) is int for t in flat):
            lengths = np.fromiter(map(len, drafts), dtype=np.int64, count=len(drafts))
            try:
                ids = np.array(flat, dtype=np.int64)
            except OverflowError:
                ids = None
            sizes = {m.constraint.vocab_size for m in matchers}
            bound = np.repeat(np.fromiter((m.constraint.vocab_size for m in matchers), dtype=np.int64,
                                          count=len(matchers)), lengths) if len(sizes) > 1 else min(sizes, default=0)
            if ids is not None and (not len(ids) or (int(ids.min()) >= 0 and bool((ids < bound).all()))):
                return ids.astype(np.int32), lengths
    checked = [_draft_ids(d, m.constraint.vocab_size) for m, d in zip(matchers, drafts)]  # (raises the error)
    lengths = np.fromiter(map(len, checked), dtype=np.int64, count=len(checked))
    return (np.concatenate(checked) if checked else np.zeros(0, dtype=np.int32)), lengths


def _draft_ids(tokens, vocab_size: int) -> np.ndarray:
    """A draft as a 1-D int32 array of ids in ``[0, vocab_size)``, or InvalidArgument (``-1``
    padding, ids out of range, floats and bools are refused)."""
    if isinstance(tokens, np.ndarray) and tokens.dtype.kind in "iu" and tokens.ndim == 1:
        ids = tokens
    else:
        if isinstance(tokens, (str, bytes, bytearray, memoryview)) or not isinstance(tokens, Iterable):
            raise InvalidArgument(f"draft tokens must be an iterable of ints, got {type(tokens).__name__}")
        try:
            ids = np.asarray([t if type(t) is int else _token_id(t) for t in tokens], dtype=np.int64)
        except TypeError:  # (a 0-d array is an Iterable that cannot be iterated)
            raise InvalidArgument(f"draft tokens must be an iterable of ints, got {type(tokens).__name__}") from None
        except OverflowError:
            raise InvalidArgument(f"draft token id out of range [0, {vocab_size})") from None
    if len(ids):
        low, high = int(ids.min()), int(ids.max())
        if low < 0 or high >= vocab_size:
            bad = low if low < 0 else high
            what = " (speculative padding: strip it first)" if bad == -1 else ""
            raise InvalidArgument(f"draft token id {bad} out of range [0, {vocab_size}){what}")
    return np.ascontiguousarray(ids, dtype=np.int32)


def _row_index(index) -> int:
    """A start row: a non-negative int (integer scalars too), or InvalidArgument."""
    try:
        row = _token_id(index)
    except InvalidArgument:
        raise InvalidArgument(f"start_index must be an int, got {index!r}") from None
    if not 0 <= row < _INT32_END:
        raise InvalidArgument(f"start_index {row} is out of range [0, {_INT32_END})")
    return row


_ROWS = np.arange(1024, dtype=np.int32)
_ROWS.setflags(write=False)
#: a matcher's core, read without a Python-level loop (fill_bitmasks' serial part)
_CORE_OF = attrgetter("_core")
#: core types whose rows the native batch fill writes completely (no filter after it)
_NATIVE_CORES = frozenset({_core.MatcherCore})


def _token_id(token_id) -> int:
    """``token_id`` as a Python int (0-d integer arrays and tensors too), or InvalidArgument:
    a float (``97.5``, ``np.array(97.5)``, ``torch.tensor(98.7)``) is refused, not truncated."""
    if isinstance(token_id, bool):
        raise InvalidArgument("token id must be an int, got bool")
    if isinstance(token_id, (int, np.integer)):
        return int(token_id)
    if getattr(token_id, "ndim", 0) != 0:  # (.item() also reads a 1-element array of any rank)
        raise InvalidArgument(f"token id must be an int or a 0-d integer array, got {type(token_id).__name__} "
                              f"of shape {tuple(token_id.shape)}")
    try:  # 0-d arrays / tensors: their item is a Python int only for integer dtypes
        value = token_id.item()
    except (AttributeError, ValueError, TypeError, RuntimeError):
        raise InvalidArgument(f"token id must be an int, got {type(token_id).__name__}") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"token id must be an int, got {type(token_id).__name__} holding "
                              f"{type(value).__name__} {value!r}")
    return value


def _matcher_list(matchers, caller: str) -> list:
    """A batch call's matchers as a list, or InvalidArgument naming ``caller``."""
    try:
        return list(matchers)
    except TypeError:
        raise InvalidArgument(f"{caller} takes a sequence of Matcher objects, got "
                              f"{type(matchers).__name__}") from None


def _check_threads(threads) -> None:
    """A batch call's ``threads``: an int in [1, 256] (a bool is refused), or InvalidArgument."""
    if type(threads) is not int and (isinstance(threads, bool) or not isinstance(threads, (int, np.integer))):
        raise InvalidArgument(f"threads must be an int in [1, 256], got {threads!r}")
    if not 1 <= threads <= 256:
        raise InvalidArgument(f"threads must be an int in [1, 256], got {threads!r}")


def _batch_rows(indices, count: int) -> np.ndarray:
    """One bitmask row per matcher of a batch of ``count``: ``indices`` (default ``0..count-1``)
    as int32, or InvalidArgument."""
    if indices is None:
        return _ROWS[:count] if count <= len(_ROWS) else np.arange(count, dtype=np.int32)
    rows = _row_indices(indices)
    if rows.shape != (count,):
        raise InvalidArgument(f"need one row index per matcher, got {rows.shape[0]} for {count}")
    return rows


def _row_indices(indices) -> np.ndarray:
    """``indices`` as a 1-D int32 array of row numbers in ``[0, 2**31)``, or InvalidArgument
    (floats are refused, not truncated; the core checks them against the batch)."""
    if isinstance(indices, np.ndarray) and indices.dtype.kind in "iu":
        if indices.ndim != 1:
            raise InvalidArgument(f"row indices must be 1-D, got shape {indices.shape}")
        if len(indices) and (int(indices.min()) < 0 or int(indices.max()) >= _INT32_END):
            raise InvalidArgument(f"row indices must be in [0, {_INT32_END}), got {indices.min()}..{indices.max()}")
        return indices.astype(np.int32)
    if isinstance(indices, (str, bytes)) or not isinstance(indices, Iterable):
        raise InvalidArgument(f"row indices must be a sequence of ints, got {type(indices).__name__}")
    rows = []
    for index in indices:
        try:
            row = _token_id(index)
        except InvalidArgument:
            raise InvalidArgument(f"row indices must be ints, got {index!r}") from None
        if not 0 <= row < _INT32_END:
            raise InvalidArgument(f"row index {row} is out of range [0, {_INT32_END})")
        rows.append(row)
    return np.asarray(rows, dtype=np.int32)


_INT32_END = 2**31
_STEP_FAILED = 3  # (consume_tokens' status of a matcher whose step raised)
_NO_BOUND = 2**31 - 1  # (the core's kNoBound)


def _budget(max_tokens) -> int:
    """A token budget as an int in ``[1, 2**31 - 1)``, or InvalidArgument."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, np.integer)):
        raise InvalidArgument(f"max_tokens must be an int >= 1 or None, got {max_tokens!r}")
    if not 1 <= max_tokens < _NO_BOUND:
        raise InvalidArgument(f"max_tokens must be at least 1 (the EOS that ends the output counts), "
                              f"got {int(max_tokens)}")
    return int(max_tokens)
