"""Values of a type tree, built from parsed text and checked: the one converter of both syntaxes.

Invariants:
- :func:`build` takes what a syntax's reader produced (``json.loads`` with
  ``parse_float=Decimal``, or :mod:`.python_text`'s reader: the same plain data plus
  :class:`PyTuple`, :class:`PySet`, :class:`PyFrozenset`, :class:`Call` and :class:`Name`)
  and returns an instance of the node's type, or raises :class:`~tokamata.ParseError` with
  the ``path`` of the offending value. It coerces nothing the syntax's language does not
  spell that way: an ``int`` field takes an integer (in JSON also ``1.0``, which the JSON
  Schema ``integer`` allows), a ``float`` field an integer or decimal literal, a ``Decimal``
  the same (JSON) or ``Decimal('...')`` (Python); ``bool`` is never an ``int``. Bounds
  (numeric, lengths, ``pattern`` with Python's ``re.search``) are checked again, so text
  outside the language is refused even where the reader alone would take it.
- A union takes its first option, left to right, that builds; a record's fields are passed
  to its class's constructor (dataclass, ``NamedTuple``, ``TypedDict``); a pydantic model is
  built with ``model_validate`` from the field values already built (so its own validators
  run) and its ``ValidationError`` becomes a ``ParseError``.
- :func:`fits` says whether a Python value is a value of a node's type (deep, bounds not
  checked): the writers use it to choose a union's option.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import re
import uuid
from decimal import Decimal
from fractions import Fraction
from typing import Any

from ...errors import ParseError
from .model import Choice, FixedTuple, Mapping, Node, Record, Scalar, Sequence, Union
from .scalars import ISO_PATTERNS

__all__ = ["build", "fits", "PyTuple", "PySet", "PyFrozenset", "Call", "Name", "ISO_CALLS"]


class PyTuple(tuple):
    """A tuple display read from Python text."""


@dataclasses.dataclass
class PySet:
    items: list


@dataclasses.dataclass
class PyFrozenset:
    items: list


@dataclasses.dataclass
class Call:
    """``name(args..., key=value, ...)`` read from Python text."""

    name: str
    args: list
    kwargs: list[tuple[str, Any]]


@dataclasses.dataclass
class Name:
    """A dotted name read from Python text (an enum member, ``Color.RED``)."""

    name: str


#: how Python text writes a scalar kind that has no literal: the call taking its ISO string
ISO_CALLS = {"datetime": "datetime.fromisoformat", "date": "date.fromisoformat", "time": "time.fromisoformat",
             "uuid": "UUID", "decimal": "Decimal"}
_FROM_ISO = {"datetime": datetime.datetime.fromisoformat, "date": datetime.date.fromisoformat,
             "time": datetime.time.fromisoformat, "uuid": uuid.UUID}
_COMPILED_ISO = {kind: re.compile(pattern) for kind, pattern in ISO_PATTERNS.items()}


def _fail(message: str, path: str) -> ParseError:
    return ParseError(message, path=path)


def build(node: Node, data: Any, syntax: str) -> Any:
    """The value of ``node``'s type that ``data`` (read from text of ``syntax``) spells."""
    if isinstance(node, Scalar):
        return _scalar(node, data, syntax)
    if isinstance(node, Choice):
        return _choice(node, data, syntax)
    if isinstance(node, Union):
        errors = []
        for option in node.options:
            try:
                return build(option, data, syntax)
            except ParseError as error:
                errors.append(error)
        raise _fail(f"no option of the union fits ({'; '.join(e.message for e in errors)})", node.path)
    if isinstance(node, Sequence):
        return _sequence(node, data, syntax)
    if isinstance(node, FixedTuple):
        want = PyTuple if syntax == "python" else list
        if not isinstance(data, want) or len(data) != len(node.items):
            raise _fail(f"expected a {'tuple' if syntax == 'python' else 'array'} of {len(node.items)} items", node.path)
        return tuple(build(n, v, syntax) for n, v in zip(node.items, data))
    if isinstance(node, Mapping):
        if not isinstance(data, dict):
            raise _fail("expected a dict", node.path)
        _lengths(node.bounds, len(data), node.path)
        out = {}
        for key, value in data.items():
            out[_scalar(node.key, key, syntax)] = build(node.value, value, syntax)
        return out
    assert isinstance(node, Record)
    return _record(node, data, syntax)


def _lengths(bounds, size: int, path: str) -> None:
    if bounds.min_length is not None and size < bounds.min_length:
        raise _fail(f"{size} items/characters, fewer than min_length {bounds.min_length}", path)
    if bounds.max_length is not None and size > bounds.max_length:
        raise _fail(f"{size} items/characters, more than max_length {bounds.max_length}", path)


def _numeric(bounds, value: Decimal, path: str) -> None:
    b = bounds
    if ((b.ge is not None and value < b.ge) or (b.gt is not None and value <= b.gt)
            or (b.le is not None and value > b.le) or (b.lt is not None and value >= b.lt)):
        raise _fail(f"{value} is out of the bounds", path)
    if b.multiple_of is not None and Fraction(value) % Fraction(b.multiple_of) != 0:
        raise _fail(f"{value} is not a multiple of {b.multiple_of}", path)


def _scalar(node: Scalar, data: Any, syntax: str) -> Any:
    kind, path = node.kind, node.path
    if kind == "none":
        if data is None:
            return None
    elif kind == "bool":
        if isinstance(data, bool):
            return data
    elif kind == "str":
        if isinstance(data, str):
            _lengths(node.bounds, len(data), path)
            if node.bounds.pattern is not None and re.search(node.bounds.pattern, data) is None:
                raise _fail(f"{data!r:.60} does not match the pattern {node.bounds.pattern!r}", path)
            return data
    elif kind in ("int", "float") or (kind == "decimal" and syntax == "json"):
        number = data if isinstance(data, (int, Decimal)) and not isinstance(data, bool) else None
        if number is not None:
            exact = Decimal(number)
            if kind == "int":
                if exact != exact.to_integral_value() or (isinstance(data, Decimal) and syntax == "python"):
                    raise _fail(f"expected an integer, got {data}", path)
                _numeric(node.bounds, exact, path)
                return int(exact)
            _numeric(node.bounds, exact, path)
            return float(exact) if kind == "float" else exact
    else:  # decimal (Python text), datetime, date, time, uuid
        text = _call_text(node, data, syntax)
        if text is not None:
            if kind == "decimal":
                if isinstance(text, (int, Decimal)):
                    value = Decimal(text)
                else:
                    raise _fail("expected Decimal('...')", path)
                _numeric(node.bounds, value, path)
                return value
            if not _COMPILED_ISO[kind].fullmatch(text):
                raise _fail(f"{text!r:.60} is not an ISO 8601 {kind}", path)
            try:
                return _FROM_ISO[kind](text)
            except ValueError as error:
                raise _fail(f"{text!r:.60}: {error}", path) from None
    raise _fail(f"expected {kind}, got {_describe(data)}", path)


def _call_text(node: Scalar, data: Any, syntax: str) -> Any:
    """The ISO string (or the number, for ``Decimal``) a scalar without a literal is written with."""
    if syntax == "json":
        return data if isinstance(data, str) else None
    if isinstance(data, Call) and data.name == ISO_CALLS[node.kind] and len(data.args) == 1 and not data.kwargs:
        arg = data.args[0]
        if node.kind == "decimal" and isinstance(arg, str):
            try:
                value = Decimal(arg)
            except ArithmeticError:
                raise _fail(f"{arg!r:.60} is not a decimal number", node.path) from None
            if not value.is_finite() or not re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?", arg):
                raise _fail(f"{arg!r:.60} is not a plain decimal number", node.path)
            return value
        return arg if isinstance(arg, str) and node.kind != "decimal" else None
    return None


def _describe(data: Any) -> str:
    if isinstance(data, Call):
        return f"a call of {data.name}"
    if isinstance(data, Name):
        return data.name
    return type(data).__name__


def _same(a: Any, b: Any) -> bool:
    """JSON/Python equality without ``True == 1``."""
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


def _json_equal(a: Any, data: Any) -> bool:
    """JSON Schema equality of a ``Literal``/enum value and read data: numbers by value
    (``2``, ``2.0`` and ``2.00`` are one number), never ``true`` and ``1``."""
    if isinstance(a, bool) or isinstance(data, bool) or a is None or data is None:
        return type(a) is type(data) and a == data
    if isinstance(a, (int, float)) and isinstance(data, (int, Decimal)):
        return Decimal(repr(a) if isinstance(a, float) else a) == data
    return type(a) is type(data) and a == data


def _choice(node: Choice, data: Any, syntax: str) -> Any:
    for value in node.values:
        if isinstance(value, enum.Enum):
            if syntax == "python":
                if isinstance(data, Name) and data.name == f"{_enum_name(type(value))}.{value.name}":
                    return value
            elif _json_equal(value.value, data):
                return value
        elif (_json_equal(value, data) if syntax == "json"
              else _same(value, data) and type(value) is type(data)):
            return value
    raise _fail(f"{_describe(data) if isinstance(data, (Call, Name)) else repr(data)[:60]} is not one of "
                f"{[v for v in node.values]!r:.200}", node.path)


def _enum_name(cls: type) -> str:
    return cls.__qualname__ if "<locals>" not in cls.__qualname__ else cls.__name__


def _sequence(node: Sequence, data: Any, syntax: str) -> Any:
    if syntax == "python":
        want = {"list": list, "tuple": PyTuple, "set": PySet, "frozenset": PyFrozenset}[node.kind]
        ok = isinstance(data, want) and (want is not list or not isinstance(data, PyTuple))
        items = data.items if isinstance(data, (PySet, PyFrozenset)) else data
    else:
        ok = isinstance(data, list)
        items = data
    if not ok:
        raise _fail(f"expected a {node.kind}, got {_describe(data)}", node.path)
    _lengths(node.bounds, len(items), node.path)
    built = [build(node.item, item, syntax) for item in items]
    if node.kind in ("set", "frozenset"):
        try:
            values = set(built)
        except TypeError:
            raise _fail("set items must be hashable", node.path) from None
        if len(values) != len(built):
            raise _fail("a set lists an item twice", node.path)
        return values if node.kind == "set" else frozenset(values)
    return tuple(built) if node.kind == "tuple" else built


def _record(node: Record, data: Any, syntax: str) -> Any:
    if syntax == "python":
        if not isinstance(data, Call) or data.name != node.name or data.args:
            raise _fail(f"expected {node.name}(...) with keyword arguments, got {_describe(data)}", node.path)
        given = data.kwargs
    elif node.kind == "namedtuple":
        if not isinstance(data, list) or len(data) > len(node.fields):
            raise _fail(f"expected an array of at most {len(node.fields)} items", node.path)
        given = [(f.key, v) for f, v in zip(node.fields, data)]
    else:
        if not isinstance(data, dict):
            raise _fail(f"expected an object, got {_describe(data)}", node.path)
        given = list(data.items())
    by_key = {f.key: f for f in node.fields}
    order = {f.key: i for i, f in enumerate(node.fields)}
    values: dict[str, Any] = {}
    last = -1
    for key, value in given:
        field = by_key.get(key)
        if field is None:
            raise _fail(f"{node.name} has no field {key!r}", node.path)
        if key in values or order[key] < last:
            raise _fail(f"field {key!r} out of order or repeated", node.path)
        last = order[key]
        values[key] = build(field.node, value, syntax)
    missing = [f.key for f in node.fields if f.required and f.key not in values]
    if missing:
        raise _fail(f"{node.name} misses the required field(s) {', '.join(missing)}", node.path)
    if node.kind == "pydantic":
        try:
            return node.cls.model_validate(values)  # type: ignore[attr-defined]
        except ValueError as error:  # pydantic's ValidationError is a ValueError
            raise _fail(f"{node.name}: {error}", node.path) from None
    kwargs = {by_key[k].name: v for k, v in values.items()}
    try:
        return node.cls(**kwargs)
    except (TypeError, ValueError) as error:  # a __post_init__ that refuses the values
        raise _fail(f"{node.name}(...) refused the values: {error}", node.path) from None


_FITS_CLASSES: dict[str, type | tuple[type, ...]] = {
    "none": type(None), "bool": bool, "str": str, "int": int, "float": (float, int), "decimal": Decimal,
    "datetime": datetime.datetime, "date": datetime.date, "time": datetime.time, "uuid": uuid.UUID}


def fits(value: Any, node: Node) -> bool:
    """Is ``value`` a value of ``node``'s type (deep; bounds not checked)?"""
    if isinstance(node, Scalar):
        cls = _FITS_CLASSES[node.kind]
        if node.kind in ("int", "float") and isinstance(value, bool):
            return False
        if node.kind == "date" and isinstance(value, datetime.datetime):
            return False
        return isinstance(value, cls)
    if isinstance(node, Choice):
        return any(_same(v, value) and type(v) is type(value) or v is value for v in node.values)
    if isinstance(node, Union):
        return any(fits(value, o) for o in node.options)
    if isinstance(node, Sequence):
        cls = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[node.kind]
        return isinstance(value, cls) and all(fits(v, node.item) for v in value)
    if isinstance(node, FixedTuple):
        return (isinstance(value, tuple) and len(value) == len(node.items)
                and all(fits(v, n) for v, n in zip(value, node.items)))
    if isinstance(node, Mapping):
        return isinstance(value, dict) and all(isinstance(k, str) and fits(v, node.value) for k, v in value.items())
    assert isinstance(node, Record)
    if node.kind == "typeddict":
        return (isinstance(value, dict) and set(value) <= {f.name for f in node.fields}
                and all(f.name in value for f in node.fields if f.required)
                and all(fits(value[f.name], f.node) for f in node.fields if f.name in value))
    return isinstance(value, node.cls)
