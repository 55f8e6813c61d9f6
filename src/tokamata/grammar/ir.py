"""The grammar IR every front end produces: BNF rules over terminals; a terminal is a byte
language (an interned expression) or a special token.

Invariants (checked by :func:`check_grammar`, which every front end calls last):
- Symbols in a rule's right-hand side are ints: terminal ``i`` is ``i`` (``i >= 0``),
  nonterminal ``j`` is ``-(j + 1)`` (see :func:`nonterminal`, :func:`is_terminal`).
- A byte terminal's expression is not ``NOTHING`` and does not match the empty string (a
  zero-width lexeme would make lexing loop); a special-token terminal has ``expr is None``
  and names the vocabulary ids that spell it. A grammar whose sentences are single lexemes
  of one terminal (``start: T``, or ``start: T |`` when the empty output is a sentence too;
  no ``%ignore``) is the regular case, served without a parser (:func:`single_lexeme`).
- Every nonterminal is productive (derives some terminal string) and reachable from the
  start symbol once checked; the language is not empty.
- Ignored terminals (``%ignore``) may occur between any two lexemes and at both ends; they
  never reach the parser.
- ``origin`` is the 1-based (line, column) where the user wrote the thing, for errors.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

import numpy as np

from .. import _core
from ..automata import derivatives as d
from ..errors import InvalidSyntax, LimitExceeded
from ..limits import Limits

__all__ = ["Terminal", "Rule", "Grammar", "nonterminal", "is_terminal", "nonterminal_index", "check_grammar",
           "rules_core", "live_symbols", "set_live_symbols", "single_lexeme", "lexeme_grammar"]


def nonterminal(index: int) -> int:
    """The symbol of nonterminal ``index`` in a right-hand side."""
    return -(index + 1)


def is_terminal(symbol: int) -> bool:
    return symbol >= 0


def nonterminal_index(symbol: int) -> int:
    return -symbol - 1


class Terminal:
    """A lexeme class: ``expr`` (bytes) or, for a special token, ``token_ids`` and no expr.
    Immutable by convention: built once, never changed (hand-written rather than a frozen
    dataclass: front ends build many per compile, and a dataclass's generated ``__init__``
    runs as interpreted code)."""

    __slots__ = ("name", "expr", "token_ids", "origin")

    def __init__(self, name: str, expr: d.Expr | None, token_ids: tuple[int, ...] = (),
                 origin: tuple[int, int] | None = None):
        self.name = name
        self.expr = expr
        self.token_ids = token_ids
        self.origin = origin

    @property
    def is_special(self) -> bool:
        return self.expr is None

    def __eq__(self, other: object) -> bool:
        if type(other) is not Terminal:
            return NotImplemented
        return (self.name, self.expr, self.token_ids, self.origin) == \
            (other.name, other.expr, other.token_ids, other.origin)

    def __hash__(self) -> int:
        return hash((self.name, self.expr, self.token_ids, self.origin))

    def __repr__(self) -> str:
        return f"Terminal(name={self.name!r}, expr={self.expr!r}, token_ids={self.token_ids!r}, origin={self.origin!r})"


class Rule:
    """``lhs -> rhs``; ``lhs`` is a nonterminal index, ``rhs`` a tuple of symbols. Immutable
    by convention, like :class:`Terminal`."""

    __slots__ = ("lhs", "rhs", "origin")

    def __init__(self, lhs: int, rhs: tuple[int, ...], origin: tuple[int, int] | None = None):
        self.lhs = lhs
        self.rhs = rhs
        self.origin = origin

    def __eq__(self, other: object) -> bool:
        if type(other) is not Rule:
            return NotImplemented
        return self.lhs == other.lhs and self.rhs == other.rhs and self.origin == other.origin

    def __hash__(self) -> int:
        return hash((self.lhs, self.rhs, self.origin))

    def __repr__(self) -> str:
        return f"Rule(lhs={self.lhs!r}, rhs={self.rhs!r}, origin={self.origin!r})"


@dataclass(frozen=True)
class Grammar:
    """A context-free grammar over terminals. ``source`` is the user's text, for messages."""

    terminals: tuple[Terminal, ...]
    nonterminals: tuple[str, ...]
    rules: tuple[Rule, ...]
    start: int
    ignore: tuple[int, ...] = ()
    source: str = field(default="", compare=False)

    def describe(self, symbol: int) -> str:
        if is_terminal(symbol):
            return self.terminals[symbol].name
        return self.nonterminals[nonterminal_index(symbol)]


def single_lexeme(grammar: Grammar) -> tuple[int, bool] | None:
    """``(terminal, accepts_empty)`` when the sentences of ``grammar`` are exactly the
    lexemes of one text terminal (plus the empty output if ``accepts_empty``), else None."""
    if grammar.ignore or len(grammar.terminals) != 1 or grammar.terminals[0].expr is None:
        return None
    shapes = sorted(rule.rhs for rule in grammar.rules if rule.lhs == grammar.start)
    if len(shapes) != sum(1 for _ in grammar.rules) or shapes not in ([(0,)], [(), (0,)]):
        return None
    return 0, len(shapes) == 2


def lexeme_grammar(name: str, expr: d.Expr) -> Grammar:
    """The grammar whose sentences are the strings of ``expr`` (which is not ``NOTHING``):
    one terminal, ``start: T`` (``start: T |`` with ``T`` non-empty if ``expr`` matches the
    empty string). What a regex lowers to."""
    from ..automata import boolean

    if expr.nullable:
        rest = boolean.difference(expr, d.EPSILON)
        if rest is d.NOTHING:  # only the empty output
            return Grammar((), ("start",), (Rule(0, ()),), 0)
        return Grammar((Terminal(name, rest),), ("start",), (Rule(0, (0,)), Rule(0, ())), 0)
    return Grammar((Terminal(name, expr),), ("start",), (Rule(0, (0,)),), 0)


def _span(source: str, origin: tuple[int, int] | None) -> tuple[int, int] | None:
    if not origin or not source:
        return None
    lines = source.split("\n")
    line, column = origin
    if not 1 <= line <= len(lines):
        return None
    start = sum(len(text) + 1 for text in lines[: line - 1]) + column - 1
    return (start, min(start + 1, len(source)))


def _error(grammar: Grammar, message: str, origin: tuple[int, int] | None) -> InvalidSyntax:
    """An :class:`InvalidSyntax` at ``origin`` (line and column; the span too where the
    grammar has its source text)."""
    line, column = origin if origin else (None, None)
    return InvalidSyntax(message, text=grammar.source or None, span=_span(grammar.source, origin),
                         line=line, column=column)


def _flat_rules(rules, num_nonterminals: int, num_terminals: int) -> "_core.GrammarRules":
    """``rules`` as the flat arrays of ``_core.GrammarRules`` (ValueError if a symbol or lhs
    is out of range). Built as lists, converted once (faster than growing typed arrays)."""
    lhs = [rule.lhs for rule in rules]
    offsets = [0]
    rhs: list[int] = []
    for rule in rules:
        rhs.extend(rule.rhs)
        offsets.append(len(rhs))
    try:
        # (array("i") converts a list of ints several times faster than np.array does)
        arrays = [np.frombuffer(array("i", values), dtype=np.int32) for values in (lhs, offsets, rhs)]
    except OverflowError:
        raise ValueError("a symbol is out of the 32-bit range") from None
    return _core.GrammarRules(arrays[0], arrays[1], arrays[2], num_nonterminals, num_terminals)


def rules_core(grammar: Grammar) -> "_core.GrammarRules":
    """``grammar``'s rules as ``_core.GrammarRules`` (cached on a checked grammar)."""
    found = grammar.__dict__.get("_rules_core")
    if found is None:
        found = _flat_rules(grammar.rules, len(grammar.nonterminals), len(grammar.terminals))
        object.__setattr__(grammar, "_rules_core", found)
    return found


def live_symbols(grammar: Grammar) -> tuple[bytes, bytes]:
    """Per nonterminal of ``grammar``: is it productive, and is it reachable from the start
    through rules whose symbols are all productive (cached on the grammar: the builder's
    dead-rule pass and :func:`check_grammar` ask the same questions of the same grammar).
    ``ValueError`` if a symbol is out of range, as :func:`rules_core`."""
    found = grammar.__dict__.get("_live_symbols")
    if found is None:
        core = rules_core(grammar)
        productive = core.productive()
        found = (productive, core.reachable(grammar.start, productive))
        object.__setattr__(grammar, "_live_symbols", found)
    return found


def set_live_symbols(grammar: Grammar, productive: bytes, reachable: bytes) -> None:
    """Record what :func:`live_symbols` would compute for ``grammar``, for a pass that knows it
    by construction (:func:`~.dead_rules.drop_dead_rules`: every symbol it keeps is live)."""
    object.__setattr__(grammar, "_live_symbols", (productive, reachable))


def check_grammar(grammar: Grammar, limits: Limits) -> Grammar:
    """Validate ``grammar`` and return it without unreachable rules.

    Raises :class:`InvalidSyntax` (with line and column) for symbols out of range, empty or
    zero-width terminals, unproductive nonterminals and an empty language, and
    :class:`LimitExceeded` (``max_grammar_symbols``) for grammars too large. A grammar this
    function returned is not checked again (grammars are immutable; front ends check, and
    so does :func:`~tokamata.compile_grammar_ir`), unless ``limits`` are tighter.
    """
    checked_size = grammar.__dict__.get("_checked_size")
    if checked_size is not None and checked_size <= limits.max_grammar_symbols:
        return grammar
    size = sum(len(rule.rhs) + 1 for rule in grammar.rules)
    if size > limits.max_grammar_symbols:
        raise LimitExceeded("max_grammar_symbols", size, limits.max_grammar_symbols)
    num_terminals = len(grammar.terminals)
    num_nonterminals = len(grammar.nonterminals)
    if not 0 <= grammar.start < num_nonterminals:
        raise _error(grammar, "the start rule is not defined", None)
    for terminal in grammar.terminals:
        if terminal.expr is None:
            if not terminal.token_ids:
                raise _error(grammar, f"special token {terminal.name} has no token id", terminal.origin)
            continue
        if terminal.expr is d.NOTHING:
            raise _error(grammar, f"terminal {terminal.name} matches nothing", terminal.origin)
        if terminal.expr.nullable:
            raise _error(grammar, f"terminal {terminal.name} matches the empty string "
                                  "(zero-width terminals are not allowed)", terminal.origin)
    for index in grammar.ignore:
        if not 0 <= index < num_terminals or grammar.terminals[index].expr is None:
            raise _error(grammar, "%ignore needs a text terminal", None)
    try:  # (a front end may have built the flat rules already: rules_core)
        core = rules_core(grammar)
    except ValueError:  # some symbol is out of range: name the rule
        for rule in grammar.rules:
            if not 0 <= rule.lhs < num_nonterminals:
                raise _error(grammar, "rule for an undefined nonterminal", rule.origin) from None
            for symbol in rule.rhs:
                if is_terminal(symbol):
                    if symbol >= num_terminals:
                        raise _error(grammar, f"undefined terminal #{symbol}", rule.origin) from None
                elif nonterminal_index(symbol) >= num_nonterminals:
                    raise _error(grammar, f"undefined rule #{nonterminal_index(symbol)}", rule.origin) from None
        raise
    productive, reachable = live_symbols(grammar)  # (reachable: through productive rules only)
    if not productive[grammar.start]:
        raise _error(grammar, f"the grammar's language is empty: {grammar.nonterminals[grammar.start]} "
                              "derives no finite string", _first_origin(grammar, grammar.start))
    # an unproductive nonterminal that a reachable rule mentions is an error (it is dead code
    # the user most likely did not intend)
    for rule in grammar.rules if 0 in productive else ():
        if reachable[rule.lhs]:
            for symbol in rule.rhs:
                if symbol < 0 and not productive[-symbol - 1]:
                    name = grammar.nonterminals[nonterminal_index(symbol)]
                    raise _error(grammar, f"rule {name} is unproductive: it derives no finite string",
                                 _first_origin(grammar, nonterminal_index(symbol)) or rule.origin)
    if 0 in reachable:
        rules = tuple(rule for rule in grammar.rules if reachable[rule.lhs])
        core = _flat_rules(rules, num_nonterminals, num_terminals)
    else:
        rules = grammar.rules
    checked = Grammar(grammar.terminals, grammar.nonterminals, rules, grammar.start, grammar.ignore, grammar.source)
    object.__setattr__(checked, "_checked_size",
                       size if rules is grammar.rules else len(rules) + sum(len(rule.rhs) for rule in rules))
    object.__setattr__(checked, "_rules_core", core)
    if rules is grammar.rules:
        object.__setattr__(checked, "_live_symbols", (productive, reachable))
    return checked


def _first_origin(grammar: Grammar, nonterminal_index_: int) -> tuple[int, int] | None:
    for rule in grammar.rules:
        if rule.lhs == nonterminal_index_ and rule.origin:
            return rule.origin
    return None
