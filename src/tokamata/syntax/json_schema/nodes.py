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
  ``required`` is a subset of the declared names; ``unplaced`` are declared names that no
  ``properties`` (or ``const``) placed, only ``required``/dependencies named: intersecting
  shapes merges the placed orders of both sides (a ``required`` outside ``allOf`` and the
  ``properties`` inside keep the properties' order), and a name neither side placed stays
  right after the name it followed on its side (first when none); ``rules`` are ``(key language, schema)``
  pairs that constrain every *undeclared* member whose key is in the language (this
  is how ``patternProperties`` and ``additionalProperties`` intersect exactly: intersecting
  shapes concatenates rules and folds the other side's matching rules into each declared
  member); ``names`` is the language every key must be in (``propertyNames``);
  ``witnesses`` are ``(key language, schema)`` pairs each requiring at least one member
  (declared or not) with a key in the language and a value in the schema (complements of
  rules and of ``propertyNames`` are witnesses).
- An :class:`ArrayShape` gives the schema of each position (``prefix``, then ``rest``), the
  length bounds, ``contains`` counts ``(schema, min, max)``, and ``unique``: the paths of
  the schemas whose ``uniqueItems`` holds for it (empty: items may repeat), kept for the
  emitter's error messages; intersection unions them.
- ``evaluated`` (keys of an object shape, leading items of an array shape) is the
  annotation ``unevaluatedProperties`` / ``unevaluatedItems`` read: what the keywords that
  made the shape evaluated. Intersection unions it; complements start from nothing (``not``
  drops annotations); a union keeps each branch's own, which may under-count when several
  branches match (then a valid value can be refused, never an invalid one accepted).
- ``TRUE`` (the empty Conj) is every value; ``FALSE`` contains the false term. Shapes and
  nodes are immutable and hashable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, FrozenSet, Hashable, Optional, Tuple

from ...automata import boolean

from ...automata import derivatives as d
from ...deadline import check_deadline
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


_OBJECT_FIELDS = ("declared", "required", "rules", "names", "min_properties", "max_properties", "witnesses",
                  "evaluated", "unplaced")
_ARRAY_FIELDS = ("prefix", "rest", "min_items", "max_items", "contains", "unique", "evaluated")
_NODE_FIELDS = ("null", "true", "false", "number", "string", "objects", "arrays")


def _replace(value, fields: tuple, parts: dict):
    unknown = parts.keys() - set(fields)
    if unknown:
        raise TypeError(f"{type(value).__name__} has no field {sorted(unknown)[0]!r}")
    return type(value)(*[parts[name] if name in parts else getattr(value, name) for name in fields])


def _describe(value, fields: tuple) -> str:
    return f"{type(value).__name__}(" + ", ".join(f"{name}={getattr(value, name)!r}" for name in fields) + ")"


class _Shape:
    """Equality, a cached hash and a readable repr for the shapes, from their ``_fields()``."""

    __slots__ = ()
    _FIELDS: tuple = ()

    if TYPE_CHECKING:  # each shape's slots and fields
        _hash: Optional[int]

        def _fields(self) -> tuple: ...

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not type(self):
            return NotImplemented
        return hash(self) == hash(other) and self._fields() == other._fields()

    def __hash__(self) -> int:
        found = self._hash
        if found is None:
            found = self._hash = hash(self._fields())  # type: ignore[misc]  # (each subclass has the slot)
        return found

    def __repr__(self) -> str:
        return _describe(self, self._FIELDS)


class ObjectShape(_Shape):
    """A set of JSON objects (see the module docstring). Immutable; built once, never changed
    (hand-written rather than a frozen dataclass: shapes are built and hashed on every
    compile, and a dataclass's generated ``__init__``/``__hash__`` run as interpreted code)."""

    __slots__ = ("declared", "required", "rules", "names", "min_properties", "max_properties", "witnesses",
                 "evaluated", "unplaced", "_hash")
    _FIELDS = _OBJECT_FIELDS

    def __init__(self, declared: Tuple[Tuple[str, Conj], ...] = (), required: FrozenSet[str] = frozenset(),
                 rules: Tuple[Tuple[d.Expr, Conj], ...] = (), names: d.Expr = lx.ANY_STRING,
                 min_properties: int = 0, max_properties: Optional[int] = None,
                 witnesses: Tuple[Tuple[d.Expr, Conj], ...] = (), evaluated: d.Expr = d.NOTHING,
                 unplaced: FrozenSet[str] = frozenset()):
        self.declared = declared
        self.required = required
        self.rules = rules
        self.names = names
        self.min_properties = min_properties
        self.max_properties = max_properties
        self.witnesses = witnesses
        self.evaluated = evaluated
        self.unplaced = unplaced
        self._hash = None

    def _fields(self) -> tuple:
        return (self.declared, self.required, self.rules, self.names, self.min_properties, self.max_properties,
                self.witnesses, self.evaluated, self.unplaced)

    def replace(self, **parts) -> "ObjectShape":
        """This shape with the named fields changed."""
        return _replace(self, _OBJECT_FIELDS, parts)

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
            and self.max_properties is None and not self.witnesses and self.evaluated is d.NOTHING


class ArrayShape(_Shape):
    """A set of JSON arrays (see the module docstring). Immutable, like :class:`ObjectShape`."""

    __slots__ = ("prefix", "rest", "min_items", "max_items", "contains", "unique", "evaluated", "_hash")
    _FIELDS = _ARRAY_FIELDS

    def __init__(self, prefix: Tuple[Conj, ...] = (), rest: Conj = TRUE, min_items: int = 0,
                 max_items: Optional[int] = None, contains: Tuple[Tuple[Conj, int, Optional[int]], ...] = (),
                 unique: Tuple[tuple, ...] = (), evaluated: int = 0):
        self.prefix = prefix
        self.rest = rest
        self.min_items = min_items
        self.max_items = max_items
        self.contains = contains
        self.unique = unique  # paths of the schemas with uniqueItems: true
        self.evaluated = evaluated  # leading items evaluated (annotations for unevaluatedItems); -1: all
        self._hash = None

    def _fields(self) -> tuple:
        return (self.prefix, self.rest, self.min_items, self.max_items, self.contains, self.unique, self.evaluated)

    def replace(self, **parts) -> "ArrayShape":
        """This shape with the named fields changed."""
        return _replace(self, _ARRAY_FIELDS, parts)

    def at(self, index: int) -> Conj:
        return self.prefix[index] if index < len(self.prefix) else self.rest

    @property
    def is_any(self) -> bool:
        return all(c == TRUE for c in self.prefix) and self.rest == TRUE and self.min_items == 0 \
            and self.max_items is None and not self.contains and not self.unique and self.evaluated == 0


ANY_OBJECT = ObjectShape()
ANY_ARRAY = ArrayShape()


class Node:
    """A set of JSON values (see the module docstring). Immutable, like :class:`ObjectShape`."""

    __slots__ = ("null", "true", "false", "number", "string", "objects", "arrays")

    def __init__(self, null: bool = False, true: bool = False, false: bool = False, number: d.Expr = d.NOTHING,
                 string: d.Expr = d.NOTHING, objects: Tuple[ObjectShape, ...] = (),
                 arrays: Tuple[ArrayShape, ...] = ()):
        self.null = null
        self.true = true
        self.false = false
        self.number = number
        self.string = string
        self.objects = objects
        self.arrays = arrays

    def _fields(self) -> tuple:
        return (self.null, self.true, self.false, self.number, self.string, self.objects, self.arrays)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not Node:
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return _describe(self, _NODE_FIELDS)

    def replace(self, **parts) -> "Node":
        """This node with the named parts changed."""
        return _replace(self, _NODE_FIELDS, parts)

    @property
    def is_empty(self) -> bool:
        return not (self.null or self.true or self.false or self.objects or self.arrays) \
            and self.number is d.NOTHING and self.string is d.NOTHING

    def scalars(self, number: Optional[d.Expr] = None, string: Optional[d.Expr] = None) -> d.Expr:
        """One byte language for every scalar value of the node (``number`` and ``string`` in
        place of the node's number and string parts when given)."""
        return d.alternation(lx.NULL if self.null else d.NOTHING, lx.TRUE if self.true else d.NOTHING,
                             lx.FALSE if self.false else d.NOTHING, self.number if number is None else number,
                             self.string if string is None else string)


ALL = Node(True, True, True, lx.NUMBER, lx.ANY_STRING, (ANY_OBJECT,), (ANY_ARRAY,))
EMPTY = Node()


def only(**parts) -> Node:
    """Every value outside the named parts, and the named parts as given (a keyword that
    constrains one type lets every other type through)."""
    return ALL.replace(**parts)


def _dedupe(items: tuple) -> tuple:
    return tuple(dict.fromkeys(items))


def union(a: Node, b: Node) -> Node:
    return Node(a.null or b.null, a.true or b.true, a.false or b.false,
                d.alternation(a.number, b.number), d.alternation(a.string, b.string),
                _simplify(a.objects + b.objects), _simplify(a.arrays + b.arrays))


_SUBSUMPTION_LIMIT = 400  # shapes: above this, only exact duplicates are removed


def _simplify(shapes: tuple) -> tuple:
    """Drop duplicates and shapes another shape of the union visibly contains (its
    constraints are a subset of theirs), so unions of complements stay small."""
    shapes = _dedupe(shapes)
    if len(shapes) < 2 or len(shapes) > _SUBSUMPTION_LIMIT:
        return shapes
    kept = []
    for i, x in enumerate(shapes):
        if not any(j != i and _contains(y, x) and not (_contains(x, y) and j > i) for j, y in enumerate(shapes)):
            kept.append(x)
    return tuple(kept)


def _at_most(x: Optional[int], y: Optional[int]) -> bool:
    """x <= y with None as infinity."""
    return y is None or (x is not None and x <= y)


def _contains(y, x) -> bool:
    """A sufficient syntactic test that every value of shape ``x`` fits shape ``y``."""
    if type(x) is not type(y):
        return False
    # y must carry at least x's annotations, or unevaluated* would see less through y
    if isinstance(y, ObjectShape):
        if not (x.evaluated is d.NOTHING or y.evaluated is x.evaluated or y.evaluated is lx.ANY_STRING):
            return False
    elif not (y.evaluated == -1 or (x.evaluated != -1 and y.evaluated >= x.evaluated)):
        return False
    if isinstance(y, ObjectShape):
        if y.is_any:
            return True
        x_names = dict(x.declared)
        if not (y.required <= x.required and y.min_properties <= x.min_properties
                and _at_most(x.max_properties, y.max_properties) and set(y.rules) <= set(x.rules)
                and set(y.witnesses) <= set(x.witnesses) and (y.names is lx.ANY_STRING or y.names is x.names)):
            return False
        for name, conj in y.declared:
            if name not in x_names or not conj <= x_names[name]:
                return False
        return all(y.undeclared_schema(name) <= conj for name, conj in x.declared if name not in dict(y.declared))
    if y.is_any:
        return True
    if not (y.min_items <= x.min_items and _at_most(x.max_items, y.max_items) and y.rest <= x.rest
            and set(y.contains) <= set(x.contains) and (x.unique or not y.unique)):
        return False
    return all(y.at(i) <= x.at(i) for i in range(max(len(x.prefix), len(y.prefix))))


MAX_SHAPES = 4096


def intersect(a: Node, b: Node, limits: Limits, empty: Optional[Callable[[Conj], bool]] = None) -> Node:
    """``a`` and ``b``; ``empty(conj)``, when given, proves member schemas empty, so shapes
    that require an impossible member are dropped (keeps products of unions small)."""
    if a is ALL:
        return b
    if b is ALL:
        return a
    objects = _product(a.objects, b.objects, _intersect_objects, limits, empty)
    arrays = _product(a.arrays, b.arrays, _intersect_arrays, limits, empty)
    return Node(a.null and b.null, a.true and b.true, a.false and b.false,
                _and(a.number, b.number, limits), _and(a.string, b.string, limits), objects, arrays)


def _and(x: d.Expr, y: d.Expr, limits: Limits) -> d.Expr:
    if x is y:
        return x
    if x is d.NOTHING or y is d.NOTHING:
        return d.NOTHING
    # every string language built here is within ANY_STRING, every number one within NUMBER
    if x is lx.ANY_STRING or x is lx.NUMBER:
        return y
    if y is lx.ANY_STRING or y is lx.NUMBER:
        return x
    return boolean.intersection(x, y, limits=limits)


def _product(xs: tuple, ys: tuple, combine: Callable, limits: Limits, empty) -> tuple:
    if len(xs) * len(ys) > MAX_SHAPES:
        raise LimitExceeded("max_grammar_symbols", len(xs) * len(ys), MAX_SHAPES)
    out = []
    for x in xs:
        check_deadline()
        for y in ys:
            z = combine(x, y, limits)
            if z is not None and not (empty and _needs_empty(z, empty)):
                out.append(z)
    return _simplify(tuple(out))


def _needs_empty(shape, empty: Callable[[Conj], bool]) -> bool:
    """Whether ``shape`` requires a member whose schema is empty."""
    if isinstance(shape, ObjectShape):
        return any(empty(conj) for name, conj in shape.declared if name in shape.required)
    return any(empty(shape.at(i)) for i in range(min(shape.min_items, len(shape.prefix) + 1)))


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
    merged: dict[str, Conj] = {}
    b_declared = dict(b.declared)
    for name, conj in a.declared:
        other = b_declared[name] if name in b_declared else b.undeclared_schema(name)
        merged[name] = conj | other
    a_names = dict(a.declared)
    for name, conj in b.declared:
        if name not in a_names:
            merged[name] = conj | a.undeclared_schema(name)
    unplaced = (a.unplaced | (b_declared.keys() - a_names.keys())) & (b.unplaced | (a_names.keys() - b_declared.keys()))
    order = _merge_order([n for n, _ in a.declared if n not in a.unplaced],
                         [n for n, _ in b.declared if n not in b.unplaced])
    for side in (a, b):  # a name no side placed stays after the name it followed on its side
        previous = None
        for name, _ in side.declared:
            if name in unplaced and name not in order:
                order.insert(0 if previous is None else order.index(previous) + 1, name)
            if name in order:
                previous = name
    names = _and(a.names, b.names, limits)
    shape = ObjectShape(tuple((n, merged[n]) for n in order), a.required | b.required, a.rules + b.rules, names,
                        max(a.min_properties, b.min_properties), _min_opt(a.max_properties, b.max_properties),
                        _dedupe(a.witnesses + b.witnesses), d.alternation(a.evaluated, b.evaluated),
                        frozenset(unplaced))
    if shape.max_properties is not None and (shape.min_properties > shape.max_properties
                                             or len(shape.required) > shape.max_properties):
        return None
    return shape


def _merge_order(first: list, second: list) -> list:
    """One order of the names of both lists that keeps ``first``'s order and, where the two
    do not disagree, ``second``'s: each name only in ``second`` goes right after the name
    before it in ``second`` (before the next shared one when none comes before it)."""
    out = list(first)
    placed = set(out)
    leading: list = []  # names of second before any name already placed
    last = -1
    for name in second:
        if name in placed:
            index = out.index(name)
            if leading:
                out[index:index] = leading
                index += len(leading)
                leading = []
            last = index
        elif last < 0:
            leading.append(name)
        else:
            last += 1
            out.insert(last, name)
        placed.add(name)
    return out + leading


def _intersect_arrays(a: ArrayShape, b: ArrayShape, limits: Limits) -> Optional[ArrayShape]:
    if a.is_any:
        return b
    if b.is_any:
        return a
    length = max(len(a.prefix), len(b.prefix))
    prefix = tuple(a.at(i) | b.at(i) for i in range(length))
    evaluated = -1 if -1 in (a.evaluated, b.evaluated) else max(a.evaluated, b.evaluated)
    shape = ArrayShape(prefix, a.rest | b.rest, max(a.min_items, b.min_items),
                       _min_opt(a.max_items, b.max_items), _dedupe(a.contains + b.contains),
                       _dedupe(a.unique + b.unique), evaluated)
    if shape.max_items is not None and shape.min_items > shape.max_items:
        return None
    return shape

