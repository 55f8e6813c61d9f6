"""Lark grammar text -> statements with EBNF bodies (an AST), with exact source spans.

Invariants:
- The accepted syntax is Lark's (``lark/load_grammar.py``'s tokens and rules) plus tokamata's
  extensions: special tokens ``<|name|>`` / ``<[id, id, lo-hi]>``, ``%text_until "X"``,
  ``%json {...}`` (``%json any {...}``: every JSON spelling) and counted repetition ``item{m}``, ``item{m,}``, ``item{m,n}``.
  Rule templates and ``%declare`` are :class:`Unsupported`; anything else Lark would not
  parse is :class:`InvalidSyntax`.
- String and regex literals are decoded exactly as Lark decodes them (its ``eval_escaping``
  followed, for strings, by collapsing ``\\\\`` to ``\\``), quirks included, so that the same
  literal means the same lexeme; every decoded character remembers its source offset, so a
  regex error points into the grammar text.
- Every error carries ``text`` (the grammar), ``span`` (character offsets) and ``line``,
  ``column`` (1-based, of the span's start). Bracket nesting is bounded by
  ``Limits.max_nesting_depth``.
- Statements end at a newline; a following line whose first non-blank character is ``|``
  continues the alternatives (comment and blank lines in between are skipped). ``\\`` at the
  end of a line joins lines. Comments are ``//`` and ``#`` to the end of the line.

The AST and :class:`Source` are :mod:`.lark_ast`; literal decoding is :mod:`.lark_literals`.
What it does not do: resolve names or build expressions (see :mod:`tokamata.syntax.lark`).
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple, NoReturn

from ..errors import InvalidSyntax, LimitExceeded, Unsupported
from ..limits import Limits
from .lark_ast import (UNBOUNDED, Alt, Definition, Extension, Ignore, Import, Json, Node, Range, Ref, Seq,
                       Source, Span, Special, Statement, TextUntil, Repeat)
from .lark_literals import decode_literal, escaping_length

__all__ = ["parse_statements"]

# ------------------------------------------------------------------------------ the lexer


class _Token(NamedTuple):  # (a tuple: built for every token, twice as fast as a frozen dataclass)
    kind: str
    value: str
    start: int
    end: int

    @property
    def span(self) -> Span:
        return (self.start, self.end)


_PUNCT = {"(": "LPAR", ")": "RPAR", "[": "LSQB", "]": "RSQB", "{": "LBRACE", "}": "RBRACE",
          ":": "COLON", ",": "COMMA", "~": "TILDE", "+": "OP", "*": "OP"}
#: directives that stand for an item (an atom of a rule or terminal)
_ITEM_DIRECTIVES = frozenset({"%text_until", "%json", "%text_token", "%paragraph_token", "%quoted_text",
                              "%unquoted_text", "%image", "%substring_of", "%delimited_list",
                              "%delimited_subsequence_of"})
_DIRECTIVES = frozenset({"%ignore", "%import", "%override", "%extend", "%declare"}) | _ITEM_DIRECTIVES
_RULE = re.compile(r"(?:!|![?]|[?]!?)?(_?[a-z][_a-z0-9]*)")
_TERMINAL = re.compile(r"_?[A-Z][_A-Z0-9]*")
_NUMBER = re.compile(r"-?[0-9]+")
_DIRECTIVE = re.compile(r"%[a-z_]+")
_SPACE = re.compile(r"(?:[ \t\f\r]|\\[ \t]*\r?\n|//[^\n]*|#[^\n]*)*")
_BLANK_LINES = re.compile(r"(?:[ \t\f\r\n]|//[^\n]*|#[^\n]*)*")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: what a RULE or TERMINAL token may start with, and the two tried in _scan's order
_NAME_START = frozenset("_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_NAMES = (("RULE", _RULE), ("TERMINAL", _TERMINAL))


def _skipped(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where ``pattern`` (one that matches the empty string: it always matches) ends from ``pos``."""
    match = pattern.match(text, pos)
    assert match is not None
    return match.end()
_SPECIAL_IDS = re.compile(r"\s*([0-9]+)(?:\s*-\s*([0-9]+))?\s*")
_HEX = frozenset("0123456789abcdefABCDEF")
_COUNT_AHEAD = re.compile(r"[ \t]*[0-9]")


#: the rest of a string literal after its opening quote, through its closing quote: an escaped
#: quote or backslash, or any other character but a newline (a lone backslash included)
_STRING_BODY = re.compile(r'(?:\\["\\]|[^"\n\\]|\\(?!["\\]))*"')
#: the frequent tokens in one match, spaces before them included: a name (RULE tried before
#: TERMINAL, as _scan does), a string literal that closes on its line (its i flag taken, as
#: _string does) or one-character punctuation; no match: _scan's branches. The spaces are
#: _SPACE's, taken whole (a lookahead is atomic: no token is ever found inside a comment)
_FAST = re.compile(f"(?=(?P<space>{_SPACE.pattern}))(?P=space)(?:(?P<RULE>_?[a-z][_a-z0-9]*)|"
                   f"(?P<TERMINAL>{_TERMINAL.pattern})|"
                   f'(?P<STRING>"{_STRING_BODY.pattern}i?)|(?P<PUNCT>[()\\[\\]{{}}:,~+*|]))')
_PUNCT_KINDS = dict(_PUNCT, **{"|": "OR"})


class _Lexer:
    def __init__(self, source: Source) -> None:
        self.source = source
        self.text = source.text
        self.pos = 0
        self._peeked: _Token | None = None

    def peek(self) -> _Token:
        if self._peeked is None:
            self._peeked = self._scan()
        return self._peeked

    def next(self) -> _Token:
        token = self.peek()
        self._peeked = None
        return token

    def _scan(self) -> _Token:
        text = self.text
        m = _FAST.match(text, self.pos)
        if m is not None:
            kind = m.lastgroup
            assert kind is not None  # (a match ends with one of the token groups)
            start, end = m.span(kind)
            self.pos = end
            value = m.group(kind)
            return _Token(_PUNCT_KINDS[value] if kind == "PUNCT" else kind, value, start, end)
        return self._scan_slow()

    def _scan_slow(self) -> _Token:
        """Every token, one branch per first character (_scan's _FAST takes the frequent ones)."""
        text = self.text
        start = self.pos = _SPACE.match(text, self.pos).end()  # type: ignore[union-attr]  # (matches "")
        if start >= len(text):
            return _Token("EOF", "", start, start)
        c = text[start]
        if c in _NAME_START:  # the most frequent tokens first (the branches below start elsewhere)
            for kind, pattern in _NAMES:
                m = pattern.match(text, start)
                if m is not None:
                    end = self.pos = m.end()
                    return _Token(kind, text[start:end], start, end)
            raise self.source.error(f"unexpected character {c!r}", (start, start + 1))
        if c == "\n":
            after = _skipped(_BLANK_LINES, text, start)
            if after < len(text) and text[after] == "|":  # the alternatives continue
                self.pos = after + 1
                return _Token("OR", "|", after, after + 1)
            self.pos = after
            return _Token("NL", "\n", start, start + 1)
        if c == "|":
            return self._token("OR", start, start + 1)
        if c == '"':
            return self._string(start)
        if c == "/":
            return self._regexp(start)
        if c == "<":
            return self._special(start)
        if c == "%":
            m = _DIRECTIVE.match(text, start)
            if m is None or m.group() not in _DIRECTIVES:
                word = m.group() if m else "%"
                raise self.source.error(f"unknown directive {word!r}", (start, start + len(word)))
            return self._token("DIRECTIVE", start, m.end())
        if c == "-" and text.startswith("->", start):
            return self._token("TO", start, start + 2)
        if c == ".":
            if text.startswith("..", start):
                return self._token("DOTDOT", start, start + 2)
            return self._token("DOT", start, start + 1)
        if c in "?!":
            m = _RULE.match(text, start)
            if m is not None and m.start(1) > start:
                return self._token("RULE", start, m.end())
            if c == "?":
                return self._token("OP", start, start + 1)
        if c in _PUNCT:
            return self._token(_PUNCT[c], start, start + 1)
        for kind, pattern in (("RULE", _RULE), ("TERMINAL", _TERMINAL), ("NUMBER", _NUMBER)):
            m = pattern.match(text, start)
            if m is not None:
                return self._token(kind, start, m.end())
        raise self.source.error(f"unexpected character {c!r}", (start, start + 1))

    def _token(self, kind: str, start: int, end: int) -> _Token:
        self.pos = end
        return _Token(kind, self.text[start:end], start, end)

    def _string(self, start: int) -> _Token:
        text = self.text
        m = _STRING_BODY.match(text, start + 1)  # (the loop below, at C speed)
        if m is not None:
            end = m.end()
            return self._token("STRING", start, end + 1 if text.startswith("i", end) else end)
        i = start + 1
        while True:
            if i >= len(text) or text[i] == "\n":
                raise self.source.error("unterminated string literal", (start, start + 1))
            if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in '"\\':
                i += 2
            elif text[i] == '"':
                break
            else:
                i += 1
        end = i + 1
        if end < len(text) and text[end] == "i":
            end += 1
        return self._token("STRING", start, end)

    def _regexp(self, start: int) -> _Token:
        text = self.text
        i = start + 1
        while True:
            if i >= len(text):
                raise self.source.error("unterminated regular expression", (start, start + 1))
            if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in "/\\":
                i += 2
            elif text[i] == "/":
                break
            else:
                i += 1
        end = i + 1
        while end < len(text) and text[end] in "imslux":
            end += 1
        return self._token("REGEXP", start, end)

    def _special(self, start: int) -> _Token:
        text = self.text
        closer = "]>" if text.startswith("<[", start) else ">"
        end = text.find(closer, start + 1)
        newline = text.find("\n", start)
        if end < 0 or 0 <= newline < end:
            raise self.source.error(f"special token without its closing {closer!r}", (start, start + 1))
        return self._token("SPECIAL", start, end + len(closer))

    def raw_json(self, limits: Limits) -> tuple[object, Span, str]:
        """After ``%json``: an optional spelling (``natural``, the default, or ``any``), then
        the balanced ``{...}`` block, decoded by ``json.loads``."""
        text = self.text
        resume = self.pos if self._peeked is None else self._peeked.start
        self._peeked = None
        start = _skipped(_BLANK_LINES, text, resume)
        spelling = "natural"
        word = _WORD.match(text, start)
        if word is not None:
            if word.group() not in ("natural", "any"):
                raise self.source.error(f"%json takes a spelling (natural or any) or a JSON object, got "
                                        f"{word.group()!r:.40}", word.span())
            spelling = word.group()
            start = _skipped(_BLANK_LINES, text, word.end())
        if start >= len(text) or text[start] != "{":
            raise self.source.error("%json must be followed by a JSON object {...}", (start, start + 1))
        open_brackets: list[str] = []
        i = start
        while True:
            if i >= len(text):
                raise self.source.error("unbalanced '{' of %json (no matching '}')", (start, start + 1))
            c = text[i]
            if c == '"':
                i += 1
                while i < len(text) and text[i] != '"':
                    i += 2 if text[i] == "\\" else 1
            elif c in "{[":
                open_brackets.append("}" if c == "{" else "]")
                if len(open_brackets) > limits.max_nesting_depth:
                    raise LimitExceeded("max_nesting_depth", len(open_brackets), limits.max_nesting_depth)
            elif c in "}]":
                if open_brackets.pop() != c:
                    break  # mismatched: json.loads below says where
                if not open_brackets:
                    break
            i += 1
        end = i + 1
        self.pos = end
        try:
            schema = json.loads(text[start:end])
        except json.JSONDecodeError as e:
            at = start + e.pos
            raise self.source.error(f"malformed JSON in %json: {e.msg}", (at, at + 1)) from None
        except RecursionError:  # pragma: no cover - depth is bounded above
            raise LimitExceeded("max_nesting_depth", "more than Python's recursion limit",
                                limits.max_nesting_depth) from None
        except ValueError as e:  # a number of more digits than Python converts
            raise self.source.error(f"malformed JSON in %json: {e}", (start, end)) from None
        return schema, (start, end), spelling


# ------------------------------------------------------------------------------- the parser


_ATOM_STARTS = frozenset({"LPAR", "LSQB", "STRING", "REGEXP", "RULE", "TERMINAL", "SPECIAL"})
_CLOSERS = {"LPAR": "RPAR", "LSQB": "RSQB"}


class _Parser:
    def __init__(self, source: Source, limits: Limits) -> None:
        self.source = source
        self.limits = limits
        self.lexer = _Lexer(source)
        self.depth = 0
        self.open_brackets: list[_Token] = []

    def fail(self, token: _Token, expected: str) -> NoReturn:
        if token.kind in ("NL", "EOF") and self.open_brackets:
            opener = self.open_brackets[-1]
            raise self.source.error(f"unbalanced {opener.value!r}: no matching "
                                    f"{')' if opener.kind == 'LPAR' else ']'!r}", opener.span)
        if token.kind in ("RPAR", "RSQB"):
            if not self.open_brackets:
                raise self.source.error(f"unbalanced {token.value!r}", token.span)
            opener = self.open_brackets[-1]
            raise self.source.error(f"{token.value!r} does not match {opener.value!r} opened at "
                                    f"{self.source.where(opener.span)}", token.span)
        what = {"NL": "end of line", "EOF": "end of text"}.get(token.kind, repr(token.value))
        raise self.source.error(f"unexpected {what}, expected {expected}", token.span)

    def expect(self, kind: str, expected: str) -> _Token:
        token = self.lexer.next()
        if token.kind != kind:
            self.fail(token, expected)
        return token

    def end_of_statement(self) -> None:
        token = self.lexer.next()
        if token.kind not in ("NL", "EOF"):
            self.fail(token, "the end of the line")

    # -- statements --------------------------------------------------------------------

    def statements(self) -> list[Statement]:
        out: list[Statement] = []
        while True:
            token = self.lexer.next()
            if token.kind == "EOF":
                return out
            if token.kind == "NL":
                continue
            if token.kind in ("RULE", "TERMINAL"):
                out.append(self.definition(token, "define"))
            elif token.kind == "DIRECTIVE" and token.value in ("%override", "%extend"):
                name = self.lexer.next()
                if name.kind not in ("RULE", "TERMINAL"):
                    self.fail(name, f"a rule or terminal definition after {token.value}")
                out.append(self.definition(name, token.value[1:]))
            elif token.kind == "DIRECTIVE" and token.value == "%ignore":
                body = self.expansions(top=False)
                self.end_of_statement()
                out.append(Ignore((token.start, max(body.span[1], token.end)), body))
            elif token.kind == "DIRECTIVE" and token.value == "%import":
                out.append(self.import_statement(token))
            elif token.kind == "DIRECTIVE" and token.value == "%declare":
                raise self.source.unsupported("%declare", "terminals without a definition cannot be enforced",
                                              token.span)
            else:
                self.fail(token, "a rule, a terminal or a directive")

    def definition(self, name: _Token, mode: str) -> Definition:
        is_rule = name.kind == "RULE"
        bare = name.value.lstrip("?!")
        token = self.lexer.peek()
        if token.kind == "LBRACE":
            raise self.source.unsupported("rule templates", "name{params}", token.span)
        if token.kind == "DOT":  # priority: accepted, does not change the language
            self.lexer.next()
            if self.lexer.peek().kind == "OP" and self.lexer.peek().value == "+":
                self.lexer.next()
            self.expect("NUMBER", "a priority number after '.'")
        self.expect("COLON", "':'")
        body = self.expansions(top=is_rule)
        self.end_of_statement()
        return Definition((name.start, name.end), bare, is_rule, body, mode)

    def import_statement(self, directive: _Token) -> Import:
        first = self.lexer.next()
        if first.kind == "DOT":
            raise self.source.unsupported("relative %import", "grammar files are not read", first.span)
        if first.kind not in ("RULE", "TERMINAL"):
            self.fail(first, "a module name after %import")
        path = [first]
        while self.lexer.peek().kind == "DOT":
            self.lexer.next()
            part = self.lexer.next()
            if part.kind not in ("RULE", "TERMINAL"):
                self.fail(part, "a name after '.'")
            path.append(part)
        if path[0].value != "common":
            raise self.source.unsupported(f"%import from {path[0].value!r}", "only lark's common terminals "
                                          "are built in", path[0].span)
        names: list[tuple[str, str, Span]] = []
        token = self.lexer.peek()
        if token.kind == "LPAR":
            if len(path) != 1:
                self.fail(token, "the end of the line")
            self.lexer.next()
            while True:
                name = self.lexer.next()
                if name.kind not in ("RULE", "TERMINAL"):
                    self.fail(name, "a name to import")
                names.append((name.value, name.value, name.span))
                sep = self.lexer.next()
                if sep.kind == "RPAR":
                    break
                if sep.kind != "COMMA":
                    self.fail(sep, "',' or ')'")
        else:
            if len(path) != 2:
                raise self.source.error("%import common needs a name: common.NAME or common (A, B)",
                                        (directive.start, path[-1].end))
            local = path[1]
            if token.kind == "TO":
                self.lexer.next()
                local = self.lexer.next()
                if local.kind not in ("RULE", "TERMINAL"):
                    self.fail(local, "a name after '->'")
            names.append((path[1].value, local.value, (path[1].start, local.end)))
        self.end_of_statement()
        return Import((directive.start, path[-1].end), tuple(names))

    # -- expressions -------------------------------------------------------------------

    def expansions(self, top: bool) -> Node:
        start = self.lexer.peek().start
        options = [self.alias(top)]
        while self.lexer.peek().kind == "OR":
            self.lexer.next()
            options.append(self.alias(top))
        if len(options) == 1:
            return options[0]
        return Alt((start, options[-1].span[1]), tuple(options))

    def alias(self, top: bool) -> Node:
        lexer = self.lexer
        token = lexer.peek()
        start = token.start
        items: list[Node] = []
        while token.kind in _ATOM_STARTS or (token.kind == "DIRECTIVE" and token.value in _ITEM_DIRECTIVES):
            items.append(self.expr())
            token = lexer.peek()
        if token.kind == "TO":
            if not top:
                raise self.source.error("an alias (-> name) is only allowed at the end of a rule's "
                                        "alternative", token.span)
            self.lexer.next()
            self.expect("RULE", "a rule name after '->'")
            token = self.lexer.peek()
        if token.kind not in ("OR", "RPAR", "RSQB", "NL", "EOF", "COMMA"):
            self.fail(token, "an item, '|' or the end of the line")
        seq_end = items[-1].span[1] if items else start
        return items[0] if len(items) == 1 else Seq((start, seq_end), tuple(items))

    def expr(self) -> Node:
        atom = self.atom()
        start = atom.span[0]
        token = self.lexer.peek()
        if token.kind == "OP":
            self.lexer.next()
            low, high = {"?": (0, 1), "*": (0, UNBOUNDED), "+": (1, UNBOUNDED)}[token.value]
            return Repeat((start, token.end), atom, low, high)
        if token.kind == "TILDE":
            self.lexer.next()
            low_token = self.expect("NUMBER", "a count after '~'")
            low = high = self.count(low_token)
            end = low_token.end
            if self.lexer.peek().kind == "DOTDOT":
                self.lexer.next()
                high_token = self.expect("NUMBER", "a count after '..'")
                high, end = self.count(high_token), high_token.end
                if high < low:
                    raise self.source.error(f"bad range {low}..{high} (the maximum is below the "
                                            "minimum)", (low_token.start, end))
            return Repeat((start, end), atom, low, high)
        if token.kind == "LBRACE":
            self.lexer.next()
            low_token = self.expect("NUMBER", "a count after '{'")
            low = high = self.count(low_token)
            if self.lexer.peek().kind == "COMMA":
                self.lexer.next()
                high = UNBOUNDED
                if self.lexer.peek().kind == "NUMBER":
                    high = self.count(self.lexer.next())
            close = self.expect("RBRACE", "'}'")
            if high != UNBOUNDED and high < low:
                raise self.source.error(f"bad repetition {{{low},{high}}} (the maximum is below the "
                                        "minimum)", (token.start, close.end))
            return Repeat((start, close.end), atom, low, high)
        return atom

    def count(self, token: _Token) -> int:
        value = int(token.value)
        if value < 0:
            raise self.source.error("a repetition count cannot be negative", token.span)
        return value

    def atom(self) -> Node:
        token = self.lexer.next()
        kind = token.kind
        if kind in ("LPAR", "LSQB"):
            self.depth += 1
            if self.depth > self.limits.max_nesting_depth:
                raise LimitExceeded("max_nesting_depth", self.depth, self.limits.max_nesting_depth)
            self.open_brackets.append(token)
            inner = self.expansions(top=False)
            close = self.lexer.next()
            if close.kind != _CLOSERS[kind]:
                self.fail(close, f"{')' if kind == 'LPAR' else ']'!r}")
            self.open_brackets.pop()
            self.depth -= 1
            span = (token.start, close.end)
            if kind == "LSQB":
                return Repeat(span, inner, 0, 1)
            if isinstance(inner, Seq):
                return Seq(span, inner.items)
            return inner
        if kind == "STRING":
            if self.lexer.peek().kind == "DOTDOT":
                return self.range(token)
            return decode_literal(token.value, token.start, self.source)
        if kind == "REGEXP":
            return decode_literal(token.value, token.start, self.source)
        if kind in ("RULE", "TERMINAL"):
            if token.value[0] in "?!":
                raise self.source.error("rule modifiers (? !) are only allowed where a rule is "
                                        "defined", token.span)
            brace = self.lexer.peek()
            if kind == "RULE" and brace.kind == "LBRACE" and not _COUNT_AHEAD.match(self.lexer.text, brace.end):
                raise self.source.unsupported("rule templates", "name{args}", brace.span)
            return Ref(token.span, token.value)
        if kind == "SPECIAL":
            return self.special(token)
        if kind == "DIRECTIVE" and token.value == "%text_until":
            stop = self.lexer.next()
            if stop.kind != "STRING":
                self.fail(stop, 'a string literal after %text_until (%text_until "X")')
            literal = decode_literal(stop.value, stop.start, self.source)
            if literal.flags:
                raise self.source.error("%text_until takes a plain string (no flags)", stop.span)
            span = (token.start, stop.end)
            return TextUntil(span, self.source.text[span[0]:span[1]], literal)
        if kind == "DIRECTIVE" and token.value in _ITEM_DIRECTIVES and token.value not in ("%json", "%text_until"):
            return self.extension(token)
        if kind == "DIRECTIVE" and token.value == "%json":
            schema, (_, end), spelling = self.lexer.raw_json(self.limits)
            return Json((token.start, end), schema, spelling)
        self.fail(token, "an item")

    def extension(self, token: _Token) -> Node:
        """The seed 000 extension after its directive ``token``."""
        name = token.value[1:].upper()
        if name in ("TEXT_TOKEN", "PARAGRAPH_TOKEN", "QUOTED_TEXT", "UNQUOTED_TEXT", "IMAGE"):
            return Extension(token.span, name)
        if name == "SUBSTRING_OF":
            text = self.lexer.next()
            if text.kind != "STRING":
                self.fail(text, 'a string literal after %substring_of (%substring_of "text")')
            literal = decode_literal(text.value, text.start, self.source)
            if literal.flags:
                raise self.source.error("%substring_of takes a plain string (no flags)", text.span)
            if not literal.value:
                raise self.source.error("empty %substring_of: it needs a non-empty text", (token.start, text.end))
            return Extension((token.start, text.end), name, argument=literal)
        call = token.value
        self.expect("LPAR", f"'(' after {call}")
        if name == "DELIMITED_SUBSEQUENCE_OF":
            self.expect("LSQB", f"'[' and the items: {call}([a, b, c], delimiter)")
            items = [self.expansions(top=False)]
            while self.lexer.peek().kind == "COMMA":
                self.lexer.next()
                items.append(self.expansions(top=False))
            self.expect("RSQB", "',' or ']' after an item")
        else:
            items = [self.expansions(top=False)]
        self.expect("COMMA", f"',' and the delimiter: {call}(item, delimiter[, min[, max]])"
                    if name == "DELIMITED_LIST" else f"',' and the delimiter: {call}([a, b, c], delimiter)")
        delimiter = self.expansions(top=False)
        low, high = 1, UNBOUNDED
        if name == "DELIMITED_LIST" and self.lexer.peek().kind == "COMMA":
            self.lexer.next()
            low_token = self.expect("NUMBER", "the minimum count")
            low = self.count(low_token)
            if self.lexer.peek().kind == "COMMA":
                self.lexer.next()
                high_token = self.expect("NUMBER", "the maximum count")
                high = self.count(high_token)
                if high < low:
                    raise self.source.error(f"bad counts of {call}: min {low} > max {high}",
                                            (low_token.start, high_token.end))
        close = self.expect("RPAR", f"')' closing {call}")
        return Extension((token.start, close.end), name, items=tuple(items), delimiter=delimiter, low=low, high=high)

    def range(self, low: _Token) -> Range:
        self.lexer.next()  # ..
        high = self.expect("STRING", "a string after '..'")
        span = (low.start, high.end)
        for token in (low, high):
            if token.value.endswith("i"):
                raise self.source.error("a range end cannot have the i flag", token.span)
            content = token.value[1:-1]
            if escaping_length(content, token.start + 1, self.source, token.span) != 1:
                raise self.source.error(f"a range end must be one character, got {token.value}",
                                        token.span)
        return Range(span, self.source.text[span[0]:span[1]], low.value[1:-1], high.value[1:-1])

    def special(self, token: _Token) -> Special:
        raw = token.value
        if not raw.startswith("<["):
            return Special(token.span, raw, raw, ())
        ids: list[int] = []
        for part in raw[2:-2].split(","):
            m = _SPECIAL_IDS.fullmatch(part)
            if m is None:
                raise self.source.error(f"bad special token id list {raw} (expected <[id]>, "
                                        "<[id, id]> or <[lo-hi]>)", token.span)
            low = int(m.group(1))
            high = int(m.group(2)) if m.group(2) else low
            if high < low:
                raise self.source.error(f"bad id range {low}-{high} in {raw}", token.span)
            if high - low > 1_000_000:
                raise self.source.error(f"id range {low}-{high} in {raw} is too large", token.span)
            ids.extend(range(low, high + 1))
        return Special(token.span, raw, None, tuple(sorted(set(ids))))


def parse_statements(text: str, limits: Limits) -> tuple[Source, list[Statement]]:
    """Parse Lark grammar text into statements (names unresolved)."""
    if len(text) > limits.max_pattern_length:
        raise LimitExceeded("max_pattern_length", len(text), limits.max_pattern_length)
    source = Source(text)
    return source, _Parser(source, limits).statements()
