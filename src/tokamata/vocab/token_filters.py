"""Token filters with local rules: canonical masks for SentencePiece-style BPE, and the
byte-fallback and isolated-space filters for any vocabulary.

A *token filter* keeps, next to an engine position, a small state and says which of the
engine's allowed tokens keep the sequence a prefix of some accepted sequence (the mechanism of
:class:`~tokamata.vocab.canonical_filter.CanonicalFilter`, whose liveness search this class
shares: a token is allowed only when some continuation in the language passes every rule).
:class:`LocalFilter` enforces rules that only look at adjacent tokens, byte-fallback runs and
added-token matches, so its state stays short: ``(open text, open tokens)``, the bytes from the
start of the last token (earlier when a suffix of the text may still become an added token or
an incomplete character is being spelled in bytes) and the tokens that spell them.

Rules (``rules`` of :func:`token_filter`):

- ``"canonical"`` (SentencePiece-style BPE: no pre-tokenizer but a non-splitting ``Metaspace``,
  a normalizer that maps single characters, merges applied to the whole text): the text is cut at non-special added tokens
  (leftmost, then longest, in raw text; each match must be its one token); inside each stretch
  every token is reachable (its piece is what normalization writes, contains no added token's
  text, and its merges rebuild it), every adjacent pair is
  :func:`~tokamata.vocab.canonical.bigram_canonical`, and the byte-fallback rule holds. These
  are :func:`~tokamata.vocab.canonical.local_violation`'s rules for a text with no pretoken
  split; for BPE they hold exactly when the sequence is the model's own encoding of its text
  (``tokenizers`` in continuation mode: no ``▁`` prepended to the text's start).
- ``"byte_fallback"``: a ``<0xNN>`` token only inside a run of them that spells whole
  characters, none of which is a piece (a character with another spelling is never spelled in
  bytes).
- ``"isolated_space"``: a lone space token (its text is exactly ``" "``) is never followed by
  a token the space would have fused with: ``u`` such that the tokenizer's encoding of ``" "``
  followed by ``u``'s text does not begin with the lone space token. A ``u`` that begins with
  an incomplete character, or a byte-fallback token, is never judged fused.

``"canonical"`` implies the other two (a canonical pair never fuses; a canonical byte run spells
only characters that are no piece). Byte-level BPE canonical masks are
:class:`~tokamata.vocab.canonical_filter.CanonicalFilter`'s (pretoken boundaries); with them the
two filters are implied as well, so :func:`token_filter` returns that filter alone.

Invariants: as for :class:`~tokamata.vocab.canonical_filter.CanonicalFilter` (immutable apart
from bounded caches; states are hashable tuples; the open region always starts at a token
boundary, and every rule about tokens before it was checked once and cannot change).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import InvalidArgument, Unsupported
from ..limits import Limits
from .bpe import merge
from .canonical_filter import CanonicalFilter, State, complete_length
from .normalize import ReplaceStep
from .pretoken_region import added_prefix_start
from .pretokenize import MetaspaceStep
from .tokenizer_model import MODEL_SENTENCEPIECE, TokenizerModel
from .vocabulary import Vocabulary

__all__ = ["FILTER_NAMES", "LocalFilter", "check_filter_names", "token_filter"]

#: the token filters a compile function's ``token_filters=`` names
FILTER_NAMES = ("byte_fallback", "isolated_space")
_CACHED = 1 << 18


def check_filter_names(names: Any) -> tuple[str, ...]:
    """``names`` (an iterable of filter names, or ``None``) as a sorted tuple without repeats,
    or :class:`~tokamata.InvalidArgument` naming what is not a known filter.

    >>> check_filter_names(["isolated_space", "byte_fallback"])
    ('byte_fallback', 'isolated_space')
    >>> check_filter_names(["spaces"])
    Traceback (most recent call last):
    tokamata.errors.InvalidArgument: token_filters: unknown filter 'spaces' (known: byte_fallback, isolated_space)
    """
    if names is None:
        return ()
    if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
        raise InvalidArgument(f"token_filters must be a list of filter names ({', '.join(FILTER_NAMES)}), "
                              f"got {type(names).__name__} {names!r:.40}")
    out = set()
    for name in names:
        if name not in FILTER_NAMES:
            raise InvalidArgument(f"token_filters: unknown filter {name!r:.40} (known: {', '.join(FILTER_NAMES)})")
        out.add(name)
    return tuple(sorted(out))


def sentencepiece_canonical(model: TokenizerModel) -> bool:
    """True when ``model`` is SentencePiece-style BPE whose canonical sequences the local rules
    decide; :class:`~tokamata.Unsupported` naming the component when it is SentencePiece-style
    BPE with something they cannot follow (a pre-tokenizer other than a non-splitting
    ``Metaspace``, a normalizer that is not a character map); False for any other model (byte-level BPE, or a model type that
    :class:`~tokamata.vocab.canonical_filter.CanonicalFilter` refuses by name)."""
    model.require_exact()
    if model.model_type != "BPE" or model.kind != MODEL_SENTENCEPIECE:
        return False
    where = model.source or "this tokenizer"
    if not all(isinstance(s, MetaspaceStep) and not s.split for s in model.pretokenizer):
        shown = "; ".join(repr(s)[:80] for s in model.pretokenizer)
        raise Unsupported("canonical sentencepiece pre_tokenizer",
                          f"{where}: canonical masks for SentencePiece-style BPE need merges over the whole "
                          f"text (no pre-tokenizer), got {shown}")
    for step in model.normalizer:
        if not (isinstance(step, ReplaceStep) and not step.is_regex and len(step.pattern) == 1):
            raise Unsupported(f"canonical normalizer {type(step).__name__}",
                              f"{where}: canonical masks for SentencePiece-style BPE follow a normalizer that "
                              f"maps single characters (Replace(' ', '▁')), got {step!r:.80}")
    return True


def spell(model: TokenizerModel, text: str) -> str:
    """``text`` in the model's spelling, for a model :func:`sentencepiece_canonical` accepts:
    the normalizer, then the non-splitting ``Metaspace`` steps (each a character map: a space
    becomes its replacement; Mistral's and Llama 2's converted ``tokenizer.json``)."""
    text = model.normalize(text)
    for step in model.pretokenizer:
        if isinstance(step, MetaspaceStep):
            text = text.replace(" ", step.replacement)
    return text


def token_filter(vocab: Vocabulary, limits: Limits, canonical: bool,
                 names: tuple[str, ...] = ()) -> CanonicalFilter | None:
    """The filter a constraint's matchers keep next to their engine position: ``None`` when
    nothing is asked; with ``canonical`` the canonical filter of the vocabulary's tokenizer
    (which implies the named filters); else a :class:`LocalFilter` with the named rules.
    :class:`~tokamata.Unsupported` for a vocabulary whose tokenizer cannot be followed."""
    if not canonical and not names:
        return None
    model = vocab.exact_tokenizer()
    if canonical:
        if sentencepiece_canonical(model):
            return LocalFilter(vocab, limits, ("canonical",))
        return CanonicalFilter(vocab, limits)
    return LocalFilter(vocab, limits, names)


class LocalFilter(CanonicalFilter):
    """A token filter whose rules are local (module docstring): ``rules`` is a tuple of
    ``"canonical"`` (SentencePiece-style BPE only), ``"byte_fallback"``, ``"isolated_space"``.

    >>> # (needs a real tokenizer: see tests/unit/test_canonical_sentencepiece.py)
    """

    def __init__(self, vocab: Vocabulary, limits: Limits, rules: tuple[str, ...]):
        # (no call to CanonicalFilter.__init__: its pretoken rules are for byte-level BPE)
        self.model = vocab.exact_tokenizer()
        self.vocab = vocab
        self.limits = limits
        self.rules = tuple(rules)
        self.canonical = "canonical" in rules
        if self.canonical and not sentencepiece_canonical(self.model):
            raise Unsupported(f"canonical {self.model.kind} {self.model.model_type}",
                              "local canonical rules are for SentencePiece-style BPE")
        self.byte_runs = self.canonical or "byte_fallback" in rules
        self.space = "isolated_space" in rules and not self.canonical
        self.token_bytes = vocab.token_bytes
        self.eos = frozenset(vocab.eos_token_ids)
        self._steps: dict[tuple[State, int], State | None] = {}
        self._complete: dict[State, bool] = {}
        self._bigrams: dict[tuple[int, int], bool] = {}
        self._encoded: dict[str, list[int]] = {}
        self._viable: dict[tuple[Any, State], bool] = {}
        self._allowed: dict[tuple[Any, State], tuple[int, ...]] = {}
        self._allowed_ids = 0
        self._first_chars: dict[Any, tuple[bytes, ...]] = {}
        self._reach: dict[int, bool] = {}
        self._fused: dict[int, bool] = {}
        self._order: dict[Any, list[int]] = {}  # (position-keyed, as _viable, _allowed, _first_chars)
        self._epoch = 0  # the engine's sweep count the position-keyed caches belong to
        self._prefixed: dict[bytes, CanonicalFilter] = {}  # (for_prefix)
        self._added_texts = [t for t, _ in self.model.added_tokens if t]
        self._added_ids = frozenset(i for _, i in self.model.added_tokens)
        self._added_chars = frozenset(t[0] for t in self._added_texts)
        self._plain_ids: dict[int, bool] = {}
        self._symbols: dict[int, list[int]] = {}
        self._traces: dict[int, tuple[tuple[int, int, float], ...]] = {}
        self._merged: dict[int, bool] = {}
        self._spaces_found: frozenset[int] | None = None

    @property
    def _tables(self) -> Any:
        """The model's tables (built on first use, outside compile: Gemma 3's GGUF is read
        again and its 514,906 merges derived from its scores, about a second)."""
        return self.model.tables()

    @property
    def _spaces(self) -> frozenset[int]:
        """The lone space tokens: text exactly ``" "``, not byte tokens."""
        if self._spaces_found is None:
            byte_of = self._tables.byte_of
            self._spaces_found = frozenset(i for i, b in enumerate(self.token_bytes)
                                           if b == b" " and i not in byte_of)
        return self._spaces_found

    # ------------------------------------------------------------------ the state

    def step(self, state: State, token: int) -> State | None:
        key = (state, token)
        found = self._steps.get(key, False)
        if found is not False:
            return found  # type: ignore[return-value]
        data = self.token_bytes[token] if 0 <= token < len(self.token_bytes) else None
        out: State | None = None
        if data and (not self.canonical or self._reachable(token)):
            if not state[1] and self._plain(token):
                out = data, (token,)
            elif len(state[1]) == 1 and self._plain(state[1][0]) and self._plain(token):
                # (the common case: two whole-character tokens, no byte token, no character
                # that starts an added token's text)
                if self._pair(state[1][0], token):
                    out = data, (token,)
            else:
                out = self._advance_local(state[0] + data, state[1] + (token,))
        if len(self._steps) < _CACHED:
            self._steps[key] = out
        return out

    def _advance_local(self, text: bytes, tokens: tuple[int, ...]) -> State | None:
        """Check every rule inside ``text`` (spelled by ``tokens``); the new state or None."""
        cut = complete_length(text)
        try:
            chars = text[:cut].decode("utf-8")
        except UnicodeDecodeError:
            return None
        offsets = [0]
        for t in tokens:
            offsets.append(offsets[-1] + len(self.token_bytes[t] or b""))
        index = {o: k for k, o in enumerate(offsets)}
        byte_of = self._tables.byte_of
        # where a pair of adjacent tokens is not judged: the edges of added-token matches
        edges: set[int] = set()
        if self.canonical and self.model.added_tokens:
            at = 0
            for stretch, added in self.model.split_added(chars):
                n = len(stretch.encode("utf-8"))
                if added is not None:
                    a, b = index.get(at), index.get(at + n)
                    if a is None or b is None or tokens[a:b] != (added,):
                        return None
                    edges.update((at, at + n))
                at += n
        for i in range(1, len(tokens)):
            if offsets[i] not in edges and not self._pair(tokens[i - 1], tokens[i]):
                return None
        if self.byte_runs and byte_of:
            at = 0
            for ch in chars:
                n = len(ch.encode("utf-8"))
                k = index.get(at)
                if k is not None and tokens[k] in byte_of and spell(self.model, ch) in self._tables.pieces:
                    return None
                at += n
        # the open region: from the last token, or earlier for an added token's possible start
        # or a character still being spelled in bytes
        start = min(offsets[-2], cut)
        while start > 0 and 0x80 <= text[start] < 0xC0:  # (the start of its character)
            start -= 1
        if self.canonical:
            pending = added_prefix_start(self.model, chars)
            if pending is not None:
                start = min(start, pending)
        k = max(i for i, o in enumerate(offsets[:-1]) if o <= start)
        return text[offsets[k]:], tokens[k:]

    def _pair(self, a: int, b: int) -> bool:
        """The pair rules for adjacent tokens ``a``, ``b`` inside one stretch."""
        if self.canonical and not self._bigram(a, b):
            return False
        return not (self.space and a in self._spaces and self._fuses(b))

    def _plain(self, token: int) -> bool:
        """``token`` spells whole characters, is no byte token, and holds no character that
        starts an added token's text (so no added token can match across it: the fast step)."""
        found = self._plain_ids.get(token)
        if found is None:
            data = self.token_bytes[token] or b""
            found = (bool(data) and token not in self._tables.byte_of and complete_length(data) == len(data)
                     and (not self.canonical or self._added_chars.isdisjoint(data.decode("utf-8", "replace"))))
            self._plain_ids[token] = found
        return found

    def _reachable(self, token: int) -> bool:
        """Some text encodes to a sequence holding ``token`` (byte tokens: the byte-run rule
        decides; added tokens: always)."""
        found = self._reach.get(token)
        if found is None:
            tables = self._tables
            raw = self.token_bytes[token]
            if token in tables.byte_of or token in self._added_ids:
                found = True
            else:
                try:
                    text = raw.decode("utf-8") if raw else None
                except UnicodeDecodeError:
                    text = None
                added = tables.added
                found = (text is not None and (added is None or added.search(text) is None)
                         and spell(self.model, text).encode("utf-8") == self.model.token_text_bytes(token)
                         and bool(self._trace(token)) and self._merged[token])
            self._reach[token] = found
        return found

    def _bigram(self, a: int, b: int) -> bool:
        found = self._bigrams.get((a, b))
        if found is None:
            found = self._junction_holds(a, b)
            if len(self._bigrams) < _CACHED:
                self._bigrams[a, b] = found
        return found

    def _trace(self, token: int) -> tuple[tuple[int, int, float], ...]:
        """``(first symbol, last symbol, rank of the merge that ends the state)`` for each state
        ``token``'s symbols go through while they merge alone (infinite: the final state)."""
        found = self._traces.get(token)
        if found is None:
            trace: list[tuple[int, int, int]] = []
            out = merge(self._token_symbols(token), self._tables.merges, trace)
            found = tuple((x, y, float("inf") if r < 0 else r) for x, y, r in trace)
            self._traces[token] = found
            self._merged[token] = out == [token]
        return found

    def _junction_holds(self, a: int, b: int) -> bool:
        """The merges alone keep ``a`` then ``b`` apart (both reachable): the pair is
        bigram-canonical. Merging ``a``'s symbols then ``b``'s, each side goes through the
        states it goes through alone until a merge across the junction fires (and then the
        pair is lost for good); such a merge fires when its rank is below the left side's
        next merge (positions to the left win ties) and not above the right side's. So the
        two traces are walked together, in the order the merges would fire."""
        left, right = self._trace(a), self._trace(b)
        if not (left and right and self._merged[a] and self._merged[b]):
            return False
        get = self._tables.merges.get
        k = m = 0
        while True:
            _, x, until_left = left[k]
            y, _, until_right = right[m]
            crossing = get((x, y))
            if crossing is not None and crossing[0] < until_left and crossing[0] <= until_right:
                return False
            if until_left == until_right == float("inf"):
                return True
            if until_left < until_right:
                k += 1
            else:
                m += 1

    def _token_symbols(self, token: int) -> list[int]:
        found = self._symbols.get(token)
        if found is None:
            found = self._symbols[token] = self.model.token_symbols(token)
        return found

    def _fuses(self, token: int) -> bool:
        """A lone space before ``token`` would have fused with it (module docstring)."""
        found = self._fused.get(token)
        if found is None:
            data = self.token_bytes[token] or b""
            cut = complete_length(data)
            found = False
            if token not in self._tables.byte_of and cut:
                ids = self.model.encode(" " + data[:cut].decode("utf-8", "replace"))
                found = not ids or ids[0] not in self._spaces
            self._fused[token] = found
        return found

    def complete(self, state: State) -> bool:
        """The sequence may end here: no character is left half spelled (every other rule was
        checked as the tokens came)."""
        return complete_length(state[0]) == len(state[0])

    def closes(self, state: State, char: bytes) -> bool:
        """(No single character settles a local state: liveness is the search's.)"""
        return False

    def _clear_positions(self) -> None:
        """The base filter's, and the candidate orders (keyed by position too)."""
        super()._clear_positions()
        self._order = {}

    def _candidates(self, core: Any, position: Any) -> list[int]:
        """The search tries one-character tokens first: they pass the pair rules most often and
        their states are shared by every token before them."""
        found = self._order.get(position)
        if found is None:
            allowed = [t for t in core.allowed_tokens() if t not in self.eos]
            single = set()
            pieces = self._tables.pieces
            for ch in self._next_chars(core, position):
                try:
                    normal = spell(self.model, ch.decode("utf-8")).encode("utf-8")
                except UnicodeDecodeError:
                    continue
                i = pieces.get(self.model.bytes_piece(normal))
                if i is not None:
                    single.add(i)
            found = [t for t in allowed if t in single] + [t for t in allowed if t not in single]
            if len(self._order) < 1 << 12:
                self._order[position] = found
        return found
