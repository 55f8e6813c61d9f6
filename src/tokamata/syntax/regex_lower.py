"""Character-level regex AST -> byte-level :class:`~tokamata.automata.derivatives.Expr`, or,
when the pattern holds a wildcard that matches whole tokens, -> a grammar.

Invariants:
- The byte expression matches exactly the UTF-8 encodings of the strings the AST matches
  (strings with surrogates have no UTF-8 encoding and are dropped); seed 000's text
  extensions (:mod:`.extensions`) lower to expressions of their own.
- A pattern with a token wildcard (TEXT_TOKEN, PARAGRAPH_TOKEN, IMAGE) is no single byte
  language: :func:`regex_grammar` lowers it to a character-level grammar whose wildcard-free
  stretches are terminals (each as large as the pattern allows) and whose wildcards are
  token-set terminals, so it takes the Earley strategy. Every other pattern stays the
  one-terminal grammar of the regular strategy.
"""

from __future__ import annotations

from ..automata import boolean
from ..automata import derivatives as d
from ..errors import InvalidSyntax, Unsupported
from ..grammar.builder import GrammarBuilder
from ..grammar.ir import Grammar, lexeme_grammar
from ..limits import Limits
from . import extensions as ext
from . import regex as ast

__all__ = ["lower", "regex_grammar", "text_wildcard"]


def text_wildcard(name: str, limits: Limits | None = None) -> d.Expr:
    """QUOTED_TEXT or UNQUOTED_TEXT (:mod:`.extensions`) as a byte expression.

    >>> from tokamata.syntax.extensions import matches
    >>> [matches(text_wildcard("QUOTED_TEXT"), s) for s in (b'"a\\\\"b"', b'"a"b"', b'""')]
    [True, False, True]
    >>> e = text_wildcard("UNQUOTED_TEXT")
    >>> [matches(e, s) for s in (b"hello world", b"a: b", b"-x", b"- x", b"x #c", b"x#c", b"x ")]
    [True, False, True, False, False, True, False]
    """
    limits = limits or Limits()
    if name == "QUOTED_TEXT":
        return lower(ast.parse_regex(ext.QUOTED_TEXT_PATTERN, limits))
    found = lower(ast.parse_regex(ext.UNQUOTED_TEXT_PATTERN, limits))
    for forbidden in ext.UNQUOTED_TEXT_FORBIDDEN:
        found = boolean.difference(found, lower(ast.parse_regex(forbidden, limits)), limits)
    return found


def lower(node: ast.Node) -> d.Expr:
    """Lower a parsed regex without token wildcards to an interned byte expression."""
    if isinstance(node, ast.Chars):
        return d.utf8_char(node.charset)
    if isinstance(node, ast.Concat):
        return d.concat_all(lower(item) for item in node.items)
    if isinstance(node, ast.Alternation):
        return d.alternation(*(lower(option) for option in node.options))
    if isinstance(node, ast.Repeat):
        high = d.UNBOUNDED if node.high == ast.UNBOUNDED else node.high
        return d.repeat(lower(node.item), node.low, high)
    if isinstance(node, ast.Extension):
        return _extension(node)
    raise TypeError(f"not a regex AST node: {node!r}")  # pragma: no cover


def _extension(node: ast.Extension) -> d.Expr:
    name = node.name
    if name in ext.TOKEN_WILDCARDS:
        raise Unsupported(f"{name} where a byte language is needed", "a token wildcard matches whole tokens: "
                          "use it in a regex compiled alone or in a grammar rule", span=node.span)
    if name in ("QUOTED_TEXT", "UNQUOTED_TEXT"):
        return text_wildcard(name)
    if name in ("TEXT_UNTIL", "SUBSTRING_OF"):
        try:
            text = node.argument.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidSyntax(f"{name} text with a lone surrogate has no UTF-8 spelling", span=node.span) from None
        if name == "TEXT_UNTIL":
            return d.text_until(text)
        return d.alternation(ext.substring_of(node.argument), d.EPSILON)  # the empty substring too: `s in text`
    assert node.delimiter is not None
    delimiter = lower(node.delimiter)
    if name == "DELIMITED_LIST":
        high = d.UNBOUNDED if node.high == ast.UNBOUNDED else node.high
        return ext.delimited_list(lower(node.items[0]), delimiter, node.low, high)
    return ext.delimited_subsequence([lower(item) for item in node.items], delimiter)


def regex_grammar(tree: ast.Node, pattern: str, vocab, limits: Limits) -> Grammar:
    """The grammar of a parsed pattern: the one-terminal grammar of its byte expression, or,
    with token wildcards, a character-level grammar over terminals and token-set terminals.
    Raises :class:`InvalidSyntax` for an empty language, :class:`Unsupported` for IMAGE over a
    vocabulary without image tokens."""
    if not ast.has_token_wildcard(tree):
        expr = lower(tree)
        if expr is d.NOTHING:
            raise InvalidSyntax("the regex matches no string (empty language)", text=pattern,
                                span=(0, len(pattern)))
        return lexeme_grammar("REGEX", expr)
    return _Lowering(pattern, vocab, limits).grammar(tree)


class _Lowering:
    def __init__(self, pattern: str, vocab, limits: Limits) -> None:
        self.pattern = pattern
        self.vocab = vocab
        self.builder = GrammarBuilder(pattern, limits, character_level=True, inlining="plain",
                                      drop_unproductive=True)

    def grammar(self, tree: ast.Node) -> Grammar:
        b = self.builder
        start = b.nonterminal("start")
        b.add_rule(start, self.symbols(tree))

        def empty() -> InvalidSyntax:
            return InvalidSyntax("the regex matches no string (empty language)", text=self.pattern,
                                 span=(0, len(self.pattern)))

        return b.build(start, empty)

    def symbols(self, node: ast.Node) -> list[int]:
        b = self.builder
        if not ast.has_token_wildcard(node):
            return self.text(lower(node))
        if isinstance(node, ast.Concat):
            out: list[int] = []
            run: list[ast.Node] = []  # wildcard-free items become one terminal
            for item in node.items:
                if ast.has_token_wildcard(item):
                    if run:
                        out.extend(self.text(lower(ast.Concat(tuple(run)))))
                        run = []
                    out.extend(self.symbols(item))
                else:
                    run.append(item)
            if run:
                out.extend(self.text(lower(ast.Concat(tuple(run)))))
            return out
        if isinstance(node, ast.Alternation):
            return [b.group([self.symbols(option) for option in node.options], "regex", None)]
        if isinstance(node, ast.Repeat):
            repeated = self.symbols(node.item)
            high = d.UNBOUNDED if node.high == ast.UNBOUNDED else node.high
            return b.repeat(repeated, node.low, high, "regex", None)
        assert isinstance(node, ast.Extension)
        if node.name in ext.TOKEN_WILDCARDS:
            return self.wildcard(node)
        assert node.delimiter is not None
        delimiter = self.symbols(node.delimiter)
        if node.name == "DELIMITED_LIST":
            high = d.UNBOUNDED if node.high == ast.UNBOUNDED else node.high
            return ext.delimited_list_symbols(b, self.symbols(node.items[0]), delimiter, node.low, high, "regex", None)
        return ext.delimited_subsequence_symbols(b, [self.symbols(item) for item in node.items], delimiter,
                                                 "regex", None)

    def text(self, expr: d.Expr) -> list[int]:
        """Symbols for a byte language (terminals never match the empty string)."""
        b = self.builder
        if expr is d.NOTHING:
            return [b.fresh("regex", "nothing")]  # unproductive: dropped with what needs it
        if not expr.nullable:
            return [b.terminal("REGEX", expr, None, numbered=True)]
        rest = boolean.difference(expr, d.EPSILON)
        if rest is d.NOTHING:
            return []
        return [b.optional([b.terminal("REGEX", rest, None, numbered=True)], "regex", None)]

    def wildcard(self, node: ast.Extension) -> list[int]:
        b = self.builder
        if node.name == "TEXT_TOKEN":
            return [b.special_terminal("TEXT_TOKEN", ext.text_token_ids(self.vocab))]
        if node.name == "PARAGRAPH_TOKEN":
            return [b.special_terminal("PARAGRAPH_TOKEN", ext.paragraph_token_ids(self.vocab))]
        image = ext.image_token_ids(self.vocab)
        if image is None:
            raise Unsupported("IMAGE", "the vocabulary has no image tokens (special tokens named "
                              f"{', '.join(t[0] for t in ext.IMAGE_TOKEN_NAMES)} ...)", text=self.pattern,
                              span=node.span)
        start, soft, end = image
        return [b.special_terminal("IMAGE_START", start), b.plus([b.special_terminal("IMAGE_TOKEN", soft)],
                                                                 "image", None),
                b.special_terminal("IMAGE_END", end)]
