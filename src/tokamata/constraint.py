"""The one compiled constraint: a checked grammar bound to a vocabulary (every front end's
result: regexes, Lark and GBNF grammars, JSON, JSON Schema).

Invariants:
- A :class:`Constraint` is immutable and thread-safe. It owns the lexer (one lazy native
  DFA over the grammar's tagged text terminals, :class:`~tokamata.grammar.lexer.Lexer`),
  the Earley parser when the grammar needs one, and the C++ ``ConstraintCore`` that computes
  and caches masks and positions (``cpp/include/tokamata/matcher_core.hpp``). Matchers share
  all of it; token rows are also shared across constraints over the same vocabulary that
  reach the same lexer language.
- The strategy is chosen from the grammar alone: ``"regular"`` when its sentences are single
  lexemes of one text terminal (``start: T`` or ``start: T |``, no ``%ignore``; what a
  regex lowers to), else ``"earley"``. Both give the same masks on the same grammar; the
  regular one needs no parser, and its position is a single lexer state.
- Every error about the constraint's text is raised by the front end before a Constraint
  exists; errors that depend on how far decoding goes (lazy states or parser sets crossing a
  limit) come from the matcher call that reaches them, as :class:`LimitExceeded`.
- A constraint made by a front door carries its :class:`Recipe` (kind, spec, options: what
  the front door was called with, in a canonical hashable form). Pickling sends the recipe
  and the vocabulary only, never caches or native state; unpickling re-runs the front door
  (registered by :mod:`tokamata.compile` through :func:`register_builder`), and returns the
  constraint already alive in this process for the same recipe and vocabulary when there is
  one. A constraint without a recipe (from grammar IR) does not pickle
  (:class:`InvalidArgument`). ``copy.copy`` and ``copy.deepcopy`` return the constraint
  itself (it is immutable).
"""

from __future__ import annotations

import threading
import weakref
from array import array
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Hashable

import numpy as np

from . import _core
from .canonical_core import CanonicalCore
from .canonical_native import NativeCanonicalFilter, canonical_filter
from .errors import InvalidArgument, Unsupported
from .grammar.earley import EarleyParser
from .grammar.ir import Grammar, single_lexeme
from .grammar.lexer import Lexer
from .limits import Limits
from .slices import core_slices
from .trie import core_trie, shared_events, shared_rows
from .vocab.token_filters import token_filter

if TYPE_CHECKING:
    from .matcher import Matcher
    from .vocab.canonical_filter import CanonicalFilter

__all__ = ["Constraint", "MASK_CACHE_SIZE", "Recipe", "register_builder"]

#: masks kept per constraint for configurations and for positions, each (each is ceil(V/32) * 4 bytes)
MASK_CACHE_SIZE = 512

_STRATEGIES = {0: "regular", 1: "earley"}


@dataclass(frozen=True)
class Recipe:
    """How a front door made a constraint: ``kind`` (``"regex"``, ``"grammar"``, ``"gbnf"``,
    ``"json"``, ``"json_schema"``), ``spec`` (the pattern or grammar text; a schema as given
    when text, bytes or a bool, else its JSON text with keys in their order; ``None`` for
    ``"json"``) and ``options`` ((name, value) pairs in the front door's order, every value
    hashable: mappings as JSON text, collections as tuples). Equal recipes over one vocabulary
    compile to the same constraint; a recipe is the key of :class:`tokamata.ConstraintCache`.

    >>> import tokamata
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", None], eos_token_ids=[1])
    >>> tokamata.compile_regex("a+", vocab).recipe.kind
    'regex'
    """

    kind: str
    spec: Hashable
    options: tuple[tuple[str, Hashable], ...]


_BUILDER: list[Callable[[Recipe, Any], "Constraint"]] = []
#: constraints alive in this process by (vocabulary, recipe): what unpickling returns
_ALIVE: weakref.WeakValueDictionary[tuple[int, Recipe], "Constraint"] = weakref.WeakValueDictionary()
_ALIVE_LOCK = threading.Lock()


def register_builder(build: Callable[[Recipe, Any], "Constraint"]) -> None:
    """Make ``build(recipe, vocab)`` the way unpickling re-runs a front door (called by
    :mod:`tokamata.compile` when imported; the package imports it before any module)."""
    _BUILDER[:] = [build]


def build(recipe: Recipe, vocab) -> "Constraint":
    """The constraint ``recipe`` describes over ``vocab``: the live one when this process has it,
    else a fresh compile through the registered front doors (errors as the front door raises)."""
    key = (id(vocab), recipe)
    with _ALIVE_LOCK:
        alive = _ALIVE.get(key)
    if alive is not None and alive.vocab is vocab:
        return alive
    if not _BUILDER:  # (importing tokamata registers it)
        raise InvalidArgument("no front doors registered: import tokamata")
    constraint = _BUILDER[0](recipe, vocab)
    with _ALIVE_LOCK:
        return _ALIVE.setdefault(key, constraint)


class Constraint:
    """A compiled constraint over one vocabulary. Create matchers with :meth:`matcher`.

    >>> import tokamata
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_token_ids=[3])
    >>> c = tokamata.compile_regex(r"a+b", vocab)
    >>> c.strategy, c.matcher().allowed_tokens().tolist()
    ('regular', [0, 2])
    >>> g = tokamata.compile_grammar('start: "a"+ "b"', vocab)
    >>> g.strategy, g.matcher().allowed_tokens().tolist()
    ('earley', [0, 2])
    """

    def __init__(self, grammar: Grammar, vocab, limits: Limits, description: str, *,
                 approximations: tuple = (), source: str | None = None, filters: tuple = (),
                 recipe: Recipe | None = None, value_parser: Callable[[str | bytes], Any] | None = None,
                 canonical: bool = False, token_filters: tuple[str, ...] = ()):
        #: the token filter (``canonical=True`` or ``token_filters=``), else None: matchers keep
        #: its state next to their engine position (:mod:`tokamata.canonical_core`,
        #: :mod:`tokamata.vocab.token_filters`)
        self.token_filter: CanonicalFilter | NativeCanonicalFilter | None = token_filter(
            vocab, limits, canonical, tuple(token_filters))
        #: the canonical filter (``canonical=True``), else None
        self.canonical: CanonicalFilter | NativeCanonicalFilter | None = self.token_filter if canonical else None
        self.grammar = grammar
        #: how a front door made this constraint (None for grammar IR): what pickling sends
        self.recipe = recipe
        self.vocab = vocab
        self.limits = limits
        self.description = description  #: what was compiled ("regex", "JSON Schema", ...)
        self.source = source  #: the user's text (a pattern, a grammar), when there is one
        #: what the constraint enforces differently from what was asked (named approximations
        #: the caller opted into, e.g. JSON Schema keywords), each with where it applies
        self.approximations = tuple(approximations)
        #: the filters composed into the grammar, as the caller spelled them ("characters='[a-z ]'")
        self.filters = tuple(filters)
        #: text of the language -> the value it spells (set by :func:`tokamata.compile_type`:
        #: an instance of the type); ``None`` for constraints of other front doors. See
        #: :meth:`parse`.
        self.value_parser = value_parser
        self.vocab_size = int(vocab.size)  #: logit columns (ids past the tokenizer's are padding)
        self.lexer = Lexer(grammar, limits)
        eos = np.asarray(sorted(vocab.eos_token_ids), dtype=np.int32)
        offsets, tokens = _special_tokens(grammar, self.vocab_size)
        if self.token_filter is not None:  # (a special token is never part of a canonical encoding)
            named = vocab.token_bytes
            specials = sorted({int(t) for t in tokens if t >= len(named) or named[t] is None})
            if specials:
                raise Unsupported("canonical special tokens" if canonical else "token_filters special tokens",
                                  f"{'canonical=True' if canonical else 'token_filters'} with a grammar that needs "
                                  f"special token(s) {specials[:8]}: a tokenizer never writes them for text")
        regular = single_lexeme(grammar)
        self._lock = threading.RLock()
        self._starts: dict[int, int] = {}  # allowed-set id -> lexer start state
        self.parser: EarleyParser | None = None  #: None for the regular strategy
        if regular is not None:
            initial = self.lexer.start(frozenset({regular[0]}))
        else:
            self.parser = EarleyParser(grammar, limits)
        # the lexer's core learns of every lexer state built so far (the regular strategy's
        # initial one included; the Earley strategy's are made natively below, and registered)
        lexer_core = _core.native_regex_core(core_trie(vocab), shared_rows(vocab), self.lexer.dfa, eos,
                                             limits.max_dfa_states, slices=core_slices(vocab))
        grammar_core = None
        if self.parser is not None:
            ignored = np.zeros(len(grammar.terminals), dtype=np.uint8)
            if grammar.ignore:  # (numpy's indexing by an empty list costs more than the whole rest)
                ignored[list(grammar.ignore)] = 1
            # the walks make lexer start states natively from the tagged terminals (no
            # callback into Python)
            grammar_core = _core.GrammarCore(lexer_core, shared_events(vocab), self.parser.core, ignored,
                                             self.lexer.terminal_nodes(), self.lexer.dfa, limits.max_mask_work)
            initial = grammar_core.start_of(0)  # (as the walks make start states: natively)
        #: the crossing walks' core (None for the regular strategy): walk_steps, dense_walks
        self.grammar_core = grammar_core
        self._core = _core.ConstraintCore(lexer_core, grammar_core, initial, regular is not None and regular[1],
                                          offsets, tokens, limits.max_lexer_configurations, MASK_CACHE_SIZE)
        if self.canonical is not None:  # (native where the tokenizer allows: tokamata.canonical_native)
            assert not isinstance(self.canonical, NativeCanonicalFilter)
            self.canonical = self.token_filter = canonical_filter(self.canonical, self._core)

    # ----------------------------------------------------------- pickling and copies

    def __reduce__(self):
        if self.recipe is None:
            raise InvalidArgument(f"{self.description} constraint was compiled from grammar IR, which does not "
                                  f"pickle: pickle the front door's input instead")
        with _ALIVE_LOCK:
            _ALIVE.setdefault((id(self.vocab), self.recipe), self)
        return build, (self.recipe, self.vocab)

    def __copy__(self) -> "Constraint":
        return self

    def __deepcopy__(self, memo) -> "Constraint":
        return self

    def memory_bytes(self) -> int:
        """An estimate of the memory this constraint holds now (it grows while decoding, as
        states and masks are built lazily): every distinct cached mask (positions with equal
        masks share one) and token row at its compact size (a dense row is ``ceil(V/32) * 4``
        bytes; most are stored as the words that differ from zeros, ones or one of the
        vocabulary's slice rows), the lexer DFA's transition table (one target per own byte
        interval of each expanded state, the class-to-interval shapes stored once), 512 bytes per
        Earley set, and 64 bytes per grammar symbol. Rows shared with other constraints of the
        vocabulary count in full here (an over-estimate); the vocabulary's own trie and slices
        are not counted (one per vocabulary, not per constraint).

        >>> import tokamata
        >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", None], eos_token_ids=[1])
        >>> tokamata.compile_regex("a+", vocab).memory_bytes() > 0
        True
        """
        core = self._core
        symbols = self.__dict__.get("_symbols")
        if symbols is None:
            symbols = sum(len(rule.rhs) + 1 for rule in self.grammar.rules) + len(self.grammar.terminals)
            self.__dict__["_symbols"] = symbols
        return (core.row_bytes + core.table_bytes
                + self.num_parser_states * 512 + symbols * 64)

    @property
    def strategy(self) -> str:
        """``"regular"`` (one lexer state per position) or ``"earley"`` (lexer x parser)."""
        return _STRATEGIES[self._core.strategy]

    def matcher(self, prefix: bytes = b"") -> "Matcher":
        """A fresh matcher at the start of the output.

        With ``prefix`` (token healing, :func:`tokamata.heal`), the output must begin with
        exactly those bytes and then continue with a sentence of the constraint; a token may
        span the junction (``b"://"`` after the prefix ``b":"``). The constraint is not
        recompiled: the prefix belongs to the matcher (and its copies). With ``canonical=True``
        (or ``token_filters=``) the filter covers the whole output, prefix included: the
        allowed sequences are the tokenizer's encodings of ``prefix`` + a sentence.

        >>> import tokamata
        >>> vocab = tokamata.Vocabulary.from_token_bytes([b":", b"//", b"://", b"x", None], eos_token_ids=[4])
        >>> m = tokamata.compile_regex("//x", vocab).matcher(prefix=b":")
        >>> m.allowed_tokens().tolist(), m.consume(2), m.allowed_tokens().tolist()
        ([0, 2], True, [3])
        """
        from .matcher import Matcher

        if not isinstance(prefix, (bytes, bytearray)):
            hint = " (encode it: prefix=text.encode())" if isinstance(prefix, str) else ""
            raise InvalidArgument(f"prefix must be bytes, got {type(prefix).__name__}{hint}")
        prefix = bytes(prefix)
        engine = _core.MatcherCore(self._core, prefix)
        core: _core.MatcherCore | CanonicalCore = engine
        if self.token_filter is not None:  # (canonical mode covers the prefix too: for_prefix)
            core = CanonicalCore(engine, self.token_filter.for_prefix(prefix))
        return Matcher(self, core, prefix)

    def parse(self, text: str | bytes) -> Any:
        """The value ``text`` (a full output of this constraint) spells: for a constraint
        from :func:`tokamata.compile_type`, an instance of its type. Raises
        :class:`~tokamata.ParseError` (with ``span`` and ``path``) on text outside the
        language, :class:`~tokamata.InvalidArgument` for a constraint without a
        ``value_parser``."""
        if self.value_parser is None:
            raise InvalidArgument(f"this constraint ({self.description}) has no value parser: parse() is "
                                  f"for constraints made by tokamata.compile_type")
        return self.value_parser(text)

    def report(self) -> list[str]:
        """The approximations this constraint makes, one line each (empty: exact)."""
        return [str(a) for a in self.approximations]

    # ----------------------------------------------------------- lexer start states

    def _earley(self) -> EarleyParser:
        """The parser (the Earley strategy's; the regular strategy asks no start states)."""
        if self.parser is None:
            raise InvalidArgument("a constraint of the regular strategy has no parser states")
        return self.parser

    def lexer_start(self, parser: int) -> int:
        """The lexer state a lexeme starts in after parser state ``parser``."""
        return self._start_of(self._earley().allowed_id(parser))

    def _start_of(self, allowed_id: int) -> int:
        state = self._starts.get(allowed_id)
        if state is None:
            with self._lock:
                state = self.lexer.start(self._earley().allowed_by_id(allowed_id) | frozenset(self.grammar.ignore))
                self._starts[allowed_id] = state
        return state

    # ----------------------------------------------------------- sizes

    @property
    def num_lexer_states(self) -> int:
        """Lexer DFA states built so far (they are built lazily)."""
        return self.lexer.num_states

    @property
    def num_parser_states(self) -> int:
        """Earley sets built so far (0 for the regular strategy)."""
        return 0 if self.parser is None else self.parser.num_states

    @property
    def num_states(self) -> int:
        """Lexer and parser states built so far."""
        return self.num_lexer_states + self.num_parser_states

    def __repr__(self) -> str:
        shown = f"{self.description}={self.source!r}" if self.source is not None else self.description
        return (f"Constraint({shown}, strategy={self.strategy!r}, vocab_size={self.vocab_size}, "
                f"terminals={len(self.grammar.terminals)}, rules={len(self.grammar.rules)})")


def _special_tokens(grammar: Grammar, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per terminal, the token ids that spell it (CSR offsets and ids; none for text terminals)."""
    offsets = [0]
    tokens: list[int] = []
    for terminal in grammar.terminals:
        if terminal.expr is None:
            for token in terminal.token_ids:
                if not 0 <= token < vocab_size:
                    raise InvalidArgument(f"special token id {token} of {terminal.name} is out of range "
                                          f"[0, {vocab_size})")
            tokens.extend(terminal.token_ids)
        offsets.append(len(tokens))
    return np.frombuffer(array("i", offsets), dtype=np.int32), np.frombuffer(array("i", tokens), dtype=np.int32)

