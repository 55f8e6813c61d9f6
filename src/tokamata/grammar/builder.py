"""Building a :class:`~tokamata.grammar.ir.Grammar`: the one builder every front end (Lark, GBNF,
JSON, JSON Schema) makes its IR with. Terminals, nonterminals, BNF rules, EBNF helpers,
embedded sub-grammars, EBNF rule definitions for the regular-rule pass, and one symbol budget.

Invariants:
- Byte terminals are shared by expression: two :meth:`GrammarBuilder.terminal` calls with the
  same (interned) expression return the same index, so identical inline literals are one
  terminal. Ignored terminals (:meth:`GrammarBuilder.ignore_terminal`) live in their own
  namespace: a terminal that is both ignored and used in a rule gets two indices, so that
  "ignored lexemes never reach the parser" never hides a lexeme a rule asks for.
- Special-token terminals are shared by their id tuple.
- Helper nonterminals (:meth:`GrammarBuilder.fresh`, the EBNF helpers) are named
  ``__{hint}_{kind}_{n}``; no front end's rule names start with two underscores (Lark rule
  names start with at most one, GBNF names have none, JSON Schema names none), so they never
  collide.
- One symbol budget: the grammar size (symbols over all rules, each rule counting its
  right-hand side plus one) is counted here and nowhere else, against
  ``Limits.max_grammar_symbols``, as rules are added and before a counted repetition or any
  other expansion a front end announces (:meth:`GrammarBuilder.check_room`,
  :meth:`GrammarBuilder.check_count`) is made, so ``x{100000000}`` fails fast. Every breach is
  ``LimitExceeded("max_grammar_symbols", value, limit)``.
- One time budget: adding rules and the regular-rule pass check the compile's deadline
  (:mod:`tokamata.deadline`, ``Limits.max_compile_seconds``).
- What a front end's grammar means is declared when the builder is made, never guessed from
  the front end: ``character_level`` (no lexer semantics: GBNF, JSON, JSON Schema) allows the
  regular-rule pass to merge rules into terminals (:mod:`.regular_rules`, mode ``inlining``);
  a grammar with a lexer (Lark: ``%ignore``, longest match) must not get it, and asking for it
  there is a ``ValueError``. ``drop_unproductive`` says unproductive nonterminals are expected
  (JSON Schema: an empty subschema) rather than a mistake to report.
- :meth:`GrammarBuilder.build` lowers the EBNF definitions (:meth:`GrammarBuilder.define`)
  reachable from the start rule, removes dead rules (:mod:`.dead_rules`) and ends with
  :func:`~tokamata.grammar.ir.check_grammar`.

What it does not do: parse text, or report undefined names (the front end's job).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence

from ..automata import derivatives as d
from ..deadline import check_deadline
from ..errors import LimitExceeded, TokamataError, Unsupported
from ..limits import Limits
from .dead_rules import drop_dead_rules, start_is_productive
from .ebnf import RuleDef
from .ir import Grammar, Rule, Terminal, check_grammar, is_terminal, nonterminal, nonterminal_index
from .regular_rules import MODES, RegularRules

__all__ = ["GrammarBuilder", "Origin"]

Origin = tuple[int, int]  # 1-based (line, column)


class GrammarBuilder:
    """Accumulates terminals, nonterminals and rules; :meth:`build` returns the checked IR.

    Symbols are the IR's ints: a terminal index ``i >= 0`` or ``nonterminal(j) < 0``.

    ``character_level``, ``inlining`` and ``drop_unproductive`` declare what the front end's
    grammars mean (see the module docstring).

    Example::

        >>> from tokamata.automata import derivatives as d
        >>> b = GrammarBuilder("", Limits())
        >>> a = b.terminal('"a"', d.byte_set(1 << ord("a")), (1, 1))
        >>> start = b.nonterminal("start")
        >>> b.add_rule(start, [b.star([a], "start", (1, 1))], (1, 1))
        >>> b.build(start).nonterminals
        ('start', '__start_star_0')
    """

    def __init__(self, source: str, limits: Limits, *, character_level: bool = False,
                 inlining: str | None = None, drop_unproductive: bool = False) -> None:
        if inlining is None:
            inlining = "shared" if character_level else "plain"
        if inlining not in MODES:
            raise ValueError(f"inlining must be one of {MODES}, got {inlining!r}")
        if inlining != "plain" and not character_level:
            raise ValueError("merging regular rules into terminals needs a character-level grammar "
                             "(with a lexer it would change how text is split into lexemes)")
        self.source = source
        self.limits = limits
        self._max_symbols = limits.max_grammar_symbols  # (read per rule)
        self.character_level = character_level
        self.inlining = inlining
        self.drop_unproductive = drop_unproductive
        self._definitions: dict[str, RuleDef] = {}
        self._line_starts: list[int] | None = None
        self._terminals: list[Terminal] = []
        self._by_expr: dict[int, int] = {}
        self._by_ids: dict[tuple[int, ...], int] = {}
        self._ignored_by_expr: dict[int, int] = {}
        self._ignore: list[int] = []
        self._nonterminals: list[str] = []
        self._by_name: dict[str, int] = {}
        self._rules: list[Rule] = []
        self._size = 0
        self._fresh = 0
        # (expression, name, origin, span) of each terminal an embedded grammar ignores
        self._embedded_ignores: list[tuple[d.Expr, str, Origin | None, tuple[int, int] | None]] = []

    # ------------------------------------------------------------------------ terminals

    def terminal(self, name: str, expr: d.Expr, origin: Origin | None = None, numbered: bool = False) -> int:
        """The index of the rule terminal with expression ``expr`` (added if new, named ``name``,
        or ``{name}_{index}`` if ``numbered``)."""
        index = self._by_expr.get(expr.id)
        if index is None:
            index = self._by_expr[expr.id] = len(self._terminals)
            self._terminals.append(Terminal(f"{name}_{index}" if numbered else name, expr, (), origin))
        return index

    def special_terminal(self, name: str, token_ids: Sequence[int], origin: Origin | None = None) -> int:
        """The index of the special-token terminal for ``token_ids`` (added if new)."""
        ids = tuple(sorted(set(token_ids)))
        index = self._by_ids.get(ids)
        if index is None:
            index = self._by_ids[ids] = len(self._terminals)
            self._terminals.append(Terminal(name, None, ids, origin))
        return index

    def ignore_terminal(self, name: str, expr: d.Expr, origin: Origin | None = None) -> int:
        """Add ``expr`` to the ``%ignore`` set (once per expression); returns its index."""
        index = self._ignored_by_expr.get(expr.id)
        if index is None:
            index = self._ignored_by_expr[expr.id] = len(self._terminals)
            self._terminals.append(Terminal(name, expr, (), origin))
            self._ignore.append(index)
        return index

    # --------------------------------------------------------------------- nonterminals

    def nonterminal(self, name: str) -> int:
        """The symbol of the nonterminal called ``name`` (added if new)."""
        index = self._by_name.get(name)
        if index is None:
            index = self._by_name[name] = len(self._nonterminals)
            self._nonterminals.append(name)
        return nonterminal(index)

    def fresh(self, hint: str, kind: str) -> int:
        """A new helper nonterminal's symbol, named ``__{hint}_{kind}_{n}``."""
        name = f"__{hint}_{kind}_{self._fresh}"
        self._fresh += 1
        return self.nonterminal(name)

    def numbered(self, name: str) -> int:
        """A new nonterminal's symbol, named ``{name}_{index}`` (generated grammars: JSON Schema)."""
        index = len(self._nonterminals)
        name = f"{name}_{index}"
        self._by_name[name] = index
        self._nonterminals.append(name)
        return nonterminal(index)

    def add_rule(self, lhs: int, rhs: Sequence[int], origin: Origin | None = None) -> None:
        """Add ``lhs -> rhs`` (``lhs`` a nonterminal symbol)."""
        size = self._size + len(rhs) + 1
        if size > self._max_symbols:
            raise LimitExceeded("max_grammar_symbols", size, self._max_symbols)
        self._size = size
        self._rules.append(Rule(-lhs - 1, tuple(rhs), origin))
        if not len(self._rules) & 1023:
            check_deadline()

    # -------------------------------------------------------------------------- budget

    @property
    def size(self) -> int:
        """Symbols added so far (each rule counts its right-hand side plus one)."""
        return self._size

    def fits(self, amount: int) -> bool:
        """Would ``amount`` more symbols stay within the budget?"""
        return self._size + amount <= self.limits.max_grammar_symbols

    def check_room(self, amount: int) -> None:
        """Raise :class:`LimitExceeded` now if ``amount`` more symbols would not fit (before a
        front end expands something that big)."""
        if self._size + amount > self.limits.max_grammar_symbols:
            raise LimitExceeded("max_grammar_symbols", self._size + amount,
                                self.limits.max_grammar_symbols)

    def check_count(self, count: int, bound: int | None = None) -> None:
        """Raise :class:`LimitExceeded` if ``count`` (copies, cases, states: something that
        becomes that many symbols or more) exceeds ``bound``, by default the whole budget."""
        if bound is None:
            bound = self.limits.max_grammar_symbols
        if count > bound:
            raise LimitExceeded("max_grammar_symbols", count, bound)

    # ------------------------------------------------------------------ EBNF definitions

    def define(self, definition: RuleDef) -> None:
        """Define (or redefine: the last definition wins) an EBNF rule; :meth:`build`
        lowers the definitions its start rule reaches, merging regular rules into terminals as
        ``inlining`` says (:mod:`.regular_rules`)."""
        self._definitions[definition.name] = definition

    def origin_of(self, offset: int) -> Origin:
        """The 1-based (line, column) of ``offset`` in the source."""
        if self._line_starts is None:
            self._line_starts = [0] + [i + 1 for i, c in enumerate(self.source) if c == "\n"]
        line = bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    # ------------------------------------------------------------------------ EBNF helpers

    def group(self, options: Sequence[Sequence[int]], hint: str, origin: Origin | None) -> int:
        """One symbol deriving any of ``options`` (each a sequence of symbols)."""
        if len(options) == 1 and len(options[0]) == 1:
            return options[0][0]
        lhs = self.fresh(hint, "group")
        for option in options:
            self.add_rule(lhs, option, origin)
        return lhs

    def optional(self, item: Sequence[int], hint: str, origin: Origin | None) -> int:
        """One symbol deriving ``item`` or the empty string."""
        lhs = self.fresh(hint, "opt")
        self.add_rule(lhs, item, origin)
        self.add_rule(lhs, (), origin)
        return lhs

    def star(self, item: Sequence[int], hint: str, origin: Origin | None) -> int:
        """One symbol deriving ``item`` zero or more times (left-recursive)."""
        lhs = self.fresh(hint, "star")
        self.add_rule(lhs, (), origin)
        self.add_rule(lhs, (lhs, *item), origin)
        return lhs

    def plus(self, item: Sequence[int], hint: str, origin: Origin | None) -> int:
        """One symbol deriving ``item`` one or more times (left-recursive)."""
        lhs = self.fresh(hint, "plus")
        self.add_rule(lhs, item, origin)
        self.add_rule(lhs, (lhs, *item), origin)
        return lhs

    def repeat(self, item: Sequence[int], low: int, high: int, hint: str,
               origin: Origin | None) -> list[int]:
        """Symbols deriving ``item`` ``low`` to ``high`` times (``high`` may be
        ``derivatives.UNBOUNDED``): ``low`` copies, then a star or a chain of optionals."""
        if not item or high == 0:
            return []
        if len(item) > 1:
            item = [self.group([item], hint, origin)]
        optional_count = 0 if high == d.UNBOUNDED else high - low
        self.check_room(low + 3 * optional_count)  # before anything is allocated
        out = list(item) * low
        if high == d.UNBOUNDED:
            out.append(self.star(item, hint, origin))
        elif optional_count:
            tail: list[int] = []
            for _ in range(optional_count):
                lhs = self.fresh(hint, "opt")
                self.add_rule(lhs, (), origin)
                self.add_rule(lhs, (*item, *tail), origin)
                tail = [lhs]
            out.extend(tail)
        return out

    # --------------------------------------------------------------------- sub-grammars

    def embed(self, sub: Grammar, prefix: str, origin: Origin | None,
              span: tuple[int, int] | None = None) -> int:
        """Copy ``sub`` (a checked grammar from another front end) into this one and return the
        symbol of its start nonterminal.

        Terminals are merged by expression (special tokens by ids); nonterminals are renamed
        ``{prefix}{name}``; rules keep their origins when they have them, else get ``origin``.
        ``sub``'s ``%ignore`` terminals must also be ignored by the final grammar (the IR has
        one global ignore set); :meth:`build` refuses the grammar otherwise.
        """
        terminal_map: list[int] = []
        for t in sub.terminals:
            if t.expr is None:
                terminal_map.append(self.special_terminal(t.name, t.token_ids, t.origin or origin))
            else:
                terminal_map.append(self.terminal(t.name, t.expr, t.origin or origin))
        for i in sub.ignore:
            expr = sub.terminals[i].expr
            if expr is not None:
                self._embedded_ignores.append((expr, sub.terminals[i].name, origin, span))
        nonterminal_map = [self.nonterminal(prefix + name) for name in sub.nonterminals]

        def remap(symbol: int) -> int:
            return terminal_map[symbol] if is_terminal(symbol) else nonterminal_map[nonterminal_index(symbol)]

        for rule in sub.rules:
            self.add_rule(nonterminal_map[rule.lhs], [remap(s) for s in rule.rhs], rule.origin or origin)
        return nonterminal_map[sub.start]

    # ---------------------------------------------------------------------------- result

    def build(self, start: int | str, empty_language: Callable[[], TokamataError] | None = None) -> Grammar:
        """The checked grammar with start symbol ``start`` (a nonterminal symbol, or the name of
        a rule given to :meth:`define`): definitions lowered, dead rules dropped, then
        :func:`~tokamata.grammar.ir.check_grammar`. ``empty_language`` is raised when the start
        symbol derives nothing (made only then; else ``check_grammar``'s :class:`InvalidSyntax`)."""
        if isinstance(start, str):
            start = RegularRules(self, self._definitions, self.inlining, self.origin_of).lower(start)
        for expr, name, origin, span in self._embedded_ignores:
            if expr.id not in self._ignored_by_expr:
                line, column = origin if origin else (None, None)
                raise Unsupported("%ignore in an embedded grammar", f"it ignores {name}, the enclosing "
                                  "grammar does not (%ignore is global)", text=self.source or None, span=span,
                                  line=line, column=column)
        grammar = Grammar(tuple(self._terminals), tuple(self._nonterminals), tuple(self._rules),
                          nonterminal_index(start), tuple(self._ignore), self.source)
        if empty_language is not None and not start_is_productive(grammar):
            raise empty_language()
        return check_grammar(drop_dead_rules(grammar, self.drop_unproductive), self.limits)
