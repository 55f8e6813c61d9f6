"""Lark grammar text -> :class:`~tokamata.grammar.ir.Grammar`.

The same grammar text means the same language here as in ``lark`` (Earley parser,
``lexer="dynamic_complete"``), for grammars that use only Lark's features:

- Rules ``name: alt1 | alt2`` (``?`` / ``!`` modifiers, priorities ``name.2:`` and aliases
  ``-> name`` are accepted; they shape Lark's trees, not the language), terminals
  ``NAME: ...`` (references to other terminals are expanded into the terminal's expression;
  recursion among terminals is an error), ``"string"`` / ``"string"i`` / ``/regex/flags``
  (flags ``imsux``; ``l`` is refused as in Lark), ranges ``"a".."z"``, groups, ``[optional]``,
  ``? * +``, ``item ~ n`` and ``item ~ n..m``, ``%ignore``, ``%import common.X``,
  ``%import common.X -> Y``, ``%import common (A, B)``, ``%override`` and ``%extend``.
  Literals are decoded exactly as Lark decodes them; inline literals in rules are anonymous
  terminals, and identical ones are one terminal.
- ``%import common`` names our own definitions of Lark's ``common.lark`` terminals
  (:mod:`tokamata.syntax.lark_common`).
- Refused: rule templates and ``%declare`` (:class:`Unsupported`), imports from anything but
  ``common`` (:class:`Unsupported`).

A terminal's language is the set of strings its regex matches in full (``re.fullmatch``),
as everywhere in tokamata. Lark's own lexers call ``re.match``, which prefers the leftmost
alternative and the shortest lazy repetition; for the usual patterns the two agree, but a
user regex such as ``/a|ab/`` or ``/".*?"/`` is a larger language here than the lexemes
Lark's lexer would cut. (The common terminals follow Lark's lexers exactly.)

Extensions (not Lark syntax):

- Special tokens in rules: ``<|eot_id|>`` (the text of a control token of the vocabulary, see
  :attr:`tokamata.Vocabulary.special_token_names`) and ``<[128009]>``, ``<[1, 2]>``,
  ``<[5-9]>`` (token ids, each a special token of the vocabulary). They match that token only,
  never its text.
- ``%text_until "X"``, usable wherever an item may stand (rules and terminal definitions):
  seed 000's TEXT_UNTIL. It is one lexeme: any text that does not contain ``X``, followed by
  ``X`` (which ends it the first time it appears). ``answer: "<a>" %text_until "</a>"``.
- ``%json { ...JSON Schema... }`` in a rule: the sub-grammar of a JSON Schema, embedded with
  :meth:`~tokamata.grammar.builder.GrammarBuilder.embed`. The braces are read as JSON
  (balanced, strings aware). An error of the schema keeps its class and its ``pointer`` into
  the schema, with the line, column and span of the ``%json`` in the grammar. Its JSON is in
  natural spelling (one spelling per value, as ``compile_json_schema``'s default
  ``spelling="natural"``); ``%json any {...}`` allows every RFC 8259 spelling
  (``%json natural {...}`` names the default).
- Seed 000's extensions (:mod:`tokamata.syntax.extensions`): the token wildcards
  ``%text_token`` (any one text token), ``%paragraph_token`` (one without a line break) and
  ``%image`` (the model's image tokens), usable in rules only; ``%quoted_text``,
  ``%unquoted_text`` and ``%substring_of "text"``, usable wherever an item may stand; and
  ``%delimited_list(item, delimiter)`` / ``(item, delimiter, min)`` / ``(item, delimiter,
  min, max)`` and ``%delimited_subsequence_of([a, b, c], delimiter)`` over any items (in a
  rule, items and delimiter may be rules; in a terminal, they must be text).
- Counted repetition ``item{m}``, ``item{m,}``, ``item{m,n}`` (as ``item ~ m..n``).

Invariants:
- Every error about the text is :class:`InvalidSyntax` / :class:`Unsupported` /
  :class:`SchemaError` with ``text`` (the grammar), ``span`` (character offsets), ``line`` and
  ``column``, or
  :class:`LimitExceeded`: text length (``max_pattern_length``), bracket and terminal-reference
  nesting (``max_nesting_depth``), a terminal's size with its references written out
  (``max_regex_nodes``, checked before it is built), grammar size (``max_grammar_symbols``),
  compile time (``max_compile_seconds``).
- Every rule is lowered, used or not, so an undefined name anywhere is reported; every
  terminal definition is evaluated, so a bad regex anywhere is reported; terminals that match
  the empty string are refused when a rule or ``%ignore`` uses them (fragments used only inside
  other terminals may be nullable, as in Lark).
- The result has passed :func:`~tokamata.grammar.ir.check_grammar`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..automata import charset as cs
from ..automata import derivatives as d
from ..deadline import check_deadline, compile_deadline
from .regex_lower import lower, text_wildcard
from ..errors import SchemaError, InvalidArgument, InvalidSyntax, LimitExceeded, Unsupported
from ..grammar.builder import GrammarBuilder
from ..grammar.ir import Grammar
from ..limits import Limits
from .lark_common import COMMON_TERMINALS, common_terminal
from . import extensions as ext
from .lark_ast import (UNBOUNDED, Alt, Definition, Extension, Ignore, Import, Json, Literal, Node, Range, Ref, Repeat,
                       Seq, Source, Span, Special, TextUntil)
from .lark_syntax import parse_statements
from .regex import parse_regex

if TYPE_CHECKING:
    from ..vocab import Vocabulary

__all__ = ["parse_lark"]


def parse_lark(text: str, vocab: Vocabulary | None, limits: Limits, *, start: str = "start",
               registry=None, report: list | None = None) -> Grammar:
    """Compile Lark grammar ``text`` to the grammar IR, starting at rule ``start``.

    ``vocab`` (a :class:`tokamata.Vocabulary`, or ``None`` for grammars without special
    tokens) resolves ``<|name|>`` and ``<[id]>``. ``registry`` (absolute URI -> schema
    document) serves ``$ref``s of ``%json`` schemas into other documents, as for
    :func:`tokamata.compile_json_schema`. ``report`` (a list), when given, receives the
    approximations of the ``%json`` schemas (their JSON Schema report, each detail naming the
    ``%json``'s line and column).

    >>> from tokamata.limits import Limits
    >>> g = parse_lark('start: "a" NUMBER+\\n%import common.NUMBER\\n%ignore " "', None, Limits())
    >>> [t.name for t in g.terminals], g.nonterminals
    (['"a"', 'NUMBER', '" "'], ('start', '__start_plus_0'))
    """
    if not isinstance(text, str):
        raise InvalidSyntax(f"a grammar must be a str, got {type(text).__name__}")
    try:
        with compile_deadline(limits):
            source, statements = parse_statements(text, limits)
            return _Lowering(source, vocab, limits, registry, report).run(statements, start)
    except RecursionError:  # (nesting is checked; a max_nesting_depth raised past Python's limit)
        raise LimitExceeded("max_nesting_depth", "more than Python's recursion limit",
                            limits.max_nesting_depth) from None


@dataclass
class _TerminalDef:
    span: Span
    body: Node | None  # None: imported from common
    common: str = ""


class _Lowering:
    def __init__(self, source: Source, vocab: Vocabulary | None, limits: Limits, registry=None,
                 report: list | None = None) -> None:
        self.source = source
        self.report = report if report is not None else []
        self.vocab = vocab
        self.limits = limits
        self.registry = registry
        # Lark has a lexer (%ignore, longest match): its rules must stay rules, so the grammar is
        # not character-level and the builder merges no rule into a terminal
        self.builder = GrammarBuilder(source.text, limits, character_level=False)
        self.rules: dict[str, Definition] = {}
        self.terminals: dict[str, _TerminalDef] = {}
        self.exprs: dict[str, d.Expr] = {}
        self.sizes: dict[str, int] = {}  # terminal -> nodes of its body, references written out
        self.ignore_case_chars: dict[str, d.Expr] = {}  # character -> its expression under the i flag
        self.literals: dict[str, d.Expr] = {}  # a literal's source text -> its expression
        self.in_progress: set[str] = set()
        self.depth = 0

    # -- definitions -------------------------------------------------------------------

    def run(self, statements: list, start: str) -> Grammar:
        ignores: list[Ignore] = []
        changes: list[Definition] = []
        for statement in statements:
            if isinstance(statement, Definition):
                if statement.mode == "define":
                    self.define(statement)
                else:
                    changes.append(statement)
            elif isinstance(statement, Import):
                self.import_names(statement)
            else:
                ignores.append(statement)
        for change in changes:
            self.change(change)

        b = self.builder
        for name in self.rules:  # nonterminal indices follow the order of definition
            b.nonterminal(name)
        for name in self.terminals:
            check_deadline()
            if self.terminals[name].body is not None:
                self.terminal_expr(name, self.terminals[name].span)
        for name, rule in self.rules.items():
            check_deadline()
            lhs = b.nonterminal(name)
            options = rule.body.options if isinstance(rule.body, Alt) else (rule.body,)
            for option in options:
                b.add_rule(lhs, self.symbols(option, name), self.origin(option.span if _width(option) else rule.span))
        for statement in ignores:
            self.ignore(statement)
        if start not in self.rules:
            if not re.fullmatch(r"_?[a-z][_a-z0-9]*", start):
                raise InvalidArgument(f"the start symbol must be a rule name (lowercase), got {start!r}")
            raise self.source.error(f"the start rule {start!r} is not defined", (0, min(1, len(self.source.text))))
        return b.build(b.nonterminal(start))

    def define(self, statement: Definition) -> None:
        table: Mapping[str, object] = self.rules if statement.is_rule else self.terminals
        if statement.name in table:
            kind = "rule" if statement.is_rule else "terminal"
            first = self.rules[statement.name].span if statement.is_rule else self.terminals[statement.name].span
            raise self.source.error(f"{kind} {statement.name!r} is defined more than once (first at "
                                    f"{self.source.where(first)}); use %override to replace it", statement.span)
        if statement.is_rule:
            self.rules[statement.name] = statement
        else:
            self.terminals[statement.name] = _TerminalDef(statement.span, statement.body)

    def import_names(self, statement: Import) -> None:
        for name, local, span in statement.names:
            if name not in COMMON_TERMINALS:
                raise self.source.error(f"lark's common.lark has no terminal {name!r} (it has "
                                        f"{', '.join(sorted(COMMON_TERMINALS))})", span)
            if Ref(span, local).is_rule:
                raise self.source.error(f"terminal {name} must be imported under a terminal "
                                        f"(uppercase) name, not {local!r}", span)
            existing = self.terminals.get(local)
            if existing is not None:
                if existing.body is None and existing.common == name:
                    continue  # the same import twice
                raise self.source.error(f"terminal {local!r} is defined more than once (first at "
                                        f"{self.source.where(existing.span)})", span)
            self.terminals[local] = _TerminalDef(span, None, name)

    def change(self, statement: Definition) -> None:
        verb = "%" + statement.mode
        if statement.is_rule:
            old = self.rules.get(statement.name)
            if old is None:
                raise self.source.error(f"{verb} of rule {statement.name!r}, which is not defined", statement.span)
            body = statement.body if statement.mode == "override" else _extend(old.body, statement.body)
            self.rules[statement.name] = Definition(statement.span, statement.name, True, body, "define")
            return
        existing = self.terminals.get(statement.name)
        if existing is None:
            raise self.source.error(f"{verb} of terminal {statement.name!r}, which is not defined", statement.span)
        if statement.mode == "override":
            self.terminals[statement.name] = _TerminalDef(statement.span, statement.body)
        elif existing.body is None:
            raise self.source.unsupported(f"%extend of the imported terminal {statement.name!r}", "",
                                          statement.span)
        else:
            existing.body = _extend(existing.body, statement.body)

    # -- rules -------------------------------------------------------------------------

    def symbols(self, node: Node, hint: str) -> list[int]:
        """Symbols deriving ``node`` in rule context (EBNF expanded through the builder)."""
        self.enter()
        try:
            return self._symbols(node, hint)
        finally:
            self.depth -= 1

    def _symbols(self, node: Node, hint: str) -> list[int]:
        b = self.builder
        if isinstance(node, Seq):
            return [s for item in node.items for s in self.symbols(item, hint)]
        if isinstance(node, Ref):
            if node.is_rule:
                if node.name not in self.rules:
                    raise self.source.error(f"undefined rule {node.name!r}", node.span)
                return [b.nonterminal(node.name)]
            expr = self.terminal_expr(node.name, node.span)
            return [b.terminal(node.name, expr, self.origin(self.terminals[node.name].span))]
        origin = self.origin(node.span)
        if isinstance(node, Literal):
            return [b.terminal(self.name(node), self.expr(node), origin)]
        if isinstance(node, Alt):
            return [b.group([self.symbols(option, hint) for option in node.options], hint, origin)]
        if isinstance(node, Repeat):
            item = self.symbols(node.item, hint)
            if not item:
                return []
            if (node.low, node.high) == (0, 1):
                return [b.optional(item, hint, origin)]
            if (node.low, node.high) == (0, UNBOUNDED):
                return [b.star(item, hint, origin)]
            if (node.low, node.high) == (1, UNBOUNDED):
                return [b.plus(item, hint, origin)]
            return b.repeat(item, node.low, d.UNBOUNDED if node.high == UNBOUNDED else node.high, hint, origin)
        if isinstance(node, Special):
            return [b.special_terminal(node.raw, self.special_ids(node), origin)]
        if isinstance(node, Json):
            return [_embed_json_schema(node.schema, b, node.span, self.registry, node.spelling, self.report)]
        if isinstance(node, Extension) and node.name in ext.TOKEN_WILDCARDS:
            return self.wildcard(node, origin)
        if isinstance(node, Extension) and node.delimiter is not None:
            delimiter = self.symbols(node.delimiter, hint)
            items = [self.symbols(item, hint) for item in node.items]
            if node.name == "DELIMITED_LIST":
                high = d.UNBOUNDED if node.high == UNBOUNDED else node.high
                return ext.delimited_list_symbols(b, items[0], delimiter, node.low, high, hint, origin)
            return ext.delimited_subsequence_symbols(b, items, delimiter, hint, origin)
        return [b.terminal(self.name(node), self.expr(node), origin)]

    def wildcard(self, node: Extension, origin: tuple[int, int]) -> list[int]:
        """A token wildcard: token-set terminals over the vocabulary's ids."""
        b, vocab = self.builder, self.vocab
        raw = self.source.text[node.span[0]:node.span[1]]
        if vocab is None:
            raise self.source.error(f"{raw} needs a vocabulary", node.span)
        if node.name == "TEXT_TOKEN":
            return [b.special_terminal("TEXT_TOKEN", ext.text_token_ids(vocab), origin)]
        if node.name == "PARAGRAPH_TOKEN":
            return [b.special_terminal("PARAGRAPH_TOKEN", ext.paragraph_token_ids(vocab), origin)]
        image = ext.image_token_ids(vocab)
        if image is None:
            raise self.source.unsupported("%image", "the vocabulary has no image tokens (special tokens named "
                                          f"{', '.join(t[0] for t in ext.IMAGE_TOKEN_NAMES)} ...)", node.span)
        start, soft, end = image
        return [b.special_terminal("IMAGE_START", start, origin),
                b.plus([b.special_terminal("IMAGE_TOKEN", soft, origin)], "image", origin),
                b.special_terminal("IMAGE_END", end, origin)]

    def ignore(self, statement: Ignore) -> None:
        body = statement.body
        if isinstance(body, Seq) and not body.items:
            raise self.source.error("%ignore needs a terminal", statement.span)
        if isinstance(body, Ref) and not body.is_rule:
            name, origin = body.name, self.terminals.get(body.name)
            expr = self.terminal_expr(body.name, body.span)
            where = self.origin(origin.span if origin else body.span)
        else:
            name, expr, where = self.name(body), self.expr(body), self.origin(body.span)
        self.builder.ignore_terminal(name, expr, where)

    def special_ids(self, node: Special) -> tuple[int, ...]:
        vocab = self.vocab
        if vocab is None:
            raise self.source.error(f"special token {node.raw} needs a vocabulary", node.span)
        if node.name is not None:
            ids = vocab.special_token_names.get(node.name)
            if not ids:
                raise self.source.error(f"unknown special token {node.raw}: the vocabulary has no "
                                        "control token with that text (use <[id]> for one by id)", node.span)
            return tuple(ids)
        special = set(vocab.special_token_ids)
        for i in node.ids:
            if i not in special:
                raise self.source.error(f"token id {i} is not a special token of the vocabulary", node.span)
        return node.ids

    # -- terminals ---------------------------------------------------------------------

    def terminal_expr(self, name: str, span: Span) -> d.Expr:
        """The expression of terminal ``name`` (references expanded), ``span`` the reference."""
        found = self.exprs.get(name)
        if found is not None:
            return found
        definition = self.terminals.get(name)
        if definition is None:
            raise self.source.error(f"undefined terminal {name!r}", span)
        if definition.body is None:
            expr = common_terminal(definition.common, self.limits)
        else:
            if name in self.in_progress:
                raise self.source.error(f"recursion in terminal {name!r} (terminals cannot be "
                                        "recursive; use a rule)", span)
            self.in_progress.add(name)
            try:
                size = self._written_size(definition.body)
                if size > self.limits.max_regex_nodes:  # (before building it: references nest)
                    error = LimitExceeded("max_regex_nodes", size, self.limits.max_regex_nodes)
                    error.line, error.column = self.origin(definition.span)
                    raise error
                self.sizes[name] = size
                expr = self.expr(definition.body)
            finally:
                self.in_progress.discard(name)
        self.exprs[name] = expr
        return expr

    def _written_size(self, node: Node) -> int:
        """Nodes of a terminal body with its terminal references written out (a terminal
        used twice by the next, and so on, doubles at every level); a literal is one node
        (the text itself is bounded by ``max_pattern_length``)."""
        if isinstance(node, (Seq, Alt)):
            return 1 + sum(self._written_size(item) for item in (node.items if isinstance(node, Seq) else node.options))
        if isinstance(node, Repeat):
            return 1 + self._written_size(node.item)
        if isinstance(node, Ref) and not node.is_rule:
            self.enter()
            try:
                self.terminal_expr(node.name, node.span)
            finally:
                self.depth -= 1
            return self.sizes.get(node.name, 1)
        return 1

    def expr(self, node: Node) -> d.Expr:
        """The byte expression of ``node`` in terminal context."""
        self.enter()
        try:
            return self._expr(node)
        finally:
            self.depth -= 1

    def _expr(self, node: Node) -> d.Expr:
        if isinstance(node, Seq):
            return d.concat_all([self.expr(item) for item in node.items])
        if isinstance(node, Alt):
            return d.alternation(*(self.expr(option) for option in node.options))
        if isinstance(node, Repeat):
            return d.repeat(self.expr(node.item), node.low, d.UNBOUNDED if node.high == UNBOUNDED else node.high)
        if isinstance(node, Ref):
            if node.is_rule:
                raise self.source.error(f"rules are not allowed inside terminals (rule {node.name!r})", node.span)
            return self.terminal_expr(node.name, node.span)
        if isinstance(node, Literal):
            return self.literal_expr(node)
        if isinstance(node, Range):
            return self.regex_expr(f"[{node.low}-{node.high}]", node.span, None, 0)
        if isinstance(node, TextUntil):
            return d.text_until(self.encode(node.stop.value, node.stop.span))
        if isinstance(node, Extension):
            return self.extension_expr(node)
        if isinstance(node, Special):
            raise self.source.unsupported(f"special token {node.raw} inside a terminal or %ignore",
                                          "use it in a rule", node.span)
        raise self.source.unsupported("%json inside a terminal or %ignore", "use it in a rule", node.span)

    def extension_expr(self, node: Extension) -> d.Expr:
        """A text extension (or sugar) in terminal context."""
        if node.name in ext.TOKEN_WILDCARDS:
            raw = self.source.text[node.span[0]:node.span[1]]
            raise self.source.unsupported(f"{raw} inside a terminal or %ignore", "it matches whole tokens: "
                                          "use it in a rule", node.span)
        if node.name in ("QUOTED_TEXT", "UNQUOTED_TEXT"):
            return text_wildcard(node.name, self.limits)
        if node.name == "SUBSTRING_OF":
            assert node.argument is not None
            self.encode(node.argument.value, node.argument.span)  # (refuses a lone surrogate)
            return ext.substring_of(node.argument.value)
        assert node.delimiter is not None
        delimiter = self.expr(node.delimiter)
        items = [self.expr(item) for item in node.items]
        if node.name == "DELIMITED_LIST":
            high = d.UNBOUNDED if node.high == UNBOUNDED else node.high
            return ext.delimited_list(items[0], delimiter, node.low, high)
        return ext.delimited_subsequence(items, delimiter)

    def literal_expr(self, literal: Literal) -> d.Expr:
        """The expression of a string or regex literal, memoized by its source text (quotes and
        flags included, which decode one way only): a grammar writes its keywords and
        punctuation many times."""
        found = self.literals.get(literal.raw)
        if found is None:
            found = self.literals[literal.raw] = self._literal_expr(literal)
        return found

    def _literal_expr(self, literal: Literal) -> d.Expr:
        if not literal.is_regex:
            if not literal.flags:
                return d.concat_all(d.byte_set(1 << b) for b in self.encode(literal.value, literal.span))
            self.encode(literal.value, literal.span)
            # what the regex (?i:<escaped value>) lowers to, without writing and parsing it: one
            # character each, the set re matches for the escaped character under IGNORECASE
            return d.concat_all(self.ignore_case_char(c) for c in literal.value)
        prefix = "".join(f"(?{flag}:" for flag in literal.flags)
        pattern = prefix + literal.value + ")" * len(literal.flags)
        return self.regex_expr(pattern, literal.span, literal, len(prefix))

    def ignore_case_char(self, c: str) -> d.Expr:
        """One character of a case-insensitive string literal (memoized: keywords share letters)."""
        found = self.ignore_case_chars.get(c)
        if found is None:
            found = d.utf8_char(cs.ignore_case(((ord(c), ord(c)),), re.escape(c), 0))
            self.ignore_case_chars[c] = found
        return found

    def regex_expr(self, pattern: str, span: Span, literal: Literal | None, prefix: int) -> d.Expr:
        try:
            return lower(parse_regex(pattern, self.limits))
        except (InvalidSyntax, Unsupported) as error:
            where = span
            if literal is not None and error.span is not None:
                last = len(literal.offsets) - 1
                lo = min(max(error.span[0] - prefix, 0), last)
                hi = min(max(error.span[1] - prefix - 1, lo), last)
                where = (literal.offsets[lo], literal.offsets[hi] + 1)
            what = self.source.text[span[0]:span[1]]
            if isinstance(error, Unsupported):
                raise self.source.unsupported(error.keyword, f"in {what}", where) from None
            raise self.source.error(f"{error.message} in {what}", where) from None

    def encode(self, value: str, span: Span) -> bytes:
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:
            raise self.source.error("a literal with a lone surrogate has no UTF-8 spelling", span) from None

    # -- helpers -----------------------------------------------------------------------

    def enter(self) -> None:
        self.depth += 1
        if self.depth > self.limits.max_nesting_depth:
            raise LimitExceeded("max_nesting_depth", self.depth, self.limits.max_nesting_depth)

    def origin(self, span: Span) -> tuple[int, int]:
        return self.source.origin(span[0])

    def name(self, node: Node) -> str:
        """A terminal name for an anonymous item: its source text."""
        return self.source.text[node.span[0]:node.span[1]]


def _width(node: Node) -> int:
    return node.span[1] - node.span[0]


def _extend(old: Node, new: Node) -> Node:
    options = (old.options if isinstance(old, Alt) else (old,)) + (new.options if isinstance(new, Alt) else (new,))
    return Alt(old.span, options)


def _embed_json_schema(schema: object, builder: GrammarBuilder, span: Span, registry=None,
                       spelling: str = "natural", report: list | None = None) -> int:
    """The symbol deriving the JSON texts ``schema`` accepts (compact JSON, schema property
    order, as ``tokamata.compile_json_schema`` with default options, in ``spelling``), embedded into
    ``builder``. Errors from the schema keep their class, message, keyword and JSON pointer;
    their text, span, line and column become those of the ``%json`` in the grammar. The schema's
    approximations go to ``report``, each detail naming where the ``%json`` is."""
    from .json_schema import schema_to_grammar

    source = Source(builder.source)
    line, column = source.origin(span[0])
    try:
        sub, approximations = schema_to_grammar(schema, builder.limits, spelling=spelling, registry=registry)
    except SchemaError as error:
        raise SchemaError(error.message, pointer=error.pointer, text=builder.source, span=span, line=line,
                          column=column) from None
    except Unsupported as error:
        raise Unsupported(error.keyword, error.reason, pointer=error.pointer, text=builder.source, span=span,
                          line=line, column=column) from None
    if report is not None:
        report.extend(replace(a, detail=f"{a.detail} (the %json at line {line}, column {column})")
                      for a in approximations)
    return builder.embed(sub, f"__json{span[0]}_", (line, column), span)
