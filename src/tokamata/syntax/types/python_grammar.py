"""The type tree -> grammar IR of its values written as Python source (``syntax="python"``).

The language (``whitespace="compact"``: ``", "`` after every comma, ``": "`` after every
dict key, no other whitespace; what :func:`.python_text.dump_python` writes):

- a class is a constructor call with keyword arguments in field order, ``Point(x=1, y=2)``,
  named by its qualified name; a field with a default (a pydantic field that is not
  required, a ``NotRequired`` key) may be left out anywhere, the others must be written.
  Pydantic fields are written under their alias (what the constructor takes).
- ``int``: ``-?(0|[1-9][0-9]*)``; ``float``: a JSON number (an int literal too); under
  bounds, plain decimal notation only (as the JSON Schema front end); ``bool``/``None``:
  ``True``, ``False``, ``None``; ``str``: a ``'``- or ``"``-quoted literal with the escapes of
  :func:`.scalars.python_char`.
- ``Decimal('1.5')``, ``UUID('...')``, ``datetime.fromisoformat('...')``,
  ``date.fromisoformat('...')``, ``time.fromisoformat('...')`` (valid Python once those
  names are imported; the strings are the ISO texts of :data:`.scalars.ISO_PATTERNS`).
- an enum member is ``Color.RED``; a ``Literal`` value its Python literal.
- ``[a, b]``; tuples ``()``, ``(a,)``, ``(a, b)``; ``{'k': v}``; sets ``{a, b}`` or
  ``set()``, ``frozenset({a, b})`` or ``frozenset()``.

Invariants:
- Bounds are exact where they are regular, with the JSON Schema front end's machinery:
  number ranges and ``multiple_of`` (:mod:`..json_schema.numbers`), string lengths in code
  points and ``pattern`` (:func:`..json_schema.strings.pattern_content` spelled with Python
  escapes), collection lengths as counted repeats. Uniqueness of set items is not: a set
  raises :class:`~tokamata.Unsupported` (``uniqueItems``) unless
  ``approximate={"uniqueItems"}``, when items may repeat (the reader then refuses the text).
- Built through :class:`~tokamata.grammar.builder.GrammarBuilder` (character level), within
  ``Limits.max_grammar_symbols``; each record is one nonterminal (recursion is a cycle).
"""

from __future__ import annotations

import enum

from ...automata import boolean
from ...automata import charset as cs
from ...automata import derivatives as d
from ...errors import TokamataError, Unsupported
from ...grammar.builder import GrammarBuilder
from ...grammar.ir import Grammar
from ...limits import Limits
from ..json_schema import lexemes as lx
from ..json_schema import numbers
from ..json_schema.strings import lower_chars, pattern_content
from ..regex import parse_regex
from .model import Bounds, Choice, FixedTuple, Mapping, Node, Record, Scalar, Sequence, Union, type_name
from .scalars import ISO_PATTERNS, python_char, python_string
from .values import ISO_CALLS

__all__ = ["python_grammar", "INT"]

#: Python int literals as this syntax writes them
INT = d.concat(d.repeat(lx.literal("-"), 0, 1), d.alternation(lx.literal("0"), d.concat(
    d.byte_set(d.byte_mask("123456789")), d.repeat(lx.DIGIT, 0, d.UNBOUNDED))))
_PLAIN = numbers.PLAIN_ANY


def python_grammar(root: Node, limits: Limits, approximate: frozenset[str] = frozenset()) -> Grammar:
    """The grammar of ``root``'s values as Python source (see the module docstring)."""
    emitter = _Emitter(limits, approximate)
    start = emitter.b.nonterminal("start")
    emitter.b.add_rule(start, [emitter.symbol(root)])
    return emitter.b.build(start)


def _bounded(base: d.Expr, bounds: Bounds, limits: Limits) -> d.Expr:
    parts = [base]
    if any(getattr(bounds, n) is not None for n in ("ge", "gt", "le", "lt")):
        low, low_strict = (bounds.gt, True) if bounds.gt is not None else (bounds.ge, False)
        high, high_strict = (bounds.lt, True) if bounds.lt is not None else (bounds.le, False)
        parts.append(numbers.number_range(low, low_strict, high, high_strict, limits))
    if bounds.multiple_of is not None:
        parts.append(numbers.multiple_of(bounds.multiple_of, limits))
    if len(parts) == 1:
        return base
    if base is not INT:
        parts[0] = _PLAIN
    return boolean.intersection(*parts, limits=limits)


class _Emitter:
    def __init__(self, limits: Limits, approximate: frozenset[str]):
        self.limits = limits
        self.approximate = approximate
        self.b = GrammarBuilder("", limits, character_level=True)
        self.records: dict[int, int] = {}

    def lit(self, text: str) -> int:
        return self.b.terminal(repr(text), lx.literal(text))

    def term(self, name: str, expr: d.Expr) -> int:
        return self.b.terminal(name, expr, numbered=True)

    def symbol(self, node: Node) -> int:
        try:
            return self._symbol(node)
        except TokamataError as error:
            if error.path is None:
                error.path = node.path
            raise

    def _symbol(self, node: Node) -> int:
        if isinstance(node, Scalar):
            return self.term(node.kind.upper(), self.scalar(node))
        if isinstance(node, Choice):
            return self.term("CHOICE", d.alternation(*(_literal(v) for v in node.values)))
        if isinstance(node, Union):
            return self.b.group([[self.symbol(o)] for o in node.options], "union", None)
        if isinstance(node, Sequence):
            return self.sequence(node)
        if isinstance(node, FixedTuple):
            items = [self.symbol(i) for i in node.items]
            if not items:
                return self.lit("()")
            if len(items) == 1:
                return self.b.group([[self.lit("("), items[0], self.lit(",)")]], "tuple", None)
            body = [items[0]]
            for item in items[1:]:
                body += [self.lit(", "), item]
            return self.b.group([[self.lit("("), *body, self.lit(")")]], "tuple", None)
        if isinstance(node, Mapping):
            key = self.term("KEY", self.string(node.key.bounds, node.key.path))
            pair = [key, self.lit(": "), self.symbol(node.value)]
            return self.counted(pair, "{", "}", "{}", node.bounds, "dict")
        assert isinstance(node, Record)
        return self.record(node)

    def scalar(self, node: Scalar) -> d.Expr:
        kind, bounds = node.kind, node.bounds
        if kind == "int":
            return _bounded(INT, bounds, self.limits)
        if kind == "float":
            return _bounded(lx.NUMBER, bounds, self.limits)
        if kind == "str":
            return self.string(bounds, node.path)
        if kind == "bool":
            return d.alternation(lx.literal("True"), lx.literal("False"))
        if kind == "none":
            return lx.literal("None")
        call = lx.literal(ISO_CALLS[kind] + "(")
        if kind == "decimal":
            number = _bounded(_PLAIN, bounds, self.limits)  # (its characters are ASCII: no escapes)
            inner = python_string(lambda q: number)
        else:
            tree = parse_regex(ISO_PATTERNS[kind], self.limits)
            inner = python_string(lambda q: lower_chars(tree, lambda c: python_char(c, q)))
        return d.concat_all((call, inner, lx.literal(")")))

    def string(self, bounds: Bounds, path: str) -> d.Expr:
        def content(quote: str) -> d.Expr:
            any_char = python_char(cs.ANY, quote)
            low = bounds.min_length or 0
            high = d.UNBOUNDED if bounds.max_length is None else bounds.max_length
            parts = [d.repeat(any_char, low, high)]
            if bounds.pattern is not None:
                parts.append(pattern_content(bounds.pattern, "pattern", None, self.limits,
                                             char=lambda c: python_char(c, quote)))
            return parts[0] if len(parts) == 1 else boolean.intersection(*parts, limits=self.limits)
        return python_string(content)

    def counted(self, item: list[int], open_: str, close: str, empty: str, bounds: Bounds, hint: str) -> int:
        """``open item (", " item)* close`` with the item count in the bounds, or ``empty``."""
        low = bounds.min_length or 0
        high = d.UNBOUNDED if bounds.max_length is None else bounds.max_length
        options = []
        if low == 0:
            options.append([self.lit(empty)])
        if high == d.UNBOUNDED or high >= 1:
            one = self.b.group([item], hint, None)
            rest = self.b.repeat([self.lit(", "), one], max(low - 1, 0),
                                 d.UNBOUNDED if high == d.UNBOUNDED else high - 1, hint, None)
            options.append([self.lit(open_), one, *rest, self.lit(close)])
        return self.b.group(options, hint, None)

    def sequence(self, node: Sequence) -> int:
        item = [self.symbol(node.item)]
        if node.kind == "list":
            return self.counted(item, "[", "]", "[]", node.bounds, "list")
        if node.kind in ("set", "frozenset") and "uniqueItems" not in self.approximate:
            raise Unsupported("uniqueItems", f"the items of a {node.kind} in Python syntax cannot be kept distinct "
                              f"by a grammar; approximate={{'uniqueItems'}} allows repeats (refused when parsed)",
                              path=node.path)
        if node.kind == "set":
            return self.counted(item, "{", "}", "set()", node.bounds, "set")
        if node.kind == "frozenset":
            return self.counted(item, "frozenset({", "})", "frozenset()", node.bounds, "frozenset")
        # a variadic tuple: (), (a,), (a, b, ...)
        low = node.bounds.min_length or 0
        high = d.UNBOUNDED if node.bounds.max_length is None else node.bounds.max_length
        one = self.b.group([item], "tuple", None)
        options = []
        if low == 0:
            options.append([self.lit("()")])
        if low <= 1 and (high == d.UNBOUNDED or high >= 1):
            options.append([self.lit("("), one, self.lit(",)")])
        if high == d.UNBOUNDED or high >= 2:
            rest = self.b.repeat([self.lit(", "), one], max(low - 1, 1),
                                 d.UNBOUNDED if high == d.UNBOUNDED else high - 1, "tuple", None)
            options.append([self.lit("("), one, *rest, self.lit(")")])
        return self.b.group(options, "tuple", None)

    def record(self, node: Record) -> int:
        found = self.records.get(id(node))
        if found is not None:
            return found
        symbol = self.records[id(node)] = self.b.numbered(_rule_name(node.name))
        fields = node.fields
        # after[i][w]: fields i.. when w (some field was written: a comma comes first)
        after: list[list[int]] = [[self.b.fresh("fields", "tail"), self.b.fresh("fields", "tail")]
                                  for _ in range(len(fields) + 1)]
        for written in (0, 1):
            self.b.add_rule(after[len(fields)][written], [])
        for i in reversed(range(len(fields))):
            field = fields[i]
            value = [self.lit(f"{field.key}="), self.symbol(field.node)]
            for written in (0, 1):
                lead = [self.lit(", ")] if written else []
                self.b.add_rule(after[i][written], [*lead, *value, after[i + 1][1]])
                if not field.required:
                    self.b.add_rule(after[i][written], [after[i + 1][written]])
        self.b.add_rule(symbol, [self.lit(f"{node.name}("), after[0][0], self.lit(")")])
        return symbol


def _rule_name(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def _literal(value) -> d.Expr:
    """Every spelling of a ``Literal`` value or enum member."""
    if isinstance(value, enum.Enum):
        return lx.literal(f"{type_name(type(value))}.{value.name}")
    if isinstance(value, str):
        return python_string(lambda q: d.concat_all(python_char(((ord(c), ord(c)),), q) for c in value))
    if value is None or isinstance(value, bool):
        return lx.literal(repr(value))
    assert isinstance(value, int)
    return lx.literal(str(value))


