"""GBNF text -> syntax tree, following llama.cpp's grammar parser (``src/llama-grammar.cpp``).

Invariants:
- :class:`Parser` reads the text the way llama.cpp's ``parse_*`` functions do: names are ASCII
  letters, digits and ``-``; blanks and ``#`` comments are skipped, newlines only inside
  parentheses and right after ``|`` or ``::=`` (elsewhere a newline ends the rule); a later
  definition of a rule replaces an earlier one. Escapes (in literals and classes alike) are
  ``\\n \\t \\r \\\\ \\" \\[ \\] \\-`` and exactly 2, 4 or 8 hex digits after ``\\x \\u \\U``.
  Every refusal is :class:`InvalidSyntax` with ``line``, ``column`` (1-based, columns in
  characters) and ``span``, or :class:`Unsupported` (with the same) for negated tokens.
- The tree is the grammar layer's EBNF tree (:mod:`tokamata.grammar.ebnf`). Nodes carry their
  text's offsets (``start``, ``end``) and ``depth``, the groups and postfix
  operators inside, checked against ``limits.max_nesting_depth`` as they are built.
- Characters are code points: a :class:`Literal`'s text has no surrogate, a :class:`Chars`'s
  set is non-empty and has none (valid UTF-8 cannot spell them). Token elements are resolved
  to exactly one token id while parsing. Counts of counted repetitions are bounded where they
  are lowered (by the builder's symbol budget, ``limits.max_grammar_symbols``).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from ..automata import charset as cs
from ..errors import InvalidSyntax, LimitExceeded, Unsupported
from ..grammar.ebnf import UNBOUNDED, Alt, Chars, Literal, Node, Ref, RuleDef, Repeat, Seq, Token
from ..limits import Limits

__all__ = ["Parser"]

_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
_DIGITS = frozenset("0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")
_SIMPLE_ESCAPES = {"n": 10, "t": 9, "r": 13, "\\": 92, '"': 34, "[": 91, "]": 93, "-": 45}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_SURROGATES = (0xD800, 0xDFFF)


# ------------------------------------------------------------------------------------ AST
# (the node types are the grammar layer's EBNF trees, :mod:`tokamata.grammar.ebnf`)


def _sequence(items: list[Node], start: int) -> Node:
    if len(items) == 1:
        return items[0]
    return Seq(start, items[-1].end if items else start, max((i.depth for i in items), default=0),
                tuple(items))


# ---------------------------------------------------------------------------------- parser

class Parser:
    """Recursive descent over the text, following llama.cpp's ``parse_*`` functions."""

    def __init__(self, text: str, vocab: Any, limits: Limits):
        self.text = text
        self.n = len(text)
        self.pos = 0
        self.vocab = vocab
        self.limits = limits
        self.rules: dict[str, RuleDef] = {}
        self.references: list[Ref] = []
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
        return InvalidSyntax(message, text=self.text, span=(start, end), line=line, column=column)

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
        self.rules[name] = RuleDef(name, body, start)  # llama.cpp: the last definition wins
        self.space(True)

    def alternates(self, nested: bool, depth: int) -> Node:
        start = self.pos
        options = [self.sequence(nested, depth)]
        while self.peek() == "|":
            self.pos += 1
            self.space(True)
            options.append(self.sequence(nested, depth))
        if len(options) == 1:
            return options[0]
        return Alt(start, options[-1].end, max(o.depth for o in options), tuple(options))

    def sequence(self, nested: bool, depth: int) -> Node:
        start = self.pos
        items: list[Node] = []
        while self.pos < self.n:
            here = self.pos
            c = self.text[here]
            item: Node
            if c == '"':
                item = self.literal()
            elif c == "[":
                item = self.char_class()
            elif c == "<" or c == "!":
                item = self.token()
            elif c in _WORD:
                name = self.name()
                item = Ref(here, self.pos, 0, name)
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
                item = Chars(here, self.pos, 0, cs.ANY)
            elif c in "*+?{":
                if not items or (isinstance(items[-1], Literal) and not items[-1].text):
                    raise self.error(f"{c!r} has no item before it to repeat", here)
                low, high = self.quantifier(nested)
                previous = items.pop()
                item = Repeat(previous.start, self.pos, previous.depth + 1, previous, low, high)
                self.check_depth(item.depth)
            else:
                break
            items.append(item)
            self.space(nested)
        return _sequence(items, start)

    def literal(self) -> Literal:
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
        return Literal(start, self.pos, 0, "".join(chars))

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

    def char_class(self) -> Chars:
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
        return Chars(start, self.pos, 0, charset)

    def token(self) -> Token:
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
            line, column = self.line_column(start)
            raise Unsupported("negated token", "any one token but the one named", text=self.text,
                              span=(start, self.pos), line=line, column=column)
        if by_id:
            ids: tuple[int, ...] = (self.check_token_id(token_id, start),)
        else:
            ids = self.resolve_token(self.text[start:self.pos], start)
        return Token(start, self.pos, 0, ids)

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
        if high != UNBOUNDED and high < low:
            raise self.error(f"repetition {{{low},{high}}}: the maximum is below the minimum", at, self.pos)
        return low, high

    def check_references(self, start: str) -> None:
        for ref in self.references:
            if ref.name not in self.rules:
                raise self.error(f"undefined rule {ref.name!r}", ref.start, ref.end)
        if start not in self.rules:
            raise InvalidSyntax(f"the grammar has no rule named {start!r} (the start rule)", text=self.text)


def _regroup(node: Node, start: int, end: int) -> Node:
    """A parenthesized ``node``: same node with the parentheses' extent and one more level."""
    if isinstance(node, Alt):
        return Alt(start, end, node.depth + 1, node.options)
    if isinstance(node, Seq):
        return Seq(start, end, node.depth + 1, node.items)
    if isinstance(node, Repeat):
        return Repeat(start, end, node.depth + 1, node.item, node.low, node.high)
    if isinstance(node, Literal) and not node.text:
        return Seq(start, end, node.depth + 1, ())  # ("")* is fine, unlike ""*
    return node  # a single leaf or reference: parentheses change nothing
