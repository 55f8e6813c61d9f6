"""Compiling constraints: text -> automaton -> a :class:`Constraint` bound to a vocabulary.

Invariants:
- A :class:`Constraint` is immutable and thread-safe; matchers created from it share its
  lazily built DFA and its cache of token rows (one per DFA state). Rows are also shared
  across constraints over the same vocabulary, keyed by the state's expression.
- Every error about the pattern is raised here, before any matcher exists; errors that
  depend on how far decoding goes (lazy states crossing ``Limits.max_dfa_states``) are
  raised by the matcher call that reaches them, as :class:`LimitExceeded`.
"""

from __future__ import annotations

import sys

import numpy as np

from . import _core
from .automata.dfa import LazyByteDfa
from .automata.lower import lower
from .errors import InvalidArgument, InvalidSyntax
from .limits import DEFAULT_LIMITS, Limits
from .syntax.regex import parse_regex
from .trie import core_trie, shared_rows
from .slices import core_slices, text_depth_callback

__all__ = ["compile_regex", "Constraint", "clear_caches"]


class Constraint:
    """A compiled constraint over one vocabulary. Create matchers with :meth:`matcher`.

    Example::

        c = tokamata.compile_regex(r"\\d{4}-\\d{2}", vocab)
        m = c.matcher()
        bitmask = tokamata.allocate_bitmask(1, vocab.size)
        m.fill_bitmask(bitmask)
    """

    def __init__(self, pattern: str, vocab, dfa: LazyByteDfa, limits: Limits):
        self.pattern = pattern
        self.vocab = vocab
        self.limits = limits
        self.vocab_size = int(vocab.size)  #: logit columns (ids past the tokenizer's are padding)
        self._dfa = dfa
        eos = np.asarray(sorted(vocab.eos_token_ids), dtype=np.int32)
        self._core = _core.RegexCore(
            core_trie(vocab), shared_rows(vocab), dfa.class_map, dfa.num_classes,
            np.asarray([1 if dfa.accepting(0) else 0], dtype=np.uint8),
            np.asarray([dfa.key(0)], dtype=np.int64),
            eos, limits.max_dfa_states, dfa.expand_for_core,
            slices=core_slices(vocab), text_depth=text_depth_callback(dfa))

    @property
    def num_states(self) -> int:
        """DFA states built so far (they are built lazily)."""
        return self._dfa.num_states

    def matcher(self) -> "Matcher":
        """A fresh matcher at the start of the output."""
        from .matcher import Matcher

        return Matcher(self, _core.MatcherCore(self._core))

    def __repr__(self) -> str:
        return f"Constraint(regex={self.pattern!r}, vocab_size={self.vocab_size}, states={self.num_states})"


def compile_regex(pattern: str, vocab, limits: Limits | None = None) -> Constraint:
    """Compile a Python ``re`` pattern; the whole output must match it (full match).

    Raises :class:`InvalidSyntax` for malformed patterns, :class:`Unsupported` for
    non-regular features (with their span), :class:`LimitExceeded` for blow-ups.

    >>> import tokamata
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_token_ids=[3])
    >>> m = tokamata.compile_regex("a+b", vocab).matcher()
    >>> m.allowed_tokens().tolist()
    [0, 2]
    """
    limits = DEFAULT_LIMITS if limits is None else limits
    if not isinstance(limits, Limits):
        raise InvalidArgument(f"limits must be a tokamata.Limits, got {type(limits).__name__}")
    if not hasattr(vocab, "token_bytes") or not hasattr(vocab, "eos_token_ids"):
        raise InvalidArgument(f"vocab must be a tokamata.Vocabulary, got {type(vocab).__name__}")
    tree = parse_regex(pattern, limits)
    dfa = LazyByteDfa(lower(tree), limits)
    if dfa.is_empty:
        raise InvalidSyntax("the regex matches no string (empty language)", pattern, (0, len(pattern)))
    return Constraint(pattern, vocab, dfa, limits)


def clear_caches(vocab=None) -> None:
    """Release process-wide caches: the interned automaton expressions with their memoized
    derivatives, the JSON Schema front end's spellings of string literals (keys, enum
    strings) and, if ``vocab`` is given, the token rows shared by its constraints. (The
    native arena of grammar lexers is released only once it holds more than
    ``tokamata.automata.native.ARENA_NODES_KEPT`` nodes: expressions the front ends keep
    across calls, such as formats and per-character spellings, keep their native
    counterparts while it lives.)

    Long-running servers that compile many distinct constraints can call this now and then;
    constraints and matchers that exist keep working (they hold what they use), later
    compiles just start cold.

    >>> import tokamata
    >>> tokamata.clear_caches()
    """
    from .automata import derivatives
    from .trie import drop_shared_rows

    derivatives.clear_interned()
    lexemes = sys.modules.get("tokamata.syntax.json_schema.lexemes")  # (not imported for it)
    if lexemes is not None:
        lexemes.string_literal.cache_clear()
    if vocab is not None:
        drop_shared_rows(vocab)
