"""Python types as constraints: a type -> a grammar (through JSON Schema, or a Python call
grammar of its own) and a parser that reads the text back into an instance.

Kinds: ``@dataclass`` (fields with a default or ``default_factory`` may be left out),
pydantic v2 ``BaseModel`` (aliases, ``Field`` bounds, discriminated unions), ``TypedDict``
(``total=False``, ``Required``/``NotRequired``), ``NamedTuple``, ``Enum``/``IntEnum``/
``StrEnum`` (values str, int, float, bool or None), ``Literal``, ``Optional``/``Union``/
``X | Y``, ``list``/``tuple`` (fixed and ``tuple[T, ...]``)/``set``/``frozenset``/
``dict[str, T]``, ``int``/``float``/``str``/``bool``/``None``, ``Decimal``,
``datetime``/``date``/``time``/``UUID``, ``Annotated`` with ``annotated_types`` bounds (or a
pydantic ``Field``), nested and recursive classes.

Modules, in pipeline order:

- :mod:`.model`: the type -> a type tree (errors with the ``path``; recursion checked).
- :mod:`.schema`: the tree -> JSON Schema (``syntax="json"``), compiled by the JSON Schema
  front end, so every bound is exact there.
- :mod:`.python_grammar`: the tree -> grammar IR for ``syntax="python"`` (constructor calls).
- :mod:`.values`: what a reader read -> the instance (the one converter), and :func:`fits`.
- :mod:`.json_text`, :mod:`.python_text`: each syntax's writer and reader.

How ``Constraint.parse`` is wired (the choice, argued): the one
:class:`~tokamata.Constraint` gets an optional ``value_parser`` (a callable from text to a
value) that the front door :func:`tokamata.compile_type` sets, and ``Constraint.parse``
calls it. A subclass or a wrapper would be a second constraint type that every integration
and ``isinstance`` check would have to know; a parser is data about the constraint's
language, like ``source`` or ``approximations``, and constraints from other front doors
simply have none (their ``parse`` raises ``InvalidArgument``). The parser closes over the
type tree only; it holds no reference back to the constraint.
"""

from __future__ import annotations

from .json_text import dump_json, parse_json
from .model import describe
from .schema import to_schema

__all__ = ["describe", "to_schema", "dump_json", "parse_json"]
