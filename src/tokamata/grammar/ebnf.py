"""EBNF rule bodies as trees: what a character-level front end (GBNF) hands to
:meth:`~tokamata.grammar.builder.GrammarBuilder.define`, for the builder's regular-rule pass
(:mod:`.regular_rules`) to lower into terminals and BNF rules.

Invariants:
- Nodes are immutable and compared by identity (memo tables key on nodes); each carries the
  offsets of its text in the grammar's source (``start``, ``end``, for origins and terminal
  names) and ``depth``, the groups and postfix operators inside it.
- Leaves are characters: a :class:`Literal` is a string of code points without surrogates, a
  :class:`Chars` one code point from a non-empty set without surrogates, both spelled in
  UTF-8; a :class:`Token` is one special token (its vocabulary ids). A :class:`Ref` names a
  rule of the same grammar.
- :class:`Repeat` counts are ``0 <= low <= high`` with ``high`` possibly :data:`UNBOUNDED`.

What it does not do: parse text (the front end's syntax module does) or check references.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from ..automata import charset as cs
from ..automata import derivatives as d

__all__ = ["At", "Literal", "Chars", "Ref", "Token", "Seq", "Alt", "Repeat", "Node", "RuleDef", "LEAVES",
           "UNBOUNDED", "options_of", "walk"]

UNBOUNDED = d.UNBOUNDED


@dataclass(frozen=True, eq=False)  # compared by identity: memo tables key on nodes
class At:
    start: int  # offsets of the node's text
    end: int
    depth: int  # groups and postfix operators inside


@dataclass(frozen=True, eq=False)
class Literal(At):
    text: str


@dataclass(frozen=True, eq=False)
class Chars(At):
    """One character from ``charset`` (a class or ``.``); never empty, surrogates removed."""
    charset: cs.CharSet


@dataclass(frozen=True, eq=False)
class Ref(At):
    name: str


@dataclass(frozen=True, eq=False)
class Token(At):
    ids: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class Seq(At):
    items: tuple["Node", ...]


@dataclass(frozen=True, eq=False)
class Alt(At):
    options: tuple["Node", ...]


@dataclass(frozen=True, eq=False)
class Repeat(At):
    item: "Node"
    low: int
    high: int  # UNBOUNDED: no bound


Node = Union[Literal, Chars, Ref, Token, Seq, Alt, Repeat]
LEAVES = (Literal, Chars)


@dataclass(frozen=True)
class RuleDef:
    """``name ::= body``; ``start`` is the offset of the definition."""
    name: str
    body: Node
    start: int


def options_of(node: Node) -> tuple[Node, ...]:
    return node.options if isinstance(node, Alt) else (node,)


def walk(node: Node) -> list[Node]:
    """``node`` and every node under it."""
    out = []
    stack = [node]
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, Seq):
            stack.extend(node.items)
        elif isinstance(node, Alt):
            stack.extend(node.options)
        elif isinstance(node, Repeat):
            stack.append(node.item)
    return out
