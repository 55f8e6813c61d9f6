"""Bounds on everything that can blow up while compiling or decoding.

Invariants:
- every loop whose length depends on user input checks one of these fields and raises
  :class:`tokamata.LimitExceeded` naming the field and the value reached. Defaults are
  generous for real constraints and stop pathological ones (``(a|b)*a(a|b){30}``) in well
  under a second.
- every field holds a value the C++ core can hold: an ``int`` field is an ``int`` (not a
  ``bool``) in ``[1, 2**31 - 1]``, a ``float`` field a finite positive number; anything else
  raises :class:`tokamata.InvalidArgument` naming the field, when the ``Limits`` is made.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, fields

from .errors import InvalidArgument

__all__ = ["Limits", "DEFAULT_LIMITS"]


@dataclass(frozen=True)
class Limits:
    """Compile- and decode-time bounds.

    Example::

        >>> import tokamata
        >>> tokamata.Limits(max_dfa_states=100_000).max_dfa_states
        100000
    """

    #: longest accepted pattern text, in characters
    max_pattern_length: int = 100_000
    #: regex syntax nodes after parsing (counted repeats are not unrolled)
    max_regex_nodes: int = 50_000
    #: nesting depth of groups and quantifiers
    max_nesting_depth: int = 200
    #: byte-level DFA states built (lazily) for one constraint; each state decoding reaches
    #: also holds one token row of ceil(V/32) * 4 bytes
    max_dfa_states: int = 10_000
    #: wall-clock seconds one constraint may spend compiling, in total: its front end, grammar
    #: passes and intersections from the compile call on, and the lexer's automaton states
    #: built lazily afterwards, while decoding (see :mod:`tokamata.deadline`)
    max_compile_seconds: float = 10.0
    #: grammar size: symbols over all rules (each rule counts its right-hand side plus one)
    max_grammar_symbols: int = 200_000
    #: distinct values the items of a JSON Schema array with ``uniqueItems`` may take (its
    #: grammar has a state per set of values already used: up to 2 ** n); more raises
    #: ``Unsupported`` naming ``uniqueItems``, as an infinite item language does
    max_unique_items_values: int = 12
    #: Earley items in one parser set (one step of the parser)
    max_earley_items: int = 50_000
    #: parser states (Earley sets) one grammar constraint holds at once, over all its matchers
    #: (those no live matcher can reach are released, so this bounds live states, not built ones)
    max_parser_states: int = 1_000_000
    #: simultaneous (parser, lexer) configurations one matcher tracks (lexing ambiguity)
    max_lexer_configurations: int = 1_000
    #: steps one grammar mask walk may take (a configuration stepped over a trie node, where
    #: lexemes end inside tokens); a mask makes one walk per configuration of its position.
    #: Past it the mask raises at once, instead of running for seconds. A walk takes at most
    #: about (trie nodes) x (distinct configurations at a node) steps: Llama 3's trie has
    #: about 300,000 nodes, and real grammars need a few million steps at the very most
    max_mask_work: int = 50_000_000
    #: tokens ``Matcher.forced_tokens`` and bytes ``Matcher.forced_bytes`` return at most: a
    #: longer forced run (``a(aa)*`` over the one token ``aa`` never ends) is cut there, and
    #: the next call, after consuming, goes on
    max_forced_length: int = 4_096
    #: states (engine position, canonical filter state) one canonical-mask question may visit
    #: while it searches for a continuation that keeps the tokens canonical
    #: (``canonical=True``; :mod:`tokamata.vocab.canonical_filter`)
    max_canonical_search: int = 100_000
    #: token sequences ``Pipeline.compute_probability_mass(method="exact")`` visits while
    #: enumerating a language's tokenizations (every prefix counts, complete or not): an
    #: infinite language, or a finite one with more tokenizations, raises past it
    max_enumerated_sequences: int = 100_000
    #: positions one token-budget search explores (``Matcher.fill_bitmask(..., max_tokens=n)``):
    #: lexer states reachable from the position (regex constraints, exact distances), or
    #: positions of the breadth-first search for a shortest completion (grammars)
    max_budget_states: int = 10_000
    # vocabulary readers
    #: token ids a vocabulary may have (its largest id plus one, and its ``size``), checked
    #: before anything of that length is allocated
    max_vocab_size: int = 4_000_000
    #: bytes read from a ``tokenizer.json`` or its config files (128 MiB: the largest real
    #: ones are near 35 MB; parsed JSON takes many times its size in memory). A GGUF file is
    #: mapped, not read: the counts and lengths in its header are checked against its size
    max_file_bytes: int = 1 << 27
    #: merges a BPE tokenizer model may list, or derive from its scores (GGUF ``llama``
    #: files); Gemma 3 has 514,906, Llama 3 280,147. Checked before the merge table is built
    max_merges: int = 4_000_000

    # front ends
    #: nesting depth of the JSON values a JSON Schema front end is given (objects and arrays,
    #: of the schema, its registry documents, or its JSON text), checked before any walk
    max_json_depth: int = 256
    #: JSON values in a schema document (and in each registry document), counted as written
    #: out: a Python object reused in several places counts each time it appears
    max_json_values: int = 1_000_000

    def __post_init__(self) -> None:
        for field in fields(self):
            _check_field(self, field.name, field.type, getattr(self, field.name))


#: the largest value of an ``int`` field: what the C++ core holds in an ``int32``
MAX_INT_LIMIT = 2**31 - 1


def _check_field(limits: Limits, name: str, kind: object, value: object) -> None:
    """Raise :class:`InvalidArgument` unless ``value`` suits the field; an ``int`` field given
    another integer type (``numpy.int64``) is stored as an ``int``."""
    if kind in (int, "int"):
        try:
            number = operator.index(value)  # type: ignore[arg-type]
        except TypeError:
            number = None
        if number is None or isinstance(value, bool):
            raise InvalidArgument(f"Limits.{name} must be an int, got {value!r}")
        if not 1 <= number <= MAX_INT_LIMIT:
            raise InvalidArgument(f"Limits.{name} must be in [1, {MAX_INT_LIMIT}], got {value!r}")
        if type(value) is not int:
            object.__setattr__(limits, name, number)
    else:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidArgument(f"Limits.{name} must be a number, got {value!r}")
        if not (math.isfinite(value) and value > 0):
            raise InvalidArgument(f"Limits.{name} must be a finite positive number, got {value!r}")


DEFAULT_LIMITS = Limits()
