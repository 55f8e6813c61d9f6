"""Character-level regex AST -> byte-level :class:`~tokamata.automata.derivatives.Expr`.

Invariant: the byte expression matches exactly the UTF-8 encodings of the strings the AST
matches (strings with surrogates have no UTF-8 encoding and are dropped).
"""

from __future__ import annotations

from ..automata import derivatives as d
from . import regex as ast


def lower(node: ast.Node) -> d.Expr:
    """Lower a parsed regex to an interned byte expression."""
    if isinstance(node, ast.Chars):
        return d.utf8_char(node.charset)
    if isinstance(node, ast.Concat):
        return d.concat_all(lower(item) for item in node.items)
    if isinstance(node, ast.Alternation):
        return d.alternation(*(lower(option) for option in node.options))
    if isinstance(node, ast.Repeat):
        high = d.UNBOUNDED if node.high == ast.UNBOUNDED else node.high
        return d.repeat(lower(node.item), node.low, high)
    raise TypeError(f"not a regex AST node: {node!r}")  # pragma: no cover
