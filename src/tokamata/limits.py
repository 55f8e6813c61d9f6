"""Bounds on everything that can blow up while compiling or decoding.

Invariant: every loop whose length depends on user input checks one of these fields and
raises :class:`tokamata.LimitExceeded` naming the field and the value reached. Defaults are
generous for real constraints and stop pathological ones (``(a|b)*a(a|b){30}``) in well
under a second.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    #: wall-clock seconds spent building automaton states for one constraint, in total
    max_compile_seconds: float = 10.0
    #: grammar size: symbols over all rules (each rule counts its right-hand side plus one)
    max_grammar_symbols: int = 200_000
    #: distinct values the items of a JSON Schema array with ``uniqueItems`` may take (its
    #: grammar has a state per set of values already used: up to 2 ** n); more raises
    #: ``Unsupported`` naming ``uniqueItems``, as an infinite item language does
    max_unique_items_values: int = 12
    #: Earley items in one parser set (one step of the parser)
    max_earley_items: int = 50_000
    #: parser states (Earley sets) one grammar constraint keeps, over all its matchers
    max_parser_states: int = 1_000_000
    #: simultaneous (parser, lexer) configurations one matcher tracks (lexing ambiguity)
    max_lexer_configurations: int = 1_000

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise InvalidArgument(f"Limits.{name} must be a positive number, got {value!r}")


DEFAULT_LIMITS = Limits()
