"""Inlining regular rules into terminals: the pass that lowers EBNF rule definitions
(:mod:`.ebnf`) into the builder's terminals and BNF rules, for front ends without lexer
semantics. :meth:`~tokamata.grammar.builder.GrammarBuilder.build` runs it on the definitions
given to :meth:`~tokamata.grammar.builder.GrammarBuilder.define`, with the mode the front end
declared.

A rule is *regular* when it is not recursive (in no cycle of references), uses no special
token and refers only to regular rules; a node is regular when everything under it is.
Regular pieces become byte expressions (terminals), the rest BNF with helper nonterminals
``__RULE_KIND_N`` (from :meth:`~tokamata.grammar.builder.GrammarBuilder.fresh`).

Invariants:
- Only for character-level grammars: there is no lexer to respect (no ``%ignore``, no
  longest match), so any split of the text into lexemes is exact as long as every regular
  piece is a terminal (the engine lets a lexeme end wherever its terminal matches). The
  builder refuses a merging mode unless the front end declared ``character_level``: in a
  grammar with lexer semantics (Lark) merging rules into terminals would change the lexing.
- The three modes give the same language:

  - ``"shared"``: a regular rule referenced once is inlined into its user; a regular rule
    referenced more than once is one terminal of its own, shared by every reference, and a
    rule that uses it is BNF over it. Within BNF, runs of regular items and the regular
    alternatives of a rule or group are one terminal when they only inline rules. Shared
    terminals keep the lexer's states (and token rows) shared too: inlining
    ``space ::= [ \\t]{0,20}`` into each of 150 properties of a JSON Schema grammar multiplies
    its states by 150 (10x the DFA states, measured), while parsing work barely changes.
  - ``"maximal"``: every regular rule is inlined everywhere; every maximal regular piece is
    one terminal.
  - ``"plain"``: only literals, classes and ``.`` are terminals (what a grammar with lexer
    semantics gets).
- A terminal never matches the empty string: a piece that can be empty is used as
  ``piece_nonempty | ε`` (a helper nonterminal per terminal).
- A regular rule's expression has at most ``Limits.max_regex_nodes`` nodes with the rules it
  uses written out (checked before it is built: LimitExceeded naming that field).
- Only rules reachable from the start rule are lowered; identical rules are emitted once.
  Counted repetitions are bounded by the builder's symbol budget, before anything is
  expanded (and, for regular ones, before their expression is built).

What it does not do: parse text, resolve references (the front end checks them first), or
count symbols itself (every rule goes through the builder).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..automata import derivatives as d
from ..deadline import check_deadline
from ..errors import LimitExceeded
from .ebnf import LEAVES, UNBOUNDED, Alt, Chars, Literal, Node, Ref, Repeat, RuleDef, Seq, Token, options_of, walk

if TYPE_CHECKING:
    from .builder import GrammarBuilder

__all__ = ["MODES", "RegularRules"]

MODES = ("shared", "maximal", "plain")


class RegularRules:
    """Lowers ``definitions`` (rule name -> :class:`~.ebnf.RuleDef`) into ``builder``, from
    ``start``; ``origin(offset)`` is the (line, column) of a source offset."""

    def __init__(self, builder: "GrammarBuilder", definitions: dict[str, RuleDef], mode: str,
                 origin: Callable[[int], tuple[int, int]]):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.builder = builder
        self.text = builder.source
        self.rules = definitions
        self.mode = mode
        self.origin = origin
        self._mergeable: dict[Node, bool] = {}
        self._rule_symbol: dict[str, int] = {}
        self._pending: list[str] = []
        self._emitted: set[tuple[int, tuple[int, ...]]] = set()
        self._optional: dict[int, int] = {}  # terminal -> helper nonterminal "terminal | ε"
        self._regular: dict[Node, bool] = {}
        self._expr: dict[Node, d.Expr] = {}
        self._nonempty: dict[Node, d.Expr] = {}
        self._rule_expr: dict[str, d.Expr] = {}
        self._rule_nonempty: dict[str, d.Expr] = {}
        self.current = ""
        self.regular_rules: set[str] = set()
        self._rule_size: dict[str, int] = {}  # regular rule -> nodes, the rules it uses written out
        self._uses: dict[str, int] = {}
        self._refs: dict[str, list[str]] = {}
        self.terminal_rules: set[str] = set()  # regular rules that are one terminal
        self.inlined_rules: set[str] = set()  # ... and are part of their (only) user's terminal
        if mode != "plain":
            for name in self._regular_rules_in_order():  # callees before callers
                check_deadline()
                self.regular_rules.add(name)
                body = self.rules[name].body
                self._check_size(name, body)
                self._rule_expr[name] = self.expr(body)
                self._rule_nonempty[name] = self.nonempty(body)
                if mode != "shared" or all(r in self.inlined_rules for r in self._refs[name]):
                    self.terminal_rules.add(name)
                    if mode != "shared" or self._uses.get(name, 0) <= 1:
                        self.inlined_rules.add(name)

    def lower(self, start: str) -> int:
        """Emit the rules reachable from ``start``; returns its nonterminal symbol."""
        symbol = self.rule_symbol(start)
        while self._pending:
            check_deadline()
            name = self._pending.pop()
            self.current = name
            definition = self.rules[name]
            self.alternatives(self._rule_symbol[name], options_of(definition.body), definition.start)
        return symbol

    # -- which rules are regular -------------------------------------------------------------
    def _regular_rules_in_order(self) -> list[str]:
        edges: dict[str, list[str]] = {}
        has_token: dict[str, bool] = {}
        for name, definition in self.rules.items():
            refs: dict[str, None] = {}
            token = False
            for node in walk(definition.body):
                if isinstance(node, Ref):
                    refs[node.name] = None
                    self._uses[node.name] = self._uses.get(node.name, 0) + 1
                elif isinstance(node, Token):
                    token = True
            edges[name] = list(refs)
            has_token[name] = token
        self._refs = edges
        regular: set[str] = set()
        order = []
        for component in _strongly_connected(edges):  # callees first
            name = component[0]
            if (len(component) == 1 and name not in edges[name] and not has_token[name]
                    and all(callee in regular for callee in edges[name])):
                regular.add(name)
                order.append(name)
        return order

    def regular(self, node: Node) -> bool:
        known = self._regular.get(node)
        if known is not None:
            return known
        if isinstance(node, LEAVES):
            result = True
        elif self.mode == "plain" or isinstance(node, Token):
            result = False
        elif isinstance(node, Ref):
            result = node.name in self.regular_rules
        elif isinstance(node, Seq):
            result = all(self.regular(item) for item in node.items)
        elif isinstance(node, Alt):
            result = all(self.regular(option) for option in node.options)
        else:
            result = self.regular(node.item)
        self._regular[node] = result
        return result

    def mergeable(self, node: Node) -> bool:
        """May ``node`` be part of a terminal spanning several items or alternatives?"""
        if self.mode == "plain":
            return False
        known = self._mergeable.get(node)
        if known is None:
            known = self._mergeable[node] = self.regular(node) and all(
                n.name in self.inlined_rules for n in walk(node) if isinstance(n, Ref))
        return known

    def _check_size(self, name: str, body: Node) -> None:
        """Refuse a regular rule whose expression, with the rules it uses written out, has more
        than ``Limits.max_regex_nodes`` nodes (a rule using the next one twice, and so on,
        doubles at every level), before it is built."""
        sizes = self._rule_size

        def size(node: Node) -> int:  # (a literal is one: the text itself is bounded)
            if isinstance(node, Ref):
                return sizes.get(node.name, 1)
            if isinstance(node, (Seq, Alt)):
                return 1 + sum(size(n) for n in (node.items if isinstance(node, Seq) else node.options))
            if isinstance(node, Repeat):
                return 1 + size(node.item)
            return 1

        total = sizes[name] = size(body)
        bound = self.builder.limits.max_regex_nodes
        if total > bound:
            error = LimitExceeded("max_regex_nodes", total, bound)
            error.line, error.column = self.origin(self.rules[name].start)
            raise error

    # -- regular nodes as expressions ----------------------------------------------------------
    def expr(self, node: Node) -> d.Expr:
        known = self._expr.get(node)
        if known is not None:
            return known
        if isinstance(node, Literal):
            result = d.concat_all(d.byte_set(1 << b) for b in node.text.encode("utf-8"))
        elif isinstance(node, Chars):
            result = d.utf8_char(node.charset)
        elif isinstance(node, Ref):
            result = self._rule_expr[node.name]
        elif isinstance(node, Seq):
            result = d.concat_all([self.expr(item) for item in node.items])
        elif isinstance(node, Alt):
            result = d.alternation(*(self.expr(option) for option in node.options))
        elif isinstance(node, Repeat):
            self.builder.check_count(node.low)
            self.builder.check_count(node.high)
            result = d.repeat(self.expr(node.item), node.low, node.high)
        else:  # pragma: no cover - tokens are never regular
            raise TypeError(f"not a regular node: {node!r}")
        self._expr[node] = result
        return result

    def nonempty(self, node: Node) -> d.Expr:
        """The expression of ``node`` without the empty string (``NOTHING`` if that is all)."""
        whole = self.expr(node)
        if not whole.nullable:
            return whole
        known = self._nonempty.get(node)
        if known is not None:
            return known
        if isinstance(node, Ref):
            result = self._rule_nonempty[node.name]
        elif isinstance(node, Seq):  # ne(a R) = ne(a) R | (a nullable: ne(R))
            options: list[d.Expr] = []  # one alternation at the end: a growing one per item is quadratic
            rest = d.EPSILON
            for item in reversed(node.items):
                item_expr = self.expr(item)
                if not item_expr.nullable:
                    options.clear()
                options.append(d.concat(self.nonempty(item), rest))
                rest = d.concat(item_expr, rest)
            result = d.alternation(*options)
        elif isinstance(node, Alt):
            result = d.alternation(*(self.nonempty(option) for option in node.options))
        elif isinstance(node, Repeat) and node.high != 0:  # first copy non-empty, then up to high-1
            more = UNBOUNDED if node.high == UNBOUNDED else node.high - 1
            result = d.concat(self.nonempty(node.item), d.repeat(self.expr(node.item), 0, more))
        else:  # the empty literal, x{0}
            result = d.NOTHING
        self._nonempty[node] = result
        return result

    # -- BNF -------------------------------------------------------------------------------------
    def snippet(self, node: Node) -> str:
        words = " ".join(self.text[node.start:node.end].split())
        return words if len(words) <= 60 else words[:57] + "..."

    def emit(self, lhs: int, rhs: tuple[int, ...], offset: int) -> None:
        key = (lhs, rhs)
        if key in self._emitted:
            return
        self._emitted.add(key)
        self.builder.add_rule(lhs, rhs, self.origin(offset))

    def rule_symbol(self, name: str) -> int:
        symbol = self._rule_symbol.get(name)
        if symbol is None:
            symbol = self._rule_symbol[name] = self.builder.nonterminal(name)
            self._pending.append(name)
        return symbol

    def helper(self, kind: str) -> int:
        return self.builder.fresh(self.current, kind)

    def terminal(self, expr: d.Expr, name: str, offset: int) -> int:
        return self.builder.terminal(name, expr, self.origin(offset))

    def token_terminal(self, node: Token) -> int:
        return self.builder.special_terminal(self.text[node.start:node.end], node.ids, self.origin(node.start))

    def alternatives(self, lhs: int, options: tuple[Node, ...], offset: int) -> None:
        """Rules ``lhs -> option`` for each option; the regular options together are one
        terminal (plus ``lhs -> ε`` when they can be empty)."""
        flat: list[Node] = []
        for option in options:
            flat.extend(options_of(option))  # a group as a whole option: its options are ours
        regular = [o for o in flat if self.mergeable(o)]
        if regular:
            node = regular[0] if len(regular) == 1 else Alt(regular[0].start, regular[-1].end, 0,
                                                              tuple(regular))
            name = " | ".join(self.snippet(o) for o in regular)
            whole = self.expr(node)
            if whole.nullable:
                self.emit(lhs, (), offset)
                whole = self.nonempty(node)
            if whole is not d.NOTHING:
                self.emit(lhs, (self.terminal(whole, name, regular[0].start),), offset)
        for option in flat:
            if not self.mergeable(option):
                self.emit(lhs, tuple(self.symbols(option)), option.start)

    def symbols(self, node: Node) -> list[int]:
        """A sequence of symbols deriving exactly the strings of ``node``."""
        if (isinstance(node, LEAVES) or self.mergeable(node)
                or isinstance(node, Ref) and node.name in self.terminal_rules):
            return self.regular_symbols(node)
        if isinstance(node, Ref):
            return [self.rule_symbol(node.name)]
        if isinstance(node, Token):
            return [self.token_terminal(node)]
        if isinstance(node, Seq):
            return self.sequence_symbols(node.items)
        if isinstance(node, Alt):
            group = self.helper("group")
            self.alternatives(group, node.options, node.start)
            return [group]
        assert isinstance(node, Repeat)
        return self.repeat_symbols(node)

    def regular_symbols(self, node: Node) -> list[int]:
        whole = self.expr(node)
        if not whole.nullable:
            return [self.terminal(whole, self.snippet(node), node.start)]
        part = self.nonempty(node)
        if part is d.NOTHING:
            return []
        terminal = self.terminal(part, self.snippet(node), node.start)
        helper = self._optional.get(terminal)
        if helper is None:
            helper = self._optional[terminal] = self.helper("opt")
            self.emit(helper, (terminal,), node.start)
            self.emit(helper, (), node.start)
        return [helper]

    def sequence_symbols(self, items: tuple[Node, ...]) -> list[int]:
        out: list[int] = []
        run: list[Node] = []
        for item in items + (None,):
            if item is not None and self.mergeable(item):
                run.append(item)
                continue
            if run:
                node = run[0] if len(run) == 1 else Seq(run[0].start, run[-1].end, 0, tuple(run))
                out.extend(self.regular_symbols(node))
                run = []
            if item is not None:
                out.extend(self.symbols(item))
        return out

    def repeat_symbols(self, node: Repeat) -> list[int]:
        self.builder.check_count(node.low)
        self.builder.check_count(node.high)
        body = self.symbols(node.item)
        if not body:
            return []
        low, high = node.low, node.high
        if len(body) > 1 and low + (1 if high == UNBOUNDED else high - low) > 1:
            group = self.helper("group")
            self.emit(group, tuple(body), node.start)
            body = [group]
        self.builder.check_count(low * len(body))
        if high == UNBOUNDED:
            loop = self.helper("star" if low == 0 else "plus")
            self.emit(loop, (loop, *body), node.start)
            if low == 0:
                self.emit(loop, (), node.start)
                return [loop]
            self.emit(loop, tuple(body), node.start)
            return body * (low - 1) + [loop]
        out = body * low
        tail: tuple[int, ...] = ()
        for _ in range(high - low):  # opt_k -> body opt_(k-1) | ε
            optional = self.helper("opt")
            self.emit(optional, tuple(body) + tail, node.start)
            self.emit(optional, (), node.start)
            tail = (optional,)
        return out + list(tail)


def _strongly_connected(edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm without recursion; components come callees first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(edges[root]))]
        while work:
            node, successors = work[-1]
            descended = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(edges[successor])))
                    descended = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if descended:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components
