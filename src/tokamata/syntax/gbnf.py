"""llama.cpp GBNF grammars -> the grammar IR (:mod:`tokamata.grammar.ir`).

GBNF is a character-level context-free grammar: rules ``name ::= ...`` over string literals,
character classes, ``.``, rule references, groups, ``|``, ``* + ?``, ``{m}``, ``{m,}``,
``{m,n}``, ``#`` comments, and llama.cpp's token elements ``<[id]>`` and ``<text>``.

Invariants:
- The surface syntax is llama.cpp's parser (:mod:`.gbnf_syntax` says how it is read):
  escapes ``\\xHH \\uHHHH \\UHHHHHHHH`` are code points, not bytes (``"\\xe9"`` is ``é``);
  ``[a-]`` ends with a literal ``-``; postfix operators stack (``x{2}*`` is ``(x{2})*``); a
  repeated literal repeats as a whole; a later definition of a rule replaces an earlier one.
- The language is exactly llama.cpp's, character for character, spelled in UTF-8, except
  where llama.cpp's language is an accident, and there we refuse rather than guess: an empty
  class ``[]`` (llama.cpp: the empty string), a reversed range ``[z-a]``, ``{m,n}`` with
  ``n < m``, surrogate code points in literals. llama.cpp turns ``{m,n}`` with ``n > 2000``
  into ``{m,}``; we keep the bound as written. Left recursion, which llama.cpp rejects, is
  accepted (the engine is Earley).
- Mapping: GBNF has no lexer, so the rules go to the builder as EBNF definitions of a
  character-level grammar, and the builder's regular-rule pass
  (:mod:`tokamata.grammar.regular_rules`, mode ``"shared"``) makes the terminals: recursion and
  tokens need BNF; a non-recursive regular rule used once is inlined into its user, one used
  several times is one shared terminal, and runs of regular items are one terminal. A
  terminal never matches the empty string: a piece that can be empty is used as
  ``piece_nonempty | ε``.
- ``<[id]>`` and ``<text>`` are special-token terminals (one token id each); ``<text>`` is
  resolved through ``vocab.special_token_names`` first, then by the token's exact bytes, and
  must name exactly one id. Negated tokens ``!<...>`` (any one token but that one) raise
  :class:`Unsupported`.
- Errors: :class:`InvalidSyntax` with ``line``, ``column`` (1-based, columns in characters)
  and ``span``; undefined rules are named; a missing start rule is an error. Text length is
  bounded by ``limits.max_pattern_length``, nesting of groups and operators by
  ``max_nesting_depth``, counted repetitions and the grammar's size by the builder's symbol
  budget (``max_grammar_symbols``).
  The result has passed :func:`~tokamata.grammar.ir.check_grammar`.
"""

from __future__ import annotations

from typing import Any

from ..deadline import compile_deadline
from ..errors import InvalidSyntax, LimitExceeded
from ..grammar.builder import GrammarBuilder
from ..grammar.ir import Grammar
from ..limits import Limits
from .gbnf_syntax import Parser

__all__ = ["parse_gbnf"]


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
    """:func:`parse_gbnf` with a choice of mapping (the builder's regular-rule pass,
    :mod:`tokamata.grammar.regular_rules`); the tests check that the three give the same
    language."""
    if not isinstance(text, str):
        raise InvalidSyntax(f"a GBNF grammar must be a str, got {type(text).__name__}")
    if len(text) > limits.max_pattern_length:
        raise LimitExceeded("max_pattern_length", len(text), limits.max_pattern_length)
    try:
        with compile_deadline(limits):
            return _lower(text, vocab, limits, start, mode)
    except RecursionError:
        raise LimitExceeded("max_nesting_depth", "more than Python's recursion limit",
                            limits.max_nesting_depth) from None


def _lower(text: str, vocab: Any, limits: Limits, start: str, mode: str) -> Grammar:
    parser = Parser(text, vocab, limits)
    parser.parse()
    parser.check_references(start)
    builder = GrammarBuilder(text, limits, character_level=True, inlining=mode)
    for definition in parser.rules.values():
        builder.define(definition)
    return builder.build(start)
