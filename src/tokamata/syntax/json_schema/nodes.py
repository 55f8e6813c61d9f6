"""The sets of JSON values a schema denotes, split by JSON type, with union and intersection.

A :class:`Node` is a set of JSON values: flags for ``null``/``true``/``false``, byte
languages for numbers and strings (whole tokens, quotes included), and unions of object and
array *shapes*. Shapes refer to the schemas of their members by :data:`Conj` (a frozenset of
terms, meaning their intersection), never by nodes, so recursive schemas stay finite: a
member's node is computed only when the grammar needs it.

Invariants:
- Node parts are disjoint by type (the first byte of a scalar token decides its type), so
  union and intersection work part by part; scalar parts are exact byte languages closed
  under spelling (see :mod:`.lexemes`), combined with ``derivatives.alternation`` /
  ``intersection`` / ``difference``.
- An :class:`ObjectShape` lists ``declared`` members in output order with their schemas;
  ``required`` is a subset of the declared names; ``rules`` are ``(key language, schema)``
  pairs that constrain every *undeclared* member whose key is in the language (this
  is how ``patternProperties`` and ``additionalProperties`` intersect exactly: intersecting
  shapes concatenates rules and folds the other side's matching rules into each declared
  member); ``names`` is the language every key must be in (``propertyNames``);
  ``witnesses`` are ``(key language, schema)`` pairs each requiring at least one member
  (declared or not) with a key in the language and a value in the schema (complements of
  rules and of ``propertyNames`` are witnesses).
- An :class:`ArrayShape` gives the schema of each position (``prefix``, then ``rest``), the
  length bounds, and ``contains`` counts ``(schema, min, max)``.
- ``TRUE`` (the empty Conj) is every value; ``FALSE`` contains the false term. Shapes and
  nodes are immutable and hashable.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, FrozenSet, Hashable, Optional, Tuple

from ...automata import derivatives as d
from ...errors import LimitExceeded
from ...limits import Limits
from . import lexemes as lx
from .strings import name_accepts

__all__ = ["Conj", "TRUE", "FALSE", "FALSE_TERM", "ObjectShape", "ArrayShape", "Node", "ALL", "EMPTY",
           "ANY_OBJECT", "ANY_ARRAY", "union", "intersect", "only"]

Term = Hashable
Conj = FrozenSet[Term]
FALSE_TERM: Term = ("false",)
TRUE: Conj = frozenset()
FALSE: Conj = frozenset({FALSE_TERM})


@dataclass(frozen=True)
class ObjectShape:
    declared: Tuple[Tuple[str, Conj], ...] = ()
    required: FrozenSet[str] = frozenset()
    rules: Tuple[Tuple[d.Expr, Conj], ...] = ()
    names: d.Expr = lx.ANY_STRING
    min_properties: int = 0
    max_properties: Optional[int] = None
    witnesses: Tuple[Tuple[d.Expr, Conj], ...] = ()

    def schema_of(self, name: str) -> Conj:
        """The schema a member named ``name`` must satisfy."""
        for key, conj in self.declared:
            if key == name:
                return conj
        return self.undeclared_schema(name)

    def undeclared_schema(self, name: str) -> Conj:
        conj: set = set()
        for language, rule in self.rules:
            if rule != TRUE and name_accepts(language, name):
                conj |= rule
        return frozenset(conj)

    @property
    def is_any(self) -> bool:
        return (not self.declared or all(c == TRUE for _, c in self.declared)) and not self.required \
            and not self.rules and self.names is lx.ANY_STRING and self.min_properties == 0 \
            and self.max_properties is None and not self.witnesses


@dataclass(frozen=True)
class ArrayShape:
    prefix: Tuple[Conj, ...] = ()
    rest: Conj = TRUE
    min_items: int = 0
    max_items: Optional[int] = None
    contains: Tuple[Tuple[Conj, int, Optional[int]], ...] = ()
    unique: bool = False

    def at(self, index: int) -> Conj:
        return self.prefix[index] if index < len(self.prefix) else self.rest

    @property
    def is_any(self) -> bool:
        return all(c == TRUE for c in self.prefix) and self.rest == TRUE and self.min_items == 0 \
            and self.max_items is None and not self.contains and not self.unique


ANY_OBJECT = ObjectShape()
ANY_ARRAY = ArrayShape()


@dataclass(frozen=True)
class Node:
    null: bool = False
    true: bool = False
    false: bool = False
    number: d.Expr = d.NOTHING
    string: d.Expr = d.NOTHING
    objects: Tuple[ObjectShape, ...] = ()
    arrays: Tuple[ArrayShape, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.null or self.true or self.false or self.objects or self.arrays) \
            and self.number is d.NOTHING and self.string is d.NOTHING

    def scalars(self) -> d.Expr:
        """One byte language for every scalar value of the node."""
        return d.alternation(lx.NULL if self.null else d.NOTHING, lx.TRUE if self.true else d.NOTHING,
                             lx.FALSE if self.false else d.NOTHING, self.number, self.string)


ALL = Node(True, True, True, lx.NUMBER, lx.ANY_STRING, (ANY_OBJECT,), (ANY_ARRAY,))
EMPTY = Node()


def only(**parts) -> Node:
    """Every value outside the named parts, and the named parts as given (a keyword that
    constrains one type lets every other type through)."""
    return replace(ALL, **parts)


def _dedupe(items: tuple) -> tuple:
    return tuple(dict.fromkeys(items))


def union(a: Node, b: Node) -> Node:
    return Node(a.null or b.null, a.true or b.true, a.false or b.false,
                d.alternation(a.number, b.number), d.alternation(a.string, b.string),
                _dedupe(a.objects + b.objects), _dedupe(a.arrays + b.arrays))


MAX_SHAPES = 4096


def intersect(a: Node, b: Node, limits: Limits) -> Node:
    if a is ALL:
        return b
    if b is ALL:
        return a
    objects = _product(a.objects, b.objects, _intersect_objects, limits)
    arrays = _product(a.arrays, b.arrays, _intersect_arrays, limits)
    return Node(a.null and b.null, a.true and b.true, a.false and b.false,
                _and(a.number, b.number, limits), _and(a.string, b.string, limits), objects, arrays)


def _and(x: d.Expr, y: d.Expr, limits: Limits) -> d.Expr:
    if x is y:
        return x
    if x is d.NOTHING or y is d.NOTHING:
        return d.NOTHING
    return d.intersection(x, y, limits=limits)


def _product(xs: tuple, ys: tuple, combine: Callable, limits: Limits) -> tuple:
    if len(xs) * len(ys) > MAX_SHAPES:
        raise LimitExceeded("max_grammar_symbols", len(xs) * len(ys), MAX_SHAPES)
    out = []
    for x in xs:
        for y in ys:
            z = combine(x, y, limits)
            if z is not None:
                out.append(z)
    return _dedupe(tuple(out))


def _min_opt(x: Optional[int], y: Optional[int]) -> Optional[int]:
    if x is None:
        return y
    if y is None:
        return x
    return min(x, y)


def _intersect_objects(a: ObjectShape, b: ObjectShape, limits: Limits) -> Optional[ObjectShape]:
    if a.is_any:
        return b
    if b.is_any:
        return a
    declared: dict[str, Conj] = {}
    b_declared = dict(b.declared)
    for name, conj in a.declared:
        other = b_declared[name] if name in b_declared else b.undeclared_schema(name)
        declared[name] = conj | other
    a_names = dict(a.declared)
    for name, conj in b.declared:
        if name not in a_names:
            declared[name] = conj | a.undeclared_schema(name)
    names = _and(a.names, b.names, limits)
    shape = ObjectShape(tuple(declared.items()), a.required | b.required, a.rules + b.rules, names,
                        max(a.min_properties, b.min_properties), _min_opt(a.max_properties, b.max_properties),
                        _dedupe(a.witnesses + b.witnesses))
    if shape.max_properties is not None and (shape.min_properties > shape.max_properties
                                             or len(shape.required) > shape.max_properties):
        return None
    return shape


def _intersect_arrays(a: ArrayShape, b: ArrayShape, limits: Limits) -> Optional[ArrayShape]:
    if a.is_any:
        return b
    if b.is_any:
        return a
    length = max(len(a.prefix), len(b.prefix))
    prefix = tuple(a.at(i) | b.at(i) for i in range(length))
    shape = ArrayShape(prefix, a.rest | b.rest, max(a.min_items, b.min_items),
                       _min_opt(a.max_items, b.max_items), _dedupe(a.contains + b.contains),
                       a.unique or b.unique)
    if shape.max_items is not None and shape.min_items > shape.max_items:
        return None
    return shape

