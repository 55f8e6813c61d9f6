"""llama.cpp GBNF grammars -> the grammar IR (:mod:`tokamata.grammar.ir`).

GBNF is a character-level context-free grammar: rules ``name ::= ...`` over string literals,
character classes, ``.``, rule references, groups, ``|``, ``* + ?``, ``{m}``, ``{m,}``,
``{m,n}``, ``#`` comments, and llama.cpp's token elements ``<[id]>`` and ``<text>``.

Invariants:
- The surface syntax is llama.cpp's parser (``src/llama-grammar.cpp``), read rule by rule:
  names are ASCII letters, digits and ``-``; a rule ends at a newline unless the newline is
  inside parentheses or right after ``|`` or ``::=``; escapes are ``\\n \\t \\r \\\\ \\" \\[ \\]
  \\-`` and ``\\xHH \\uHHHH \\UHHHHHHHH`` (code points, not bytes: ``"\\xe9"`` is ``é``);
  ``[a-]`` ends with a literal ``-``; postfix operators stack (``x{2}*`` is ``(x{2})*``); a
  repeated literal repeats as a whole; a later definition of a rule replaces an earlier one.
- The language is exactly llama.cpp's, character for character, spelled in UTF-8, except
  where llama.cpp's language is an accident, and there we refuse rather than guess: an empty
  class ``[]`` (llama.cpp: the empty string), a reversed range ``[z-a]``, ``{m,n}`` with
  ``n < m``, surrogate code points in literals. llama.cpp turns ``{m,n}`` with ``n > 2000``
  into ``{m,}``; we keep the bound as written. Left recursion, which llama.cpp rejects, is
  accepted (the engine is Earley).
- Mapping: GBNF has no lexer, so any split of the text into lexemes is exact as long as every
  regular piece is a terminal (the engine lets a lexeme end wherever its terminal matches, and
  there is no ``%ignore`` here). Recursion and tokens need BNF; regular parts become terminals:
  a non-recursive regular rule used once is inlined into its user, one used several times is
  one shared terminal, and runs of regular items are one terminal (see :class:`_Lowering`).
  A terminal never matches the empty string: a piece that can be empty is used as
  ``piece_nonempty | ε``.
- ``<[id]>`` and ``<text>`` are special-token terminals (one token id each); ``<text>`` is
  resolved through ``vocab.special_token_names`` first, then by the token's exact bytes, and
  must name exactly one id. Negated tokens ``!<...>`` (any one token but that one) raise
  :class:`Unsupported`.
- Errors: :class:`InvalidSyntax` with ``line L, column C`` (1-based, columns in characters)
  and the span; undefined rules are named; a missing start rule is an error. Text length is
  bounded by ``limits.max_pattern_length``, nesting of groups and operators by
  ``max_nesting_depth``, BNF expansion of counted repetitions by ``max_grammar_symbols``.
  The result has passed :func:`~tokamata.grammar.ir.check_grammar`.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, Union

from ..automata import charset as cs
from ..automata import derivatives as d
from ..errors import InvalidSyntax, LimitExceeded, Unsupported
from ..grammar.ir import Grammar, Rule, Terminal, check_grammar, nonterminal
from ..limits import Limits

__all__ = ["parse_gbnf"]

UNBOUNDED = d.UNBOUNDED

_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
_DIGITS = frozenset("0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")
_SIMPLE_ESCAPES = {"n": 10, "t": 9, "r": 13, "\\": 92, '"': 34, "[": 91, "]": 93, "-": 45}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_SURROGATES = (0xD800, 0xDFFF)


def parse_gbnf(text: str, vocab: Any, limits: Limits, *, start: str = "root") -> Grammar:
    """Parse a llama.cpp GBNF grammar into the IR; its language is the sentences of ``start``.

    ``vocab`` (a :class:`tokamata.Vocabulary`, or ``None`` when the grammar has no token
    elements) resolves ``<text>`` tokens and bounds ``<[id]>``.

    >>> g = parse_gbnf('root ::= "a"+ ("," "b")*', None, Limits())
    >>> [t.name for t in g.terminals], g.nonterminals
    (['"a"+ ("," "b")*'], ('root',))
    """
    return _parse(text, vocab, limits, start, mode="shared")


def _parse(text: str, vocab: Any, limits: Limits, start: str, mode: str) -> Grammar:
    """:func:`parse_gbnf` with a choice of mapping (see :class:`_Lowering`); the tests check
    that the three give the same language."""
    if not isinstance(text, str):
        raise InvalidSyntax(f"a GBNF grammar must be a str, got {type(text).__name__}")
    if len(text) > limits.max_pattern_length:
        raise LimitExceeded("max_pattern_length", len(text), limits.max_pattern_length)
    try:
        parser = _Parser(text, vocab, limits)
        parser.parse()
        parser.check_references(start)
        grammar = _Lowering(parser, start, limits, mode).grammar()
    except RecursionError:
        raise LimitExceeded("max_nesting_depth", "more than Python's recursion limit",
                            limits.max_nesting_depth) from None
    return check_grammar(grammar, limits)


# ------------------------------------------------------------------------------------ AST

@dataclass(frozen=True, eq=False)  # compared by identity: memo tables key on nodes
class _At:
    start: int  # offsets of the node's text
    end: int
    depth: int  # groups and postfix operators inside


@dataclass(frozen=True, eq=False)
class _Literal(_At):
    text: str


@dataclass(frozen=True, eq=False)
class _Chars(_At):
    """One character from ``charset`` (a class or ``.``); never empty, surrogates removed."""
    charset: cs.CharSet


@dataclass(frozen=True, eq=False)
class _Ref(_At):
    name: str


@dataclass(frozen=True, eq=False)
class _Token(_At):
    ids: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class _Seq(_At):
    items: tuple["_Node", ...]


@dataclass(frozen=True, eq=False)
class _Alt(_At):
    options: tuple["_Node", ...]


@dataclass(frozen=True, eq=False)
class _Repeat(_At):
    item: "_Node"
    low: int
    high: int  # UNBOUNDED: no bound


_Node = Union[_Literal, _Chars, _Ref, _Token, _Seq, _Alt, _Repeat]
_LEAVES = (_Literal, _Chars)


@dataclass(frozen=True)
class _RuleDef:
    name: str
    body: _Node
    start: int


def _sequence(items: list[_Node], start: int) -> _Node:
    if len(items) == 1:
        return items[0]
    return _Seq(start, items[-1].end if items else start, max((i.depth for i in items), default=0),
                tuple(items))


def _options(node: _Node) -> tuple[_Node, ...]:
    return node.options if isinstance(node, _Alt) else (node,)


# ---------------------------------------------------------------------------------- parser

class _Parser:
    """Recursive descent over the text, following llama.cpp's ``parse_*`` functions."""

    def __init__(self, text: str, vocab: Any, limits: Limits):
        self.text = text
        self.n = len(text)
        self.pos = 0
        self.vocab = vocab
        self.limits = limits
        self.rules: dict[str, _RuleDef] = {}
        self.references: list[_Ref] = []
        self._resolved: dict[str, tuple[int, ...]] = {}  # <text> -> token ids
        self._line_starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]

    # -- helpers ---------------------------------------------------------------------------
    def line_column(self, offset: int) -> tuple[int, int]:
        line = bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    def error(self, message: str, start: int, end: int | None = None) -> InvalidSyntax:
        start = min(start, self.n)
        end = max(start, min(self.n, start + 1 if end is None else end))
        line, column = self.line_column(start)
        return InvalidSyntax(f"{message} (line {line}, column {column})", self.text, (start, end))

    def peek(self, k: int = 0) -> str:
        i = self.pos + k
        return self.text[i] if i < self.n else ""

    def describe_here(self) -> str:
        c = self.peek()
        return "the end of the grammar" if not c else "a newline" if c in "\r\n" else repr(c)

    def space(self, newline_ok: bool) -> None:
        """Skip blanks and ``#`` comments; newlines too when ``newline_ok``."""
        text, n, pos = self.text, self.n, self.pos
        while pos < n:
            c = text[pos]
            if c == " " or c == "\t" or (newline_ok and (c == "\n" or c == "\r")):
                pos += 1
            elif c == "#":
                while pos < n and text[pos] not in "\r\n":
                    pos += 1
            else:
                break
        self.pos = pos

    def name(self) -> str:
        start = self.pos
        while self.pos < self.n and self.text[self.pos] in _WORD:
            self.pos += 1
        return self.text[start:self.pos]

    def integer(self, what: str) -> int:
        start = self.pos
        while self.pos < self.n and self.text[self.pos] in _DIGITS:
            self.pos += 1
        if start == self.pos:
            raise self.error(f"expecting {what}, found {self.describe_here()}", start)
        digits = self.text[start:self.pos].lstrip("0") or "0"
        return int(digits) if len(digits) <= 18 else 10 ** 18  # past every bound, fits int()

    def check_depth(self, depth: int) -> None:
        if depth > self.limits.max_nesting_depth:
            raise LimitExceeded("max_nesting_depth", depth, self.limits.max_nesting_depth)

    # -- grammar ---------------------------------------------------------------------------
    def parse(self) -> None:
        self.space(True)
        while self.pos < self.n:
            self.rule()

    def rule(self) -> None:
        start = self.pos
        name = self.name()
        if not name:
            hint = (" (a rule continues on the next line only inside parentheses or after '|')"
                    if self.rules else "")
            raise self.error(f"expecting a rule name, found {self.describe_here()}{hint}", start)
        self.space(False)
        if not self.text.startswith("::=", self.pos):
            hint = " (rule names use letters, digits and '-')" if self.peek() == "_" else ""
            raise self.error(f"expecting '::=' after the rule name {name!r}, found "
                             f"{self.describe_here()}{hint}", self.pos)
        self.pos += 3
        self.space(True)
        body = self.alternates(nested=False, depth=0)
        c = self.peek()
        if c == "\r":
            self.pos += 2 if self.peek(1) == "\n" else 1
        elif c == "\n":
            self.pos += 1
        elif c:
            raise self.error(f"unexpected {c!r} in rule {name!r}", self.pos)
        self.rules[name] = _RuleDef(name, body, start)  # llama.cpp: the last definition wins
        self.space(True)

    def alternates(self, nested: bool, depth: int) -> _Node:
        start = self.pos
        options = [self.sequence(nested, depth)]
        while self.peek() == "|":
            self.pos += 1
            self.space(True)
            options.append(self.sequence(nested, depth))
        if len(options) == 1:
            return options[0]
        return _Alt(start, options[-1].end, max(o.depth for o in options), tuple(options))

    def sequence(self, nested: bool, depth: int) -> _Node:
        start = self.pos
        items: list[_Node] = []
        while self.pos < self.n:
            here = self.pos
            c = self.text[here]
            item: _Node
            if c == '"':
                item = self.literal()
            elif c == "[":
                item = self.char_class()
            elif c == "<" or c == "!":
                item = self.token()
            elif c in _WORD:
                name = self.name()
                item = _Ref(here, self.pos, 0, name)
                self.references.append(item)
            elif c == "(":
                self.check_depth(depth + 1)
                self.pos += 1
                self.space(True)
                inner = self.alternates(True, depth + 1)
                if self.pos >= self.n:
                    raise self.error("unclosed '('", here)
                if self.text[self.pos] != ")":
                    raise self.error(f"expecting ')', found {self.describe_here()}", self.pos)
                self.pos += 1
                item = _regroup(inner, here, self.pos)
                self.check_depth(item.depth)
            elif c == ".":
                self.pos += 1
                item = _Chars(here, self.pos, 0, cs.ANY)
            elif c in "*+?{":
                if not items or (isinstance(items[-1], _Literal) and not items[-1].text):
                    raise self.error(f"{c!r} has no item before it to repeat", here)
                low, high = self.quantifier(nested)
                previous = items.pop()
                item = _Repeat(previous.start, self.pos, previous.depth + 1, previous, low, high)
                self.check_depth(item.depth)
            else:
                break
            items.append(item)
            self.space(nested)
        return _sequence(items, start)

    def literal(self) -> _Literal:
        start = self.pos
        self.pos += 1
        chars = []
        while True:
            if self.pos >= self.n:
                raise self.error("unterminated string literal", start)
            if self.text[self.pos] == '"':
                self.pos += 1
                break
            at = self.pos
            code = self.char()
            if _SURROGATES[0] <= code <= _SURROGATES[1]:
                raise self.error(f"the surrogate code point U+{code:04X} cannot be spelled in UTF-8",
                                 at, self.pos)
            chars.append(chr(code))
        return _Literal(start, self.pos, 0, "".join(chars))

    def char(self) -> int:
        """One character of a literal or class, escapes resolved, as a code point."""
        at = self.pos
        c = self.text[at]
        if c != "\\":
            self.pos += 1
            return ord(c)
        e = self.peek(1)
        if e in _HEX_ESCAPES:
            size = _HEX_ESCAPES[e]
            digits = self.text[at + 2: at + 2 + size]
            valid = next((i for i, h in enumerate(digits) if h not in _HEX), len(digits))
            if valid != size:
                raise self.error(f"\\{e} needs exactly {size} hex digits", at, at + 2 + valid)
            code = int(digits, 16)
            self.pos = at + 2 + size
            if code > cs.MAX_CODE_POINT:
                raise self.error(f"\\{e}{digits} is beyond U+10FFFF", at, self.pos)
            return code
        if e in _SIMPLE_ESCAPES:
            self.pos = at + 2
            return _SIMPLE_ESCAPES[e]
        if not e:
            raise self.error("a '\\' ends the grammar", at)
        raise self.error(f"unknown escape \\{e}", at, at + 2)

    def char_class(self) -> _Chars:
        start = self.pos
        self.pos += 1
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        ranges = []
        while True:
            if self.pos >= self.n:
                raise self.error("unterminated character class", start)
            if self.text[self.pos] == "]":
                self.pos += 1
                break
            at = self.pos
            low = high = self.char()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.pos += 1
                high = self.char()
                if high < low:
                    raise self.error("reversed range in character class", at, self.pos)
            ranges.append((low, high))
        if not ranges:
            raise self.error("empty character class", start, self.pos)
        charset = cs.normalize(ranges)
        if negated:
            charset = cs.complement(charset)
        charset = cs.union(cs.intersect(charset, 0, _SURROGATES[0] - 1),
                           cs.intersect(charset, _SURROGATES[1] + 1, cs.MAX_CODE_POINT))
        if not charset:
            raise self.error("character class matches no character UTF-8 can spell", start, self.pos)
        return _Chars(start, self.pos, 0, charset)

    def token(self) -> _Token:
        start = self.pos
        negated = self.peek() == "!"
        if negated:
            self.pos += 1
        if self.peek() != "<":
            raise self.error(f"expecting '<' after '!', found {self.describe_here()}", self.pos)
        self.pos += 1
        by_id = self.peek() == "["
        token_id = -1
        if by_id:
            self.pos += 1
            token_id = self.integer("a token id after '<['")
            for closing in "]>":
                if self.peek() != closing:
                    raise self.error(f"expecting {closing!r}, found {self.describe_here()}", self.pos)
                self.pos += 1
        else:
            close = self.text.find(">", self.pos)
            if close < 0:
                raise self.error("unterminated token: expecting '>'", start)
            self.pos = close + 1
        if negated:
            raise Unsupported("negated token (any one token but the one named)", self.text,
                              (start, self.pos))
        if by_id:
            ids = (self.check_token_id(token_id, start),)
        else:
            ids = self.resolve_token(self.text[start:self.pos], start)
        return _Token(start, self.pos, 0, ids)

    def check_token_id(self, token_id: int, start: int) -> int:
        if self.vocab is not None and token_id >= len(self.vocab.token_bytes):
            raise self.error(f"token id {token_id} is not in the vocabulary "
                             f"({len(self.vocab.token_bytes)} token ids)", start, self.pos)
        return token_id

    def resolve_token(self, spelled: str, start: int) -> tuple[int, ...]:
        """The one token id spelled ``spelled`` (brackets included, as llama.cpp tokenizes it)."""
        if self.vocab is None:
            raise self.error(f"token {spelled} needs a vocabulary to be resolved", start, self.pos)
        ids = self._resolved.get(spelled)
        if ids is None:
            special = getattr(self.vocab, "special_token_names", None) or {}
            ids = tuple(special.get(spelled, ()))
            if not ids:
                raw = spelled.encode("utf-8")
                ids = tuple(i for i, b in enumerate(self.vocab.token_bytes) if b == raw)
            self._resolved[spelled] = ids
        if not ids:
            raise self.error(f"token {spelled} is not a token of the vocabulary (write its id as "
                             "<[id]>)", start, self.pos)
        if len(ids) > 1:
            raise self.error(f"token {spelled} names several token ids {list(ids)[:8]} (write the "
                             "one meant as <[id]>)", start, self.pos)
        return ids

    def quantifier(self, nested: bool) -> tuple[int, int]:
        at = self.pos
        c = self.text[at]
        self.pos += 1
        if c != "{":
            return {"*": (0, UNBOUNDED), "+": (1, UNBOUNDED), "?": (0, 1)}[c]
        self.space(nested)
        low = self.integer("a number after '{'")
        self.space(nested)
        if self.peek() == "}":
            high = low
        elif self.peek() == ",":
            self.pos += 1
            self.space(nested)
            high = self.integer("a number") if self.peek() and self.peek() in _DIGITS else UNBOUNDED
            self.space(nested)
            if self.peek() != "}":
                raise self.error(f"expecting '}}', found {self.describe_here()}", self.pos)
        else:
            raise self.error(f"expecting ',' or '}}', found {self.describe_here()}", self.pos)
        self.pos += 1
        bound = self.limits.max_grammar_symbols
        for count in (low, high):
            if count > bound:
                raise LimitExceeded("max_grammar_symbols", count, bound)
        if high != UNBOUNDED and high < low:
            raise self.error(f"repetition {{{low},{high}}}: the maximum is below the minimum", at, self.pos)
        return low, high

    def check_references(self, start: str) -> None:
        for ref in self.references:
            if ref.name not in self.rules:
                raise self.error(f"undefined rule {ref.name!r}", ref.start, ref.end)
        if start not in self.rules:
            raise InvalidSyntax(f"the grammar has no rule named {start!r} (the start rule)",
                                self.text, None)


def _regroup(node: _Node, start: int, end: int) -> _Node:
    """A parenthesized ``node``: same node with the parentheses' extent and one more level."""
    if isinstance(node, _Alt):
        return _Alt(start, end, node.depth + 1, node.options)
    if isinstance(node, _Seq):
        return _Seq(start, end, node.depth + 1, node.items)
    if isinstance(node, _Repeat):
        return _Repeat(start, end, node.depth + 1, node.item, node.low, node.high)
    if isinstance(node, _Literal) and not node.text:
        return _Seq(start, end, node.depth + 1, ())  # ("")* is fine, unlike ""*
    return node  # a single leaf or reference: parentheses change nothing


# -------------------------------------------------------------------------------- lowering

class _Lowering:
    """AST -> IR. A rule is *regular* when it is not recursive (in no cycle of references),
    uses no token and refers only to regular rules; a node is regular when everything under
    it is. Regular pieces become byte expressions, the rest BNF with helper nonterminals
    ``__RULE_KIND_N`` (GBNF cannot spell these names: ``_`` is not a name character).

    ``mode`` chooses how large the terminals are (all three give the same language):

    - ``"shared"`` (what :func:`parse_gbnf` uses): a regular rule referenced once is inlined
      into its user; a regular rule referenced more than once is one terminal of its own,
      shared by every reference, and a rule that uses it is BNF over it. Within BNF, runs of
      regular items and the regular alternatives of a rule or group are one terminal when
      they only inline rules. Shared terminals keep the lexer's states (and token rows)
      shared too: inlining ``space ::= [ \t]{0,20}`` into each of 150 properties of a JSON
      Schema grammar multiplies its states by 150 (10x the DFA states, measured), while
      parsing work barely changes.
    - ``"maximal"``: every regular rule is inlined everywhere; every maximal regular piece
      is one terminal.
    - ``"plain"``: only literals, classes and ``.`` are terminals.
    """

    def __init__(self, parser: _Parser, start: str, limits: Limits, mode: str):
        self.text = parser.text
        self.line_column = parser.line_column
        self.rules = parser.rules
        self.start = start
        self.limits = limits
        self.mode = mode
        self._mergeable: dict[_Node, bool] = {}
        self.terminals: list[Terminal] = []
        self._terminal_index: dict[object, int] = {}
        self.nonterminals: list[str] = []
        self._rule_symbol: dict[str, int] = {}
        self._pending: list[str] = []
        self.out: list[Rule] = []
        self._emitted: set[tuple[int, tuple[int, ...]]] = set()
        self.size = 0
        self._optional: dict[int, int] = {}  # terminal -> helper nonterminal "terminal | ε"
        self._regular: dict[_Node, bool] = {}
        self._expr: dict[_Node, d.Expr] = {}
        self._nonempty: dict[_Node, d.Expr] = {}
        self._rule_expr: dict[str, d.Expr] = {}
        self._rule_nonempty: dict[str, d.Expr] = {}
        self.current = start
        self.regular_rules: set[str] = set()
        self._uses: dict[str, int] = {}
        self._refs: dict[str, list[str]] = {}
        self.terminal_rules: set[str] = set()  # regular rules that are one terminal
        self.inlined_rules: set[str] = set()  # ... and are part of their (only) user's terminal
        if mode != "plain":
            for name in self._regular_rules_in_order():  # callees before callers
                self.regular_rules.add(name)
                body = self.rules[name].body
                self._rule_expr[name] = self.expr(body)
                self._rule_nonempty[name] = self.nonempty(body)
                if mode != "shared" or all(r in self.inlined_rules for r in self._refs[name]):
                    self.terminal_rules.add(name)
                    if mode != "shared" or self._uses.get(name, 0) <= 1:
                        self.inlined_rules.add(name)

    def grammar(self) -> Grammar:
        self.rule_symbol(self.start)
        while self._pending:
            name = self._pending.pop()
            self.current = name
            definition = self.rules[name]
            self.alternatives(self._rule_symbol[name], _options(definition.body), definition.start)
        # rules of later-discovered nonterminals (mostly callees) first: check_grammar's
        # productivity fixpoint then settles in few passes; alternatives keep their order
        rules = tuple(sorted(self.out, key=lambda rule: -rule.lhs))
        return Grammar(tuple(self.terminals), tuple(self.nonterminals), rules, 0, (), self.text)

    # -- which rules are regular -------------------------------------------------------------
    def _regular_rules_in_order(self) -> list[str]:
        edges: dict[str, list[str]] = {}
        has_token: dict[str, bool] = {}
        for name, definition in self.rules.items():
            refs: dict[str, None] = {}
            token = False
            stack: list[_Node] = [definition.body]
            while stack:
                node = stack.pop()
                if isinstance(node, _Ref):
                    refs[node.name] = None
                elif isinstance(node, _Token):
                    token = True
                elif isinstance(node, _Seq):
                    stack.extend(node.items)
                elif isinstance(node, _Alt):
                    stack.extend(node.options)
                elif isinstance(node, _Repeat):
                    stack.append(node.item)
            edges[name] = list(refs)
            for node in _walk(definition.body):
                if isinstance(node, _Ref):
                    self._uses[node.name] = self._uses.get(node.name, 0) + 1
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

    def regular(self, node: _Node) -> bool:
        known = self._regular.get(node)
        if known is not None:
            return known
        if isinstance(node, _LEAVES):
            result = True
        elif self.mode == "plain" or isinstance(node, _Token):
            result = False
        elif isinstance(node, _Ref):
            result = node.name in self.regular_rules
        elif isinstance(node, _Seq):
            result = all(self.regular(item) for item in node.items)
        elif isinstance(node, _Alt):
            result = all(self.regular(option) for option in node.options)
        else:
            result = self.regular(node.item)
        self._regular[node] = result
        return result

    def mergeable(self, node: _Node) -> bool:
        """May ``node`` be part of a terminal spanning several items or alternatives?"""
        if self.mode == "plain":
            return False
        known = self._mergeable.get(node)
        if known is None:
            known = self._mergeable[node] = self.regular(node) and all(
                n.name in self.inlined_rules for n in _walk(node) if isinstance(n, _Ref))
        return known

    # -- regular nodes as expressions ----------------------------------------------------------
    def expr(self, node: _Node) -> d.Expr:
        known = self._expr.get(node)
        if known is not None:
            return known
        if isinstance(node, _Literal):
            result = d.concat_all(d.byte_set(1 << b) for b in node.text.encode("utf-8"))
        elif isinstance(node, _Chars):
            result = d.utf8_char(node.charset)
        elif isinstance(node, _Ref):
            result = self._rule_expr[node.name]
        elif isinstance(node, _Seq):
            result = d.concat_all([self.expr(item) for item in node.items])
        elif isinstance(node, _Alt):
            result = d.alternation(*(self.expr(option) for option in node.options))
        elif isinstance(node, _Repeat):
            result = d.repeat(self.expr(node.item), node.low, node.high)
        else:  # pragma: no cover - tokens are never regular
            raise TypeError(f"not a regular node: {node!r}")
        self._expr[node] = result
        return result

    def nonempty(self, node: _Node) -> d.Expr:
        """The expression of ``node`` without the empty string (``NOTHING`` if that is all)."""
        whole = self.expr(node)
        if not whole.nullable:
            return whole
        known = self._nonempty.get(node)
        if known is not None:
            return known
        if isinstance(node, _Ref):
            result = self._rule_nonempty[node.name]
        elif isinstance(node, _Seq):  # ne(a R) = ne(a) R | (a nullable: ne(R))
            result, rest = d.NOTHING, d.EPSILON
            for item in reversed(node.items):
                item_expr = self.expr(item)
                result = d.alternation(d.concat(self.nonempty(item), rest),
                                       result if item_expr.nullable else d.NOTHING)
                rest = d.concat(item_expr, rest)
        elif isinstance(node, _Alt):
            result = d.alternation(*(self.nonempty(option) for option in node.options))
        elif isinstance(node, _Repeat) and node.high != 0:  # first copy non-empty, then up to high-1
            more = UNBOUNDED if node.high == UNBOUNDED else node.high - 1
            result = d.concat(self.nonempty(node.item), d.repeat(self.expr(node.item), 0, more))
        else:  # the empty literal, x{0}
            result = d.NOTHING
        self._nonempty[node] = result
        return result

    # -- BNF -------------------------------------------------------------------------------------
    def origin(self, offset: int) -> tuple[int, int]:
        return self.line_column(offset)

    def snippet(self, node: _Node) -> str:
        words = " ".join(self.text[node.start:node.end].split())
        return words if len(words) <= 60 else words[:57] + "..."

    def emit(self, lhs: int, rhs: tuple[int, ...], offset: int) -> None:
        index = -lhs - 1
        key = (index, rhs)
        if key in self._emitted:
            return
        self._emitted.add(key)
        self.charge(len(rhs) + 1)
        self.out.append(Rule(index, rhs, self.origin(offset)))

    def charge(self, count: int) -> None:
        self.size += count
        if self.size > self.limits.max_grammar_symbols:
            raise LimitExceeded("max_grammar_symbols", self.size, self.limits.max_grammar_symbols)

    def rule_symbol(self, name: str) -> int:
        symbol = self._rule_symbol.get(name)
        if symbol is None:
            symbol = self._rule_symbol[name] = nonterminal(len(self.nonterminals))
            self.nonterminals.append(name)
            self._pending.append(name)
        return symbol

    def helper(self, kind: str) -> int:
        symbol = nonterminal(len(self.nonterminals))
        self.nonterminals.append(f"__{self.current}_{kind}_{len(self.nonterminals)}")
        return symbol

    def terminal(self, expr: d.Expr, name: str, offset: int) -> int:
        key = ("expr", expr.id)
        index = self._terminal_index.get(key)
        if index is None:
            index = self._terminal_index[key] = len(self.terminals)
            self.terminals.append(Terminal(name, expr, (), self.origin(offset)))
        return index

    def token_terminal(self, node: _Token) -> int:
        key = ("token", node.ids)
        index = self._terminal_index.get(key)
        if index is None:
            index = self._terminal_index[key] = len(self.terminals)
            self.terminals.append(Terminal(self.text[node.start:node.end], None, node.ids,
                                           self.origin(node.start)))
        return index

    def alternatives(self, lhs: int, options: tuple[_Node, ...], offset: int) -> None:
        """Rules ``lhs -> option`` for each option; the regular options together are one
        terminal (plus ``lhs -> ε`` when they can be empty)."""
        flat: list[_Node] = []
        for option in options:
            flat.extend(_options(option))  # a group as a whole option: its options are ours
        regular = [o for o in flat if self.mergeable(o)]
        if regular:
            node = regular[0] if len(regular) == 1 else _Alt(regular[0].start, regular[-1].end, 0,
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

    def symbols(self, node: _Node) -> list[int]:
        """A sequence of symbols deriving exactly the strings of ``node``."""
        if (isinstance(node, _LEAVES) or self.mergeable(node)
                or isinstance(node, _Ref) and node.name in self.terminal_rules):
            return self.regular_symbols(node)
        if isinstance(node, _Ref):
            return [self.rule_symbol(node.name)]
        if isinstance(node, _Token):
            return [self.token_terminal(node)]
        if isinstance(node, _Seq):
            return self.sequence_symbols(node.items)
        if isinstance(node, _Alt):
            group = self.helper("group")
            self.alternatives(group, node.options, node.start)
            return [group]
        assert isinstance(node, _Repeat)
        return self.repeat_symbols(node)

    def regular_symbols(self, node: _Node) -> list[int]:
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

    def sequence_symbols(self, items: tuple[_Node, ...]) -> list[int]:
        out: list[int] = []
        run: list[_Node] = []
        for item in items + (None,):  # type: ignore[operator]
            if item is not None and self.mergeable(item):
                run.append(item)
                continue
            if run:
                node = run[0] if len(run) == 1 else _Seq(run[0].start, run[-1].end, 0, tuple(run))
                out.extend(self.regular_symbols(node))
                run = []
            if item is not None:
                out.extend(self.symbols(item))
        return out

    def repeat_symbols(self, node: _Repeat) -> list[int]:
        body = self.symbols(node.item)
        if not body:
            return []
        low, high = node.low, node.high
        if len(body) > 1 and low + (1 if high == UNBOUNDED else high - low) > 1:
            group = self.helper("group")
            self.emit(group, tuple(body), node.start)
            body = [group]
        if low * len(body) > self.limits.max_grammar_symbols:
            raise LimitExceeded("max_grammar_symbols", low * len(body), self.limits.max_grammar_symbols)
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


def _walk(node: _Node) -> list[_Node]:
    """``node`` and every node under it."""
    out = []
    stack = [node]
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, _Seq):
            stack.extend(node.items)
        elif isinstance(node, _Alt):
            stack.extend(node.options)
        elif isinstance(node, _Repeat):
            stack.append(node.item)
    return out


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
