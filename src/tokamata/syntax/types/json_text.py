"""JSON text of a type's values: writing one (:func:`dump_json`) and reading one back
(:func:`parse_json`).

Invariants:
- :func:`dump_json` writes what the type's JSON Schema (:mod:`.schema`) accepts: fields in
  declaration order, all of them (defaults too); pydantic fields under their aliases;
  numbers in natural spelling (:func:`~tokamata.syntax.json_spelling.natural_number`: plain
  decimal, ``float`` through its shortest ``repr`` so reading it back gives the same float,
  ``3.0`` as ``3``, no trailing zeros, as ``compile_type``'s JSON constraints spell every
  number); strings as ``json.dumps``
  writes them without ASCII escaping; sets in sorted order where their items sort. Layout:
  ``compact`` (no whitespace) or ``pretty`` (``indent`` spaces, ``": "``): both are in the
  language of the same whitespace option (``flexible`` accepts compact text).
  A value it cannot write (a non-finite number, an offset with seconds, a value not of the
  type) raises :class:`~tokamata.InvalidArgument` with the ``path``.
- :func:`parse_json` refuses whitespace outside strings for the compact layout, then reads
  with ``json.loads`` (floats as ``Decimal``, so nothing is
  rounded before the type decides) and builds with :func:`.values.build`; malformed JSON is
  a :class:`~tokamata.ParseError` whose ``span`` is the character where reading stopped.
"""

from __future__ import annotations

import enum
import json
from decimal import Decimal
from typing import Any

from ...errors import InvalidArgument, ParseError
from ..json_spelling import natural_number
from .model import Choice, FixedTuple, Mapping, Node, Record, Scalar, Sequence, Union
from .values import build, fits

__all__ = ["dump_json", "parse_json", "input_text", "plain_number", "sorted_items"]


def input_text(text: Any) -> str:
    """The text ``parse`` was given, as str: bytes are decoded as UTF-8 (:class:`ParseError`
    with the bad bytes' ``span`` otherwise); anything else is :class:`InvalidArgument`."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as error:
            raise ParseError(f"the text is not UTF-8: {error.reason}", span=(error.start, error.end)) from None
    if not isinstance(text, str):
        raise InvalidArgument(f"the text must be str or bytes, got {type(text).__name__}")
    return text


def plain_number(value: float | Decimal, path: str) -> str:
    """``value`` in plain decimal notation (no exponent), exact for its shortest repr."""
    exact = Decimal(repr(value)) if isinstance(value, float) else value
    if not exact.is_finite():
        raise InvalidArgument(f"{value!r} has no JSON or Python literal", path=path)
    return format(exact, "f")


def sorted_items(items: Any) -> list:
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=repr)


def iso_text(value: Any, kind: str, path: str) -> str:
    """The ISO 8601 text of a date, time, datetime or UUID."""
    if kind == "uuid":
        return str(value)
    if kind != "date":
        offset = value.utcoffset()
        if offset is not None and (offset.seconds % 60 or offset.microseconds):
            raise InvalidArgument(f"the UTC offset {offset} of {value!r} has seconds; ISO text here has "
                                  f"minutes at most", path=path)
    return value.isoformat()


def to_data(value: Any, node: Node, path: str) -> Any:
    """``value`` as JSON data (``Decimal`` and ``float`` kept for :func:`_write`)."""
    if isinstance(node, Union):
        for option in node.options:
            if fits(value, option):
                return to_data(value, option, path)
        raise InvalidArgument(f"{value!r:.60} is not a value of any option of the union", path=path)
    if not fits(value, node):
        raise InvalidArgument(f"{value!r:.60} is not a value of this type", path=path)
    if isinstance(node, Scalar):
        if node.kind in ("datetime", "date", "time", "uuid"):
            return iso_text(value, node.kind, path)
        if node.kind == "float":
            return float(value)
        return value
    if isinstance(node, Choice):
        return value.value if isinstance(value, enum.Enum) else value
    if isinstance(node, Sequence):
        items = sorted_items(value) if node.kind in ("set", "frozenset") else value
        return [to_data(v, node.item, path + "[]") for v in items]
    if isinstance(node, FixedTuple):
        return [to_data(v, n, f"{path}[{i}]") for i, (v, n) in enumerate(zip(value, node.items))]
    if isinstance(node, Mapping):
        return {k: to_data(v, node.value, path + "{}") for k, v in value.items()}
    assert isinstance(node, Record)
    if node.kind == "namedtuple":
        return [to_data(getattr(value, f.name), f.node, f"{path}.{f.name}") for f in node.fields]
    if node.kind == "typeddict":
        return {f.key: to_data(value[f.name], f.node, f"{path}.{f.name}") for f in node.fields if f.name in value}
    return {f.key: to_data(getattr(value, f.name), f.node, f"{path}.{f.name}") for f in node.fields}


def _write(data: Any, indent: int | None, depth: int, out: list[str], path: str) -> None:
    if isinstance(data, bool) or data is None:
        out.append(json.dumps(data))
    elif isinstance(data, (float, Decimal)):
        plain_number(data, path)  # (refuses non-finite numbers with the path)
        out.append(natural_number(data))
    elif isinstance(data, (int, str)):
        out.append(json.dumps(data, ensure_ascii=False))
    else:
        pairs = list(data.items()) if isinstance(data, dict) else None
        items = pairs if pairs is not None else data
        brackets = "{}" if pairs is not None else "[]"
        if not items:
            out.append(brackets)
            return
        inner = "" if indent is None else "\n" + " " * (indent * (depth + 1))
        out.append(brackets[0])
        for i, item in enumerate(items):
            out.append(("," if i else "") + inner)
            if pairs is not None:
                out.append(json.dumps(item[0], ensure_ascii=False) + (":" if indent is None else ": "))
                item = item[1]
            _write(item, indent, depth + 1, out, path)
        out.append(("" if indent is None else "\n" + " " * (indent * depth)) + brackets[1])


def dump_json(value: Any, node: Node, indent: int | None = None) -> str:
    """``value`` as JSON text (compact, or pretty with ``indent``)."""
    out: list[str] = []
    _write(to_data(value, node, node.path), indent, 0, out, node.path)
    return "".join(out)


def parse_json(text: str | bytes, node: Node, compact: bool = False) -> Any:
    """The value of ``node``'s type that the JSON ``text`` spells (``compact``: with no
    whitespace outside strings, as ``whitespace="compact"`` generates; otherwise any
    whitespace ``json.loads`` takes)."""
    text = input_text(text)
    if compact:
        _check_compact(text)
    try:
        data = json.loads(text, parse_float=Decimal, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise ParseError(f"not JSON: {error.msg}", text=text,
                         span=(error.pos, min(error.pos + 1, len(text)))) from None
    except (ValueError, RecursionError) as error:
        raise ParseError(f"not JSON: {error}", text=text) from None
    try:
        return build(node, data, "json")
    except ParseError as error:
        error.text = text
        raise


def _check_compact(text: str) -> None:
    """Raise :class:`ParseError` at the first whitespace character outside a string."""
    in_string = escaped = False
    for i, c in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in " \t\n\r":
            raise ParseError("whitespace outside a string (whitespace=\"compact\")", text=text, span=(i, i + 1))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")



