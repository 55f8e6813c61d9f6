"""The canonical filter: which next tokens keep a token sequence a prefix of the tokenizer's
own encoding of some text of a language.

A token sequence ``T`` is a *canonical prefix* of a language ``L`` when some continuation
``T'`` makes ``T + T'`` exactly ``encode(decode(T + T'))`` (the exact reference encoder of
:class:`~tokamata.vocab.tokenizer_model.TokenizerModel`, continuation mode) with
``decode(T + T')`` in ``L``. The filter keeps, next to an engine position (anything with the
``MatcherCore`` methods ``consume``, ``rollback``, ``allowed_tokens``, ``is_accepting`` and
``position``, and its ``num_sweeps``), a small *filter state*, and says which of the engine's allowed tokens keep the
sequence a canonical prefix (sound: nothing else; complete: all of them).

The filter state is ``(open text, open tokens)``: the bytes after the last decided pretoken
boundary (:mod:`tokamata.vocab.pretoken_region`) and the tokens that spell them. Everything
before that boundary has been checked once and for all: its tokens are exactly the encoding of
its pretokens. :meth:`CanonicalFilter.step` appends a token's bytes, re-cuts the open text,
checks every pretoken that became decided (its tokens must align with its boundaries and equal
its encoding) and drops it from the state; it also checks, as a necessary condition, every
adjacent pair of tokens inside the open region whose junction a later text cannot cut (not a
pretoken boundary now, nor before a last whitespace character: such a junction stays inside
one pretoken whatever follows, and every pair of a BPE encoding passes
:func:`~tokamata.vocab.canonical.bigram_canonical`).

Liveness (:meth:`CanonicalFilter.viable`): a state is live when

- the engine accepts here and the open text encodes to exactly the open tokens (then ``EOS``
  is allowed: :meth:`CanonicalFilter.complete`); or
- some character the engine allows next decides every boundary of the open text and the open
  tokens encode it (whatever text follows, its own encoding continues the sequence); or
- some allowed next token leads to a live state (a depth-first search, memoized on
  ``(engine position, filter state)``, bounded by ``Limits.max_canonical_search`` states per
  question: :class:`~tokamata.LimitExceeded`, never a guess).

The first two are exact by the decided-boundary rule; the third is exact by definition. A
token without bytes (a special token) is never part of a canonical sequence (continuation
mode encodes control-token texts as text).

Invariants: a filter is immutable apart from its caches (dicts filled as questions are
answered; safe to share between threads under the GIL); states are hashable tuples; the
caches keyed by engine position hold only positions of the engine's current sweep epoch: a
long-life sweep (``ConstraintCore.sweep``) releases parser states and reuses their handles, so
every lookup first compares ``num_sweeps`` with the epoch its entries were made in and drops
them all when it moved (a position a core holds is never released, so the key of the core's
own position, taken after that check, is valid for its lookup and its store); the
engine position given to :meth:`viable` and :meth:`allowed` is restored before they return,
also when they raise.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import LimitExceeded
from ..limits import Limits
from .canonical import bigram_canonical
from .pretoken_region import region_family, text_region
from .pretokenize import compiled
from .vocabulary import Vocabulary

__all__ = ["CanonicalFilter", "EMPTY_STATE", "State", "complete_length"]

_SPACE = compiled(r"\s")
#: token ids the allowed-token cache of one filter holds at most (8 bytes each in a tuple)
_CACHED_IDS = 4_000_000
#: entries each other cache of one filter holds at most (states, steps, encodings, pairs)
_CACHED_ENTRIES = 1 << 18

#: ``(open text, open tokens)``
State = tuple[bytes, tuple[int, ...]]
EMPTY_STATE: State = (b"", ())


def complete_length(data: bytes) -> int:
    """The length of the longest prefix of ``data`` that ends on a UTF-8 character boundary
    (``data`` is a valid UTF-8 prefix)."""
    n = len(data)
    for back in range(1, min(4, n) + 1):
        b = data[n - back]
        if b < 0x80:
            return n if back == 1 else n - back + 1
        if b >= 0xC0:
            need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            return n if back >= need else n - back
    return n


_complete_length = complete_length


class CanonicalFilter:
    """The canonical filter of one vocabulary under one set of limits (module docstring).
    :class:`~tokamata.Unsupported` for a vocabulary whose tokenizer it cannot follow (no merges,
    a model or pre-tokenizer outside :func:`~tokamata.vocab.pretoken_region.region_family`).

    >>> # (a doctest needs a real tokenizer: see tests/unit/test_canonical_masks.py)
    """

    #: the state before any token
    initial_state: State = EMPTY_STATE

    def __init__(self, vocab: Vocabulary, limits: Limits):
        self.model = vocab.exact_tokenizer()
        self.family = region_family(self.model)
        self.vocab = vocab
        self.limits = limits
        self.token_bytes: Sequence[bytes | None] = vocab.token_bytes
        self.eos = frozenset(vocab.eos_token_ids)
        self._steps: dict[tuple[State, int], State | None] = {}
        self._complete: dict[State, bool] = {}
        self._bigrams: dict[tuple[int, int], bool] = {}
        self._encoded: dict[str, list[int]] = {}
        self._viable: dict[tuple[Any, State], bool] = {}
        self._allowed: dict[tuple[Any, State], tuple[int, ...]] = {}
        self._allowed_ids = 0  # token ids held by _allowed (bounded: masks can be large)
        self._first_chars: dict[Any, tuple[bytes, ...]] = {}
        self._epoch = 0  # the engine's sweep count the three position-keyed caches belong to
        self._prefixed: dict[bytes, CanonicalFilter] = {}  # (for_prefix)

    def for_prefix(self, prefix: bytes) -> CanonicalFilter:
        """The filter for the matchers whose output must begin with ``prefix`` (token
        healing): the same rules and states, since the prefix is output like any other bytes
        (the engine's prefix phase is part of its position), so canonical mode holds for the
        whole output, prefix included. A prefix position (``{prefix phase, offset}``) means
        other bytes for another prefix, so a non-empty prefix gets its own filter: a shallow
        copy with its own position-keyed caches (the others, keyed by states and tokens
        alone, are shared), kept per prefix (at most 64; past that a fresh one each time)."""
        if not prefix:
            return self
        found = self._prefixed.get(prefix)
        if found is None:
            found = copy.copy(self)
            found._prefixed = {}
            found._clear_positions()
            if len(self._prefixed) < 64:
                found = self._prefixed.setdefault(prefix, found)
        return found

    # ------------------------------------------------------------------ the state

    def step(self, state: State, token: int) -> State | None:
        """The state after ``token``, or ``None`` when no continuation can make the sequence
        canonical any more (a decided pretoken is not its encoding, a token crosses a decided
        boundary, or a pair inside the open pretoken is not bigram-canonical)."""
        key = (state, token)
        found = self._steps.get(key, False)
        if found is not False:
            return found  # type: ignore[return-value]
        data = self.token_bytes[token] if 0 <= token < len(self.token_bytes) else None
        out = None if not data else self._advance(state[0] + data, state[1] + (token,), 0)
        if len(self._steps) < _CACHED_ENTRIES:
            self._steps[key] = out
        return out

    def _advance(self, text: bytes, tokens: tuple[int, ...], tail: int) -> State | None:
        """Re-cut ``text`` (spelled by ``tokens`` and then ``tail`` more bytes no token covers
        yet) and check what became decided; the new state (``None``: dead)."""
        cut = _complete_length(text)
        if cut == 0:
            return text, tokens
        try:
            chars = text[:cut].decode("utf-8")
        except UnicodeDecodeError:
            return None
        region = text_region(self.model, chars)
        offsets = [0]
        for t in tokens:
            offsets.append(offsets[-1] + len(self.token_bytes[t] or b""))
        index = {o: k for k, o in enumerate(offsets)}
        for span in region.spans:
            if span.end > region.open_start:
                break
            a, b = index.get(span.start), index.get(span.end)
            if a is None or b is None:
                return None
            expected = [span.added] if span.added is not None else self._encode_pretoken(span.piece)
            if list(tokens[a:b]) != expected:
                return None
        k = index.get(region.open_start)
        if k is None:
            return None
        # pairs inside the open region: a later text cuts it only where it is cut now, or
        # before its last character when that is whitespace; any other junction stays inside
        # one pretoken, where every pair of an encoding is bigram-canonical
        cuts = {span.start for span in region.spans}
        if region.spans and _SPACE.fullmatch(chars[-1]):
            cuts.add(cut - len(chars[-1].encode("utf-8")))
        limit = min(cut, len(text) - tail)
        for i in range(k + 1, len(tokens)):
            if offsets[i + 1] > limit:
                break
            if offsets[i] not in cuts and not self._bigram(tokens[i - 1], tokens[i]):
                return None
        return text[region.open_start:], tokens[k:]

    def _encode_pretoken(self, piece: str) -> list[int]:
        found = self._encoded.get(piece)
        if found is None:
            found = self.model.encode_pretoken(piece)
            if len(self._encoded) < _CACHED_ENTRIES:
                self._encoded[piece] = found
        return found

    def _bigram(self, a: int, b: int) -> bool:
        found = self._bigrams.get((a, b))
        if found is None:
            found = bigram_canonical(self.vocab, a, b)
            if len(self._bigrams) < _CACHED_ENTRIES:
                self._bigrams[a, b] = found
        return found

    def complete(self, state: State) -> bool:
        """The open text encodes to exactly the open tokens (the sequence may end here)."""
        found = self._complete.get(state)
        if found is None:
            text, tokens = state
            if not text:
                found = True
            elif _complete_length(text) != len(text):
                found = False
            else:
                found = self.model.encode(text.decode("utf-8")) == list(tokens)
            if len(self._complete) < _CACHED_ENTRIES:
                self._complete[state] = found
        return found

    def closes(self, state: State, char: bytes) -> bool:
        """Followed by the character ``char``, every boundary of the open text is decided and
        the open tokens are its encoding."""
        text, tokens = state
        if not text:
            return True
        after = self._advance(text + char, tokens, len(char))
        return after is not None and after[0] == char

    # ------------------------------------------------------------------ liveness

    def viable(self, core: Any, state: State) -> bool:
        """Some continuation in the engine's language makes the sequence canonical (``core``
        is at the position the state belongs to; module docstring)."""
        budget = [self.limits.max_canonical_search]
        return self._viable_at(core, state, budget, set())

    def allowed(self, core: Any, state: State) -> tuple[int, ...]:
        """The engine's allowed tokens that keep the sequence a canonical prefix, sorted (EOS
        ids when the engine accepts and the state is complete)."""
        key = (self._position(core), state)
        found = self._allowed.get(key)
        if found is not None:
            return found
        budget = [self.limits.max_canonical_search]
        out = []
        accepting = core.is_accepting()
        for t in core.allowed_tokens():
            if t in self.eos:
                if accepting and self.complete(state):
                    out.append(t)
                continue
            if self._live_after(core, state, t, budget):
                out.append(t)
        found = tuple(out)
        if self._allowed_ids + len(found) <= _CACHED_IDS:
            self._allowed[key] = found
            self._allowed_ids += len(found)
        return found

    def accepts(self, core: Any, state: State, token: int) -> State | None:
        """The state after ``token`` if the filter allows it here, else ``None`` (EOS: the
        state itself when allowed)."""
        if token in self.eos:
            return state if core.is_accepting() and self.complete(state) else None
        if not self._live_after(core, state, token, [self.limits.max_canonical_search]):
            return None
        return self.step(state, token)

    def _live_after(self, core: Any, state: State, token: int, budget: list[int]) -> bool:
        after = self.step(state, token)
        if after is None:
            return False
        if core.consume(token) != 0:
            return False
        try:
            return self._viable_at(core, after, budget, set())
        finally:
            core.rollback(1)

    def _position(self, core: Any) -> Any:
        """The core's position as a cache key, after dropping the position-keyed caches of an
        earlier sweep epoch (module docstring)."""
        epoch = core.num_sweeps
        if epoch != self._epoch:
            self._clear_positions()
            self._epoch = epoch
        return tuple(tuple(c) for c in core.position())

    def _clear_positions(self) -> None:
        """Empty the position-keyed caches (new dicts: a copy made by :meth:`for_prefix`
        shares none of them)."""
        self._viable = {}
        self._allowed = {}
        self._allowed_ids = 0
        self._first_chars = {}

    def _viable_at(self, core: Any, state: State, budget: list[int], stack: set,
                   looped: list[bool] | None = None) -> bool:
        """``viable`` with a budget of states, the states on the search path (a state met again
        on its own path is no new way out: False there, and no False below it is cached)."""
        if not state[0] or (core.is_accepting() and self.complete(state)):
            return True
        key = (self._position(core), state)
        found = self._viable.get(key)
        if found is not None:
            return found
        if looped is None:
            looped = [False]
        if key in stack:
            looped[0] = True
            return False
        budget[0] -= 1
        if budget[0] < 0:
            raise LimitExceeded("max_canonical_search", self.limits.max_canonical_search + 1,
                                self.limits.max_canonical_search)
        for char in self._next_chars(core, key[0]):
            if self.closes(state, char):
                self._remember(key)
                return True
        allowed = self._candidates(core, key[0])
        outer, looped[0] = looped[0], False
        stack.add(key)
        try:
            for t in allowed:
                after = self.step(state, t)
                if after is None or core.consume(t) != 0:
                    continue
                try:
                    live = self._viable_at(core, after, budget, stack, looped)
                finally:
                    core.rollback(1)
                if live:
                    self._remember(key)
                    return True
            # a complete search found no way out (not cut by LimitExceeded, which must not
            # leave a False behind: a later question would then mask a live token)
            if not looped[0] and len(self._viable) < _CACHED_ENTRIES:
                self._viable.setdefault(key, False)
        finally:
            stack.discard(key)
            looped[0] = looped[0] or outer
        return False

    def _candidates(self, core: Any, position: Any) -> list[int]:
        """The tokens the liveness search tries at ``position``, in the order it tries them."""
        return [t for t in core.allowed_tokens() if t not in self.eos]

    def _remember(self, key: tuple[Any, State]) -> None:
        if len(self._viable) < _CACHED_ENTRIES:
            self._viable[key] = True

    def _next_chars(self, core: Any, position: Any) -> tuple[bytes, ...]:
        """The distinct whole first characters of the allowed tokens (cached per position)."""
        found = self._first_chars.get(position)
        if found is None:
            chars = set()
            for t in core.allowed_tokens():
                data = self.token_bytes[t] if t not in self.eos else None
                if not data:
                    continue
                b = data[0]
                n = 1 if b < 0x80 else 2 if b < 0xE0 else 3 if b < 0xF0 else 4
                if len(data) >= n:
                    chars.add(data[:n])
            found = tuple(sorted(chars))
            if len(self._first_chars) < 1 << 16:
                self._first_chars[position] = found
        return found

    def fill_row(self, core: Any, state: State, bitmask: Any, index: int) -> None:
        """Row ``index`` of ``bitmask``: the engine's row at ``core``'s position narrowed to
        :meth:`allowed` (the engine's row alone once the output has ended)."""
        core.fill_bitmask(bitmask, index)  # (checks the arguments)
        if core.is_terminated():
            return
        rows = np.asarray(bitmask)
        row = np.zeros(rows.shape[1], dtype=np.uint32)
        allowed = np.asarray(self.allowed(core, state), dtype=np.int64)
        np.bitwise_or.at(row, allowed >> 5, np.left_shift(np.uint32(1), (allowed & 31).astype(np.uint32)))
        rows[index] = row.view(np.int32)
