"""Python types -> a tree of type nodes: what every other module of this package reads.

Invariants:
- :func:`describe` accepts exactly the kinds listed in :mod:`tokamata.syntax.types` and
  raises :class:`~tokamata.Unsupported` for anything else, with ``keyword`` the type as
  written and ``path`` where it sits (``Order.items[].sku``). Bounds (``annotated_types``
  ``Ge`` ``Gt`` ``Le`` ``Lt`` ``MultipleOf`` ``MinLen`` ``MaxLen`` ``Len`` ``Interval``,
  pydantic ``Field`` constraints, ``pattern``) apply to ``int``/``float``/``Decimal``
  (numbers) and to ``str``/sequences/sets/dicts (lengths; ``pattern`` to ``str`` only); any
  other metadata object is :class:`~tokamata.Unsupported`. When one ``Annotated`` stacks on
  another, the inner bounds are replaced by the outer ones of the same name.
- A class (dataclass, pydantic model, ``TypedDict``, ``NamedTuple``) is one :class:`Record`,
  however often it appears: recursion is a cycle of records. Forward references are resolved
  with :func:`typing.get_type_hints` in the class's module, where the class's own name also
  means the class; one that does not resolve, a type without any finite
  value (a recursion without a base case), and bounds that leave no value are
  :class:`~tokamata.InvalidType` with the ``path``.
- The walk is bounded: type nesting by ``Limits.max_nesting_depth``, and the number of nodes
  by ``Limits.max_regex_nodes`` (:class:`~tokamata.LimitExceeded`).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import math
import types
import typing
import uuid
from decimal import Decimal
from fractions import Fraction
from typing import Any

from ...errors import InvalidType, LimitExceeded, Unsupported
from ...limits import Limits

__all__ = ["Node", "Scalar", "Choice", "Union", "Sequence", "FixedTuple", "Mapping", "Record", "Field",
           "Bounds", "describe", "type_name", "walk_nodes", "SCALARS"]

#: the scalar kinds and the Python class of each
SCALARS: dict[str, type] = {"int": int, "float": float, "str": str, "bool": bool, "none": type(None),
                            "decimal": Decimal, "datetime": datetime.datetime, "date": datetime.date,
                            "time": datetime.time, "uuid": uuid.UUID}
_SCALAR_OF = {cls: kind for kind, cls in SCALARS.items()}
_REQUIRED_MARKS = tuple(m for m in (getattr(typing, "Required", None), getattr(typing, "NotRequired", None)) if m)
_NUMERIC = ("int", "float", "decimal")
_BOUND_NAMES = ("ge", "gt", "le", "lt", "multiple_of", "min_length", "max_length", "pattern")


@dataclasses.dataclass(frozen=True)
class Bounds:
    """Bounds on a value: numeric (``ge`` ... ``multiple_of``, exact decimals), lengths in code
    points or items (``min_length``, ``max_length``) and a ``pattern`` (``re.search``-like)."""

    ge: Decimal | None = None
    gt: Decimal | None = None
    le: Decimal | None = None
    lt: Decimal | None = None
    multiple_of: Decimal | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None

    def numeric(self) -> bool:
        return any(getattr(self, n) is not None for n in ("ge", "gt", "le", "lt", "multiple_of"))

    def lengths(self) -> bool:
        return self.min_length is not None or self.max_length is not None


NO_BOUNDS = Bounds()


class Node:
    """A node of the type tree; ``path`` says where it sits in the root type."""

    path: str


@dataclasses.dataclass(eq=False)
class Scalar(Node):
    kind: str  # a key of SCALARS
    path: str
    bounds: Bounds = NO_BOUNDS


@dataclasses.dataclass(eq=False)
class Choice(Node):
    """``Literal[...]`` or an ``Enum``: finitely many values (enum members for an enum)."""

    values: tuple
    path: str
    enum: type | None = None  # the Enum class, for an enum


@dataclasses.dataclass(eq=False)
class Union(Node):
    options: tuple[Node, ...]
    path: str


@dataclasses.dataclass(eq=False)
class Sequence(Node):
    """``list[T]``, ``tuple[T, ...]``, ``set[T]``, ``frozenset[T]``."""

    kind: str  # "list", "tuple", "set", "frozenset"
    item: Node
    path: str
    bounds: Bounds = NO_BOUNDS


@dataclasses.dataclass(eq=False)
class FixedTuple(Node):
    items: tuple[Node, ...]
    path: str


@dataclasses.dataclass(eq=False)
class Mapping(Node):
    """``dict[str, T]`` (keys: a ``str`` node, possibly bounded)."""

    key: Scalar
    value: Node
    path: str
    bounds: Bounds = NO_BOUNDS


@dataclasses.dataclass(eq=False)
class Field:
    name: str  # the attribute
    key: str  # what the text writes: the alias (pydantic), else the name
    node: Node
    required: bool


@dataclasses.dataclass(eq=False)
class Record(Node):
    """A class with named fields; ``fields`` is filled after the record exists (recursion)."""

    cls: type
    kind: str  # "dataclass", "pydantic", "typeddict", "namedtuple"
    name: str  # how the text names the class (its qualified name)
    path: str
    fields: list[Field] = dataclasses.field(default_factory=list)


def type_name(tp: Any) -> str:
    """A short readable name of a type as written."""
    if isinstance(tp, type):
        return tp.__qualname__ if "<locals>" not in tp.__qualname__ else tp.__name__
    if isinstance(tp, str):
        return tp
    if isinstance(tp, typing.ForwardRef):
        return tp.__forward_arg__
    text = repr(tp)
    return text.replace("typing.", "")


def describe(tp: Any, limits: Limits) -> Node:
    """The type tree of ``tp`` (see the module docstring).

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Point:
    ...     x: int
    ...     y: list[int]
    >>> node = describe(Point, Limits())
    >>> [(f.name, type(f.node).__name__) for f in node.fields]
    [('x', 'Scalar'), ('y', 'Sequence')]
    """
    walker = _Walker(limits)
    node = walker.walk(tp, type_name(tp), 0)
    _check_inhabited(node, walker.records)
    return node


class _Walker:
    def __init__(self, limits: Limits):
        self.limits = limits
        self.records: dict[type, Record] = {}
        self.names: dict[str, type] = {}
        self.count = 0

    def walk(self, tp: Any, path: str, depth: int, bounds: Bounds = NO_BOUNDS) -> Node:
        if depth > self.limits.max_nesting_depth:
            raise LimitExceeded("max_nesting_depth", depth, self.limits.max_nesting_depth)
        self.count += 1
        if self.count > self.limits.max_regex_nodes:
            raise LimitExceeded("max_regex_nodes", self.count, self.limits.max_regex_nodes)
        if isinstance(tp, (str, typing.ForwardRef)):
            name = tp if isinstance(tp, str) else tp.__forward_arg__
            raise InvalidType(f"the forward reference {name!r} is not resolved (define it at module level "
                              f"or pass a resolvable type)", path=path)
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if origin is typing.Annotated:
            return self.walk(args[0], path, depth + 1, _merge(bounds, args[1:], path))
        if origin is not None and origin in _REQUIRED_MARKS:
            return self.walk(args[0], path, depth + 1, bounds)
        if tp is None or tp is type(None):
            return self._scalar("none", path, bounds)
        if origin is typing.Literal:
            return self._no_bounds(Choice(tuple(_literal_values(args, path)), path), bounds, tp)
        if origin is typing.Union or origin is types.UnionType:
            # bounds on an Optional apply to its value (pydantic's reading); None takes none
            options = tuple(self.walk(a, path, depth + 1, NO_BOUNDS if a is type(None) else bounds)
                            for a in args)
            return options[0] if len(options) == 1 else Union(options, path)
        if isinstance(tp, type) and tp in _SCALAR_OF:
            return self._scalar(_SCALAR_OF[tp], path, bounds)
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            members = tuple(tp)
            for member in members:
                if not _json_scalar(member.value):
                    raise Unsupported(type_name(tp), f"the value of {member!r} is not a str, int, float, bool "
                                      f"or None", path=path)
            if not members:
                raise InvalidType(f"the enum {type_name(tp)} has no members", path=path)
            return self._no_bounds(Choice(members, path, tp), bounds, tp)
        if origin in (list, set, frozenset) and len(args) == 1:
            kind = origin.__name__
            return Sequence(kind, self.walk(args[0], path + "[]", depth + 1), path, self._lengths(bounds, path))
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return Sequence("tuple", self.walk(args[0], path + "[]", depth + 1), path,
                                self._lengths(bounds, path))
            if args == ((),):  # tuple[()]
                args = ()
            items = tuple(self.walk(a, f"{path}[{i}]", depth + 1) for i, a in enumerate(args))
            return self._no_bounds(FixedTuple(items, path), bounds, tp)
        if origin is dict and len(args) == 2:
            key = self.walk(args[0], path + "{key}", depth + 1)
            if not (isinstance(key, Scalar) and key.kind == "str"):
                raise Unsupported(type_name(args[0]), "dict keys must be str", path=path + "{key}")
            return Mapping(key, self.walk(args[1], path + "{}", depth + 1), path, self._lengths(bounds, path))
        if isinstance(tp, type):
            kind = _record_kind(tp)
            if kind is not None:
                return self._no_bounds(self._record(tp, kind, path, depth), bounds, tp)
        raise Unsupported(type_name(tp), "not a type tokamata.compile_type supports", path=path)

    def _scalar(self, kind: str, path: str, bounds: Bounds) -> Scalar:
        if bounds.numeric() and kind not in _NUMERIC:
            raise InvalidType(f"numeric bounds do not apply to {kind}", path=path)
        if (bounds.lengths() or bounds.pattern is not None) and kind != "str":
            raise InvalidType(f"length and pattern bounds do not apply to {kind}", path=path)
        _check_numeric(kind, bounds, path)
        _check_lengths(bounds, path)
        return Scalar(kind, path, bounds)

    def _lengths(self, bounds: Bounds, path: str) -> Bounds:
        if bounds.numeric() or bounds.pattern is not None:
            raise InvalidType("only length bounds apply to a collection", path=path)
        _check_lengths(bounds, path)
        return bounds

    def _no_bounds(self, node: Node, bounds: Bounds, tp: Any) -> Node:
        if bounds != NO_BOUNDS:
            raise InvalidType(f"bounds do not apply to {type_name(tp)}", path=node.path)
        return node

    def _record(self, cls: type, kind: str, path: str, depth: int) -> Record:
        found = self.records.get(cls)
        if found is not None:
            return found
        name = type_name(cls)
        while name in self.names:  # two classes of one name (different modules or scopes)
            name += "_"
        self.names[name] = cls
        record = self.records[cls] = Record(cls, kind, name, path)
        for field_name, key, hint, required in _fields(cls, kind, path):
            node = self.walk(hint, f"{path}.{field_name}", depth + 1)
            record.fields.append(Field(field_name, key, node, required))
        return record


def _record_kind(cls: type) -> str | None:
    if dataclasses.is_dataclass(cls):
        return "dataclass"
    if hasattr(cls, "model_fields") and hasattr(cls, "model_json_schema") and hasattr(cls, "model_validate"):
        return "pydantic"
    if typing.is_typeddict(cls):
        return "typeddict"
    if issubclass(cls, tuple) and hasattr(cls, "_fields") and hasattr(cls, "_field_defaults"):
        return "namedtuple"
    return None


def _hints(cls: type, path: str) -> dict[str, Any]:
    """The class's resolved annotations; a class may name itself (a class defined inside a
    function or a doctest has no module globals that hold it)."""
    try:
        return typing.get_type_hints(cls, localns={cls.__name__: cls}, include_extras=True)
    except NameError as error:
        raise InvalidType(f"a forward reference of {type_name(cls)} does not resolve: {error}", path=path) from None


def _fields(cls: type, kind: str, path: str) -> list[tuple[str, str, Any, bool]]:
    """(name, key, type, required) of each field the constructor takes, in order."""
    if kind == "dataclass":
        hints = _hints(cls, path)
        return [(f.name, f.name, hints.get(f.name, f.type),
                 f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
                for f in dataclasses.fields(cls) if f.init]
    if kind == "namedtuple":
        hints = _hints(cls, path)
        defaults = cls._field_defaults  # type: ignore[attr-defined]
        return [(name, name, hints.get(name, Any), name not in defaults)
                for name in cls._fields]  # type: ignore[attr-defined]
    if kind == "typeddict":
        hints = _hints(cls, path)
        required = cls.__required_keys__  # type: ignore[attr-defined]
        return [(name, name, hint, _marked(hint, name in required)) for name, hint in hints.items()]
    # pydantic v2
    if not getattr(cls, "__pydantic_complete__", True):
        raise InvalidType(f"the pydantic model {type_name(cls)} is not fully defined (a forward reference does "
                          f"not resolve; call {type_name(cls)}.model_rebuild())", path=path)
    out = []
    for name, info in cls.model_fields.items():  # type: ignore[attr-defined]
        alias = info.alias or name
        validation = getattr(info, "validation_alias", None)
        if validation is not None and validation != alias:
            raise Unsupported("validation_alias", "only a plain alias (Field(alias=...)) is supported",
                              path=f"{path}.{name}")
        hint = info.annotation
        if info.metadata:
            hint = typing.Annotated[(hint, *info.metadata)]
        out.append((name, alias, hint, info.is_required()))
    return out


def _marked(hint: Any, required: bool) -> bool:
    """A ``TypedDict`` key's requiredness: its ``Required``/``NotRequired`` mark where it has one
    (under ``from __future__ import annotations`` Python 3.10/3.11 miss the mark in
    ``__required_keys__``), else what the class says."""
    origin = typing.get_origin(hint)
    if origin is not None and origin in _REQUIRED_MARKS:
        return origin is _REQUIRED_MARKS[0]
    return required


def _json_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, bool)) or (isinstance(value, float) and math.isfinite(value))


def _literal_values(args: tuple, path: str) -> list:
    values = []
    for value in args:
        if typing.get_origin(value) is typing.Literal:
            values.extend(_literal_values(typing.get_args(value), path))
        elif isinstance(value, enum.Enum) and _json_scalar(value.value):
            values.append(value)
        elif _json_scalar(value) and not isinstance(value, float):
            values.append(value)
        else:
            raise Unsupported(repr(value), "a Literal value must be a str, int, bool, None or an enum member",
                              path=path)
    return values


def _merge(bounds: Bounds, metadata: tuple, path: str) -> Bounds:
    """``bounds`` with the bounds ``metadata`` (of an ``Annotated``) states."""
    updates: dict[str, Any] = {}
    for meta in metadata:
        inner = getattr(meta, "metadata", None)
        if isinstance(inner, list) and type(meta).__name__ == "FieldInfo":  # pydantic Field() in Annotated
            bounds = _merge(bounds, tuple(inner), path)
            continue
        if type(meta).__name__ == "Strict" or isinstance(meta, str):  # pydantic's strict flag; a docstring
            continue
        if not any(hasattr(meta, name) for name in _BOUND_NAMES):
            raise Unsupported(type(meta).__name__, "this Annotated metadata cannot be enforced", path=path)
        for name in _BOUND_NAMES:
            value = getattr(meta, name, None)
            if name == "max_length" and isinstance(value, float) and math.isinf(value):
                value = None  # (annotated_types.Len's "no maximum")
            if value is None:
                continue
            if name == "pattern":
                if not isinstance(value, str):
                    raise Unsupported("pattern", "a pattern must be a str", path=path)
                updates[name] = value
            elif name in ("min_length", "max_length"):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise InvalidType(f"{name} must be an int, got {value!r}", path=path)
                updates[name] = value
            else:
                updates[name] = _decimal(value, name, path)
    return dataclasses.replace(bounds, **updates) if updates else bounds


def _decimal(value: Any, name: str, path: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise InvalidType(f"{name} must be a number, got {value!r}", path=path)
    result = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if not result.is_finite():
        raise InvalidType(f"{name} must be finite, got {value!r}", path=path)
    return result


def _check_numeric(kind: str, b: Bounds, path: str) -> None:
    if b.multiple_of is not None and b.multiple_of <= 0:
        raise InvalidType(f"multiple_of must be positive, got {b.multiple_of}", path=path)
    lows = [(v, False) for v in (b.ge,) if v is not None] + [(v, True) for v in (b.gt,) if v is not None]
    highs = [(v, False) for v in (b.le,) if v is not None] + [(v, True) for v in (b.lt,) if v is not None]
    low = max(lows, key=lambda x: (x[0], x[1])) if lows else None
    high = min(highs, key=lambda x: (x[0], not x[1])) if highs else None
    if low is None or high is None:
        return
    if low[0] > high[0] or (low[0] == high[0] and (low[1] or high[1])):
        raise InvalidType(f"the bounds leave no value: {_show(low, '>')} and {_show(high, '<')}", path=path)
    if kind == "int" or b.multiple_of is not None:
        step = b.multiple_of if b.multiple_of is not None else Decimal(1)
        if kind == "int":
            step = _lcm(step, Decimal(1))
        exact_step = Fraction(step)
        first = math.ceil(Fraction(low[0]) / exact_step) * exact_step
        if first == Fraction(low[0]) and low[1]:
            first += exact_step
        if first > Fraction(high[0]) or (first == Fraction(high[0]) and high[1]):
            raise InvalidType(f"the bounds leave no value: {_show(low, '>')}, {_show(high, '<')}"
                              + (f", multiple of {b.multiple_of}" if b.multiple_of is not None else "")
                              + (" (integers)" if kind == "int" else ""), path=path)


def _lcm(a: Decimal, b: Decimal) -> Decimal:
    scale = Decimal(10) ** max(-a.as_tuple().exponent, -b.as_tuple().exponent, 0)  # type: ignore[operator]
    x, y = int(a * scale), int(b * scale)
    return Decimal(x * y // math.gcd(x, y)) / scale


def _show(bound: tuple[Decimal, bool], side: str) -> str:
    return f"{side}{'' if bound[1] else '='} {bound[0]}"


def _check_lengths(b: Bounds, path: str) -> None:
    for name in ("min_length", "max_length"):
        value = getattr(b, name)
        if value is not None and value < 0:
            raise InvalidType(f"{name} must be >= 0, got {value}", path=path)
    if b.min_length is not None and b.max_length is not None and b.min_length > b.max_length:
        raise InvalidType(f"the bounds leave no value: min_length {b.min_length} > max_length {b.max_length}",
                          path=path)


def _check_inhabited(root: Node, records: dict[type, Record]) -> None:
    """Raise :class:`InvalidType` where a type has no finite value (a recursion without a base
    case): records are inhabited by a least fixpoint."""
    inhabited: set[int] = set()

    def has_value(node: Node) -> bool:
        if isinstance(node, Record):
            return id(node) in inhabited
        if isinstance(node, Union):
            return any(has_value(o) for o in node.options)
        if isinstance(node, (Sequence, Mapping)):
            return not node.bounds.min_length or has_value(node.item if isinstance(node, Sequence) else node.value)
        if isinstance(node, FixedTuple):
            return all(has_value(i) for i in node.items)
        return True

    changed = True
    while changed:
        changed = False
        for record in records.values():
            if id(record) not in inhabited and all(has_value(f.node) for f in record.fields if f.required):
                inhabited.add(id(record))
                changed = True
    for record in records.values():
        if id(record) not in inhabited:
            blocking = [f.name for f in record.fields if f.required and not has_value(f.node)]
            raise InvalidType(f"{record.name} has no finite value: a recursion without a base case through "
                              f"its required field(s) {', '.join(blocking)} (make one optional, a union with "
                              f"None, or a collection that may be empty)", path=record.path)
    if not has_value(root):  # pragma: no cover  (a record would have been named above)
        raise InvalidType("the type has no finite value", path=root.path)



def walk_nodes(root: Node) -> list[Node]:
    """Every node of the tree once (records' fields included; cycles followed once)."""
    seen: set[int] = set()
    out: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        out.append(node)
        if isinstance(node, Union):
            stack.extend(node.options)
        elif isinstance(node, Sequence):
            stack.append(node.item)
        elif isinstance(node, FixedTuple):
            stack.extend(node.items)
        elif isinstance(node, Mapping):
            stack.extend((node.key, node.value))
        elif isinstance(node, Record):
            stack.extend(f.node for f in node.fields)
    return out
