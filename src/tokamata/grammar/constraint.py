"""A compiled grammar bound to a vocabulary: Earley parser + lexer DFA + token masks.

Invariants:
- A matcher's position is a set of configurations ``(parser, lexer, fresh)``: an Earley set
  handle, the lexer state of the lexeme in progress (``DEAD`` when only special tokens can come
  next) and whether that lexeme is still empty. Several configurations exist when the text so
  far lexes in several ways (a lexeme may end wherever its terminal matches).
- The lexer start state of a parser state ``P`` is built from the terminals ``P`` allows plus
  the ignored ones, so every terminal a lexer state may end is one the parser accepts there,
  and every live lexer state can still complete a lexeme the parser takes.
- The mask of a configuration is ``inside(lexer) | crossing(parser, lexer)`` (see
  ``cpp/include/tokamata/grammar_walk.hpp``) plus the special tokens the parser allows at a
  lexeme boundary; EOS is allowed when a boundary here leaves the parser accepting. Masks are
  cached per configuration (bounded), inside rows per lexer state (shared across constraints).
- Consuming a token runs its bytes through every configuration, ending lexemes at every byte
  where a terminal may end; the result equals the mask's verdict on that token.
"""

from __future__ import annotations

import threading
import weakref
from array import array
from collections import OrderedDict

import numpy as np

from .. import _core
from ..automata.dfa import DEAD
from ..errors import InvalidArgument, LimitExceeded
from ..limits import DEFAULT_LIMITS, Limits
from ..trie import core_trie, shared_events, shared_rows
from ..slices import core_slices
from .earley import EarleyParser, limit_error
from .ir import Grammar, check_grammar
from .lexer import Lexer

__all__ = ["GrammarConstraint", "compile_grammar_ir"]

#: configuration masks kept per constraint (each is ceil(V/32) * 4 bytes)
MASK_CACHE_SIZE = 512

Configuration = tuple  # (parser handle, lexer state, fresh)


class GrammarConstraint:
    """A compiled grammar over one vocabulary. Create matchers with :meth:`matcher`.

    Example::

        c = tokamata.compile_grammar('start: "a" NUMBER\\n%import common.NUMBER', vocab)
        m = c.matcher()
        m.fill_bitmask(bitmask)
    """

    def __init__(self, grammar: Grammar, vocab, limits: Limits, description: str = "grammar"):
        self.grammar = grammar
        self.vocab = vocab
        self.limits = limits
        self.description = description
        #: what the constraint enforces differently from what was asked (named approximations
        #: the caller opted into, e.g. JSON Schema keywords), each with where it applies
        self.approximations: tuple = ()
        self.vocab_size = int(vocab.size)
        self.num_words = (self.vocab_size + 31) // 32
        self.parser = EarleyParser(grammar, limits)
        self.lexer = Lexer(grammar, limits)
        self.ignore = frozenset(grammar.ignore)
        self.eos = tuple(sorted(vocab.eos_token_ids))
        self._eos_set = frozenset(self.eos)
        specials: dict[int, list[int]] = {}  # token id -> special terminals it spells
        special_terminals = set()
        for index, terminal in enumerate(grammar.terminals):
            if terminal.expr is None:
                special_terminals.add(index)
                for token in terminal.token_ids:
                    if not 0 <= token < self.vocab_size:
                        raise InvalidArgument(f"special token id {token} of {terminal.name} is out of range")
                    specials.setdefault(token, []).append(index)
        self._special_tokens = {token: tuple(ts) for token, ts in specials.items()}
        self._special_terminals = frozenset(special_terminals)
        self._regex_core = _core.native_regex_core(
            core_trie(vocab), shared_rows(vocab), self.lexer.dfa, np.asarray(self.eos, dtype=np.int32),
            limits.max_dfa_states, slices=core_slices(vocab))
        ignored = np.zeros(len(grammar.terminals), dtype=np.uint8)
        if self.ignore:  # (numpy's indexing by an empty list costs more than the whole rest)
            ignored[list(self.ignore)] = 1
        self._lock = threading.RLock()
        self._starts: dict[int, int] = {}  # allowed-set id -> lexer start state
        # the C++ core holds its callbacks; through a weak reference, so that it does not keep
        # this constraint alive (a cycle through C++ is invisible to Python's collector)
        this = weakref.ref(self)
        self._core = _core.GrammarCore(self._regex_core, shared_events(vocab), self.parser.core, ignored,
                                       lambda allowed_id, known: this()._start_callback(allowed_id, known),
                                       lambda state: this()._ends_callback(state))
        self._masks: OrderedDict = OrderedDict()
        self._positions: OrderedDict = OrderedDict()
        self._accepting: dict = {}
        eos_words = np.zeros(self.num_words, dtype=np.uint32)
        for e in self.eos:
            eos_words[e >> 5] |= 1 << (e & 31)  # (a Python int below 2**32 fits the uint32 word)
        eos_words.setflags(write=False)
        self.eos_words = eos_words  #: the bits of the EOS ids
        self._initial = ((0, self.lexer_start(0), True),)

    # ----------------------------------------------------------- parser / lexer glue

    def lexer_start(self, parser: int) -> int:
        """The lexer state a lexeme starts in after parser state ``parser``."""
        return self._start_of(self.parser.allowed_id(parser))

    def _start_of(self, allowed_id: int) -> int:
        state = self._starts.get(allowed_id)
        if state is None:
            with self._lock:
                state = self.lexer.start(self.parser.allowed_by_id(allowed_id) | self.ignore)
                self._starts[allowed_id] = state
        return state

    def _start_callback(self, allowed_id: int, known: int):
        """The C++ walk's callback for a lexer start state it has not seen."""
        state = self._start_of(allowed_id)
        accepting, keys = self.lexer.state_records(known)
        return state, accepting, keys

    def _ends_callback(self, state: int) -> bytes:
        """The C++ walk's callback: terminals that may end at lexer state ``state``."""
        return array("i", self.lexer.ends(state)).tobytes()

    def after_lexeme(self, parser: int, terminal: int) -> int:
        """Parser state after a lexeme of ``terminal`` (-1 if not allowed)."""
        if terminal in self.ignore:
            return parser
        return self.parser.scan(parser, terminal)

    def boundary_parsers(self, config: Configuration) -> list[int]:
        """Parser states where the configuration's current lexeme can end right now."""
        parser, lexer, fresh = config
        found = [parser] if fresh else []
        if lexer != DEAD:
            for terminal in self.lexer.ends(lexer):
                after = self.after_lexeme(parser, terminal)
                if after >= 0 and after not in found:
                    found.append(after)
        return found

    def _sync(self) -> None:
        """Tell the C++ core about lexer states Python built outside its walks."""
        known = self._core.num_states
        if self.lexer.num_states > known:
            accepting, keys = self.lexer.state_records(known)
            self._core.register_states(known, np.frombuffer(accepting, dtype=np.uint8),
                                       np.frombuffer(keys, dtype=np.int64))

    # ----------------------------------------------------------- masks

    def accepting(self, config: Configuration) -> bool:
        """A lexeme boundary here leaves the parser accepting (EOS is allowed), cached."""
        found = self._accepting.get(config)
        if found is None:
            found = any(self.parser.accepting(p) for p in self.boundary_parsers(config))
            if len(self._accepting) > 16 * MASK_CACHE_SIZE:
                self._accepting.clear()
            self._accepting[config] = found
        return found

    def mask(self, config: Configuration) -> np.ndarray:
        """The uint32 token bits of one configuration (EOS not included), cached."""
        cached = self._masks.get(config)
        if cached is not None:
            return cached
        parser, lexer, fresh = config
        words = np.zeros(self.num_words, dtype=np.uint32)
        if lexer != DEAD:
            self._sync()
            self._core.inside_row(lexer, words)
            try:
                self._core.crossing(parser, lexer, words)
            except OverflowError as error:
                raise limit_error(error) from None
            if not fresh:  # the lexeme may end right here: tokens may start the next one
                for terminal in self.lexer.ends(lexer):
                    after = self.after_lexeme(parser, terminal)
                    if after >= 0:
                        start = self.lexer_start(after)
                        if start != DEAD:
                            np.bitwise_or(words, self.mask((after, start, True)), out=words)
        if self._special_terminals:
            for after in self.boundary_parsers(config):
                for terminal in self.parser.allowed(after) & self._special_terminals:
                    for token in self.grammar.terminals[terminal].token_ids:
                        words[token >> 5] |= np.uint32(1 << (token & 31))
        words.setflags(write=False)
        with self._lock:
            self._masks[config] = words
            if len(self._masks) > MASK_CACHE_SIZE:
                self._masks.popitem(last=False)
        return words

    def position_mask(self, configs) -> np.ndarray:
        """The token bits of a matcher position (EOS included when accepting), cached."""
        cached = self._positions.get(configs)
        if cached is not None:
            return cached
        accepting = any(self.accepting(config) for config in configs)
        if len(configs) == 1 and not accepting:
            return self.mask(configs[0])  # already cached and read-only: no second copy
        if len(configs) == 1:
            words = self.mask(configs[0]).copy()
        else:
            words = np.zeros(self.num_words, dtype=np.uint32)
            for config in configs:
                np.bitwise_or(words, self.mask(config), out=words)
        if accepting:
            np.bitwise_or(words, self.eos_words, out=words)
        words.setflags(write=False)
        with self._lock:
            self._positions[configs] = words
            if len(self._positions) > MASK_CACHE_SIZE:
                self._positions.popitem(last=False)
        return words

    # ----------------------------------------------------------- consuming

    def advance(self, configs, token: int):
        """Configurations after ``token`` (empty tuple if it is not allowed)."""
        special = self._special_tokens.get(token)
        result = []
        if special is not None:  # the token spells special terminals (and maybe text too)
            for config in configs:
                for after in self.boundary_parsers(config):
                    for terminal in special:
                        parser = self.parser.scan(after, terminal)
                        if parser >= 0:
                            result.append((parser, self.lexer_start(parser), True))
        data = self.vocab.token_bytes[token] if token < len(self.vocab.token_bytes) else None
        if not data:
            return tuple(dict.fromkeys(result))
        text = self._advance_text(configs, data)
        return tuple(dict.fromkeys(result + list(text))) if result else text

    def _advance_text(self, configs, data: bytes):
        step = self.lexer.step
        ends = self.lexer.ends
        current = {(parser, lexer) for parser, lexer, _ in configs if lexer != DEAD}
        limit = self.limits.max_lexer_configurations
        for byte in data:
            following = set()
            for parser, lexer in current:
                nxt = step(lexer, byte)
                if nxt != DEAD:
                    following.add((parser, nxt))
                for terminal in ends(lexer):
                    after = self.after_lexeme(parser, terminal)
                    if after >= 0:
                        start = self.lexer_start(after)
                        if start != DEAD:
                            nxt = step(start, byte)
                            if nxt != DEAD:
                                following.add((after, nxt))
            if len(following) > limit:
                raise LimitExceeded("max_lexer_configurations", len(following), limit)
            current = following
            if not current:
                return ()
        return tuple(sorted((parser, lexer, False) for parser, lexer in current))

    def report(self) -> list[str]:
        """The approximations this constraint makes, one line each (empty: exact)."""
        return [str(a) for a in self.approximations]

    def matcher(self) -> "GrammarMatcher":
        """A fresh matcher at the start of the output."""
        from .matcher import GrammarMatcher

        return GrammarMatcher(self, self._initial)

    @property
    def num_lexer_states(self) -> int:
        return self.lexer.num_states

    @property
    def num_parser_states(self) -> int:
        return self.parser.num_states

    def __repr__(self) -> str:
        return (f"GrammarConstraint({self.description}, vocab_size={self.vocab_size}, "
                f"terminals={len(self.grammar.terminals)}, rules={len(self.grammar.rules)})")


def compile_grammar_ir(grammar: Grammar, vocab, *, limits: Limits | None = None,
                       description: str = "grammar") -> GrammarConstraint:
    """Compile a grammar given as IR (what every grammar front end produces)."""
    limits = DEFAULT_LIMITS if limits is None else limits
    if not isinstance(limits, Limits):
        raise InvalidArgument(f"limits must be a tokamata.Limits, got {type(limits).__name__}")
    if not hasattr(vocab, "token_bytes") or not hasattr(vocab, "eos_token_ids"):
        raise InvalidArgument(f"vocab must be a tokamata.Vocabulary, got {type(vocab).__name__}")
    if not isinstance(grammar, Grammar):
        raise InvalidArgument(f"grammar must be a tokamata Grammar, got {type(grammar).__name__}")
    grammar = check_grammar(grammar, limits)
    return GrammarConstraint(grammar, vocab, limits, description)
