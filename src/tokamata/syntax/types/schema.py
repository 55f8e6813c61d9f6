"""The type tree -> a JSON Schema (draft 2020-12) whose JSON texts are exactly the values'.

Invariants:
- Each class is one ``$defs`` entry named after it (recursion is ``$ref`` to it). A
  dataclass or ``TypedDict`` is a closed object (``additionalProperties: false``) with its
  fields in order, the required ones in ``required``; a ``NamedTuple`` an array of its fields
  in order (those with defaults may be left off the end); a pydantic model is the schema
  pydantic itself makes (``model_json_schema(by_alias=True)``: aliases, ``Field`` bounds,
  discriminated unions), made by a generator that writes decimals, dates, times and UUIDs as
  this module does, and compiled with ``strict=True`` (closed objects); the generator leaves
  out ``default`` (an annotation: the grammar is the same without it) and does not sort keys
  (``properties`` keep the fields' order either way).
- Scalars: ``int`` is ``integer``, ``float`` and ``Decimal`` are ``number``, ``datetime``,
  ``date``, ``time`` and ``UUID`` are strings with the full-match patterns of
  :data:`.scalars.ISO_PATTERNS` (declared as library patterns, so the JSON Schema front end
  builds their contents once per process, like a format's); bounds become ``minimum``/``exclusiveMinimum``/...,
  ``multipleOf``, ``minLength``/``maxLength`` (code points), ``pattern`` (as given, search
  semantics). Lengths of collections are ``minItems``/``maxItems``/``minProperties``/
  ``maxProperties``; ``set`` and ``frozenset`` add ``uniqueItems`` (the JSON Schema compiler
  refuses it unless the items have few values, or ``approximate={"uniqueItems"}``).
- ``Literal`` and enums are ``enum`` of their (JSON) values; unions are ``anyOf``.
"""

from __future__ import annotations

import enum
from decimal import Decimal
from typing import Any

from ...errors import Unsupported
from .model import Bounds, Choice, FixedTuple, Mapping, Node, Record, Scalar, Sequence, Union
from ..json_schema.strings import declare_library_pattern
from .scalars import ISO_PATTERNS

__all__ = ["to_schema"]

#: the pattern of each ISO scalar kind, as written into schemas (their contents are built once
#: per process by the JSON Schema front end, like a format's)
_ISO_SCHEMA_PATTERNS = {kind: f"^{pattern}$" for kind, pattern in ISO_PATTERNS.items()}
for _pattern in _ISO_SCHEMA_PATTERNS.values():
    declare_library_pattern(_pattern)


def to_schema(root: Node) -> dict:
    """The JSON Schema of the type tree ``root``.

    >>> from typing import Annotated, Optional
    >>> from annotated_types import Ge
    >>> from tokamata.limits import Limits
    >>> from tokamata.syntax.types.model import describe
    >>> to_schema(describe(Optional[Annotated[int, Ge(0)]], Limits()))
    {'anyOf': [{'type': 'integer', 'minimum': 0}, {'type': 'null'}]}
    """
    builder = _Builder()
    schema = builder.node(root)
    if builder.defs:
        schema = {**schema, "$defs": builder.defs}
    return schema


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def _bounds(bounds: Bounds, counted: str | None = None) -> dict:
    out: dict[str, Any] = {}
    for name, keyword in (("ge", "minimum"), ("gt", "exclusiveMinimum"), ("le", "maximum"),
                          ("lt", "exclusiveMaximum"), ("multiple_of", "multipleOf")):
        value = getattr(bounds, name)
        if value is not None:
            out[keyword] = _number(value)
    low, high = {"str": ("minLength", "maxLength"), "items": ("minItems", "maxItems"),
                 "properties": ("minProperties", "maxProperties")}[counted or "str"]
    if bounds.min_length is not None:
        out[low] = bounds.min_length
    if bounds.max_length is not None:
        out[high] = bounds.max_length
    if bounds.pattern is not None:
        out["pattern"] = bounds.pattern
    return out


class _Builder:
    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}
        self.done: set[int] = set()

    def node(self, node: Node) -> dict:
        if isinstance(node, Scalar):
            return self.scalar(node)
        if isinstance(node, Choice):
            values = [v.value if isinstance(v, enum.Enum) else v for v in node.values]
            return {"enum": values}
        if isinstance(node, Union):
            return {"anyOf": [self.node(o) for o in node.options]}
        if isinstance(node, Sequence):
            schema = {"type": "array", "items": self.node(node.item), **_bounds(node.bounds, "items")}
            if node.kind in ("set", "frozenset"):
                schema["uniqueItems"] = True
            return schema
        if isinstance(node, FixedTuple):
            n = len(node.items)
            schema = {"type": "array", "items": False, "minItems": n, "maxItems": n}
            if n:
                schema["prefixItems"] = [self.node(i) for i in node.items]
            return schema
        if isinstance(node, Mapping):
            schema = {"type": "object", "additionalProperties": self.node(node.value),
                      **_bounds(node.bounds, "properties")}
            if node.key.bounds != Bounds():
                schema["propertyNames"] = self.scalar(node.key)
            return schema
        assert isinstance(node, Record)
        if id(node) not in self.done:
            self.done.add(id(node))
            self.defs[node.name] = self.record(node)
        return {"$ref": f"#/$defs/{node.name}"}

    def scalar(self, node: Scalar) -> dict:
        kind = node.kind
        if kind in ISO_PATTERNS:
            return {"type": "string", "pattern": _ISO_SCHEMA_PATTERNS[kind]}
        base = {"int": "integer", "float": "number", "decimal": "number", "str": "string", "bool": "boolean",
                "none": "null"}[kind]
        return {"type": base, **_bounds(node.bounds)}

    def record(self, node: Record) -> dict:
        if node.kind == "pydantic":
            return self.pydantic(node)
        if node.kind == "namedtuple":
            items = [self.node(f.node) for f in node.fields]
            required = sum(1 for f in node.fields if f.required)
            schema: dict[str, Any] = {"type": "array", "items": False, "minItems": required,
                                      "maxItems": len(items)}
            if items:
                schema["prefixItems"] = items
            return schema
        return {"type": "object", "properties": {f.key: self.node(f.node) for f in node.fields},
                "required": [f.key for f in node.fields if f.required], "additionalProperties": False}

    def pydantic(self, node: Record) -> dict:
        schema = node.cls.model_json_schema(by_alias=True, ref_template="#/$defs/{model}",  # type: ignore[attr-defined]
                                            schema_generator=_generator())
        for name, sub in schema.pop("$defs", {}).items():
            if name in self.defs and self.defs[name] != sub:
                raise Unsupported(name, "two classes of this name in one type (pydantic names its "
                                  "definitions by class name)", path=node.path)
            self.defs.setdefault(name, sub)
        ref = schema.get("$ref")
        if isinstance(ref, str) and len(schema) == 1 and ref.startswith("#/$defs/"):
            return self.defs[ref[len("#/$defs/"):]]  # (a recursive model: pydantic's body is a definition)
        return schema


_GENERATOR: list[type] = []


def _generator() -> type:
    """pydantic's JSON Schema generator with this module's scalars (made once, on first use:
    pydantic is imported only when a pydantic model is compiled)."""
    if _GENERATOR:
        return _GENERATOR[0]
    from pydantic.json_schema import GenerateJsonSchema

    def pattern(kind: str):
        def method(self, schema):
            return {"type": "string", "pattern": _ISO_SCHEMA_PATTERNS[kind]}
        return method

    def decimal_schema(self, schema):
        out: dict[str, Any] = {"type": "number"}
        for key, keyword in (("ge", "minimum"), ("gt", "exclusiveMinimum"), ("le", "maximum"),
                             ("lt", "exclusiveMaximum"), ("multiple_of", "multipleOf")):
            if schema.get(key) is not None:
                out[keyword] = _number(Decimal(str(schema[key])))
        return out

    def default_schema(self, schema):
        # the schema of a field with a default, without the "default" annotation: the grammar
        # never reads it, and pydantic encodes each default through a new TypeAdapter (about a
        # tenth of compile_type's time on tool-call models)
        return self.generate_inner(schema["schema"])

    def sort(self, value, parent_key=None):
        # pydantic's override point for its alphabetical key sort (a copy of every dict of the
        # schema): key order means nothing to the compiler, and "properties" keep field order
        return value

    functions: dict = {}  # core schema type -> the generator's (unbound) method for it

    class Methods(dict):
        """pydantic's table of methods by core schema type, bound on first use: pydantic
        builds the whole table for every generator (a hundred ``getattr`` after an
        introspection of the type names), where a model uses a few of them."""

        def __init__(self, generator):
            super().__init__()
            self.generator = generator

        def __missing__(self, key):
            method = self[key] = functions[key].__get__(self.generator)
            return method

    def build_schema_type_to_method(self):
        if not functions:
            functions.update((key, method.__func__)
                             for key, method in GenerateJsonSchema.build_schema_type_to_method(self).items())
        return Methods(self)

    generator = type("TokamataJsonSchema", (GenerateJsonSchema,), {
        "datetime_schema": pattern("datetime"), "date_schema": pattern("date"), "time_schema": pattern("time"),
        "uuid_schema": pattern("uuid"), "decimal_schema": decimal_schema, "default_schema": default_schema,
        "build_schema_type_to_method": build_schema_type_to_method, "sort": sort})
    _GENERATOR.append(generator)
    return generator
