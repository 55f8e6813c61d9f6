"""JSON Schema -> grammar IR: exact where automata allow, refused where they do not.

``schema_to_grammar(schema, limits)`` returns a :class:`~tokamata.grammar.ir.Grammar` whose
language is the set of JSON texts (in the chosen whitespace layout) valid against the schema,
and a :class:`Report` of the approximations made (JSON pointers). The pipeline:

- :mod:`.bounds`: the documents (schema and registry) as given, before any walk: nesting
  depth (``Limits.max_json_depth``), size written out (``Limits.max_json_values``), no cycle
  of Python objects (:class:`~tokamata.SchemaError`). The whole compile runs under one
  deadline (``Limits.max_compile_seconds``, :mod:`tokamata.deadline`).
- :mod:`.refs`: the document, drafts 4 to 2020-12 (``$schema`` decides), ``$id``/anchors,
  ``$ref`` resolution, ``$dynamicRef`` through the dynamic scope. Remote references resolve
  only into the caller's ``registry`` (absolute URI -> schema document; nothing is ever
  fetched); any other is :class:`~tokamata.Unsupported`.
- :mod:`.expand`: each subschema -> a :class:`~.nodes.Node` (the set of values by type);
  ``allOf``/``not``/``oneOf``/``if`` are intersections and complements.
- :mod:`.numbers`, :mod:`.strings`, :mod:`.formats`: exact byte languages of scalar tokens
  (digit-range automata, divisibility, patterns with search semantics, RFC formats).
- :mod:`.emit`: nodes -> BNF rules (objects and arrays as counted member sequences).

Semantics chosen where the specification leaves room (each also in the module docstrings):

- ``spelling="natural"`` (the default) allows one spelling per value
  (:mod:`tokamata.syntax.json_spelling`: strings as ``json.dumps(value, ensure_ascii=False)``
  writes them, numbers in shortest plain decimal); the languages below are built with every
  spelling and intersected with the natural ones once, per value terminal and per key, which
  is exact because they are closed under spelling. ``spelling="any"`` keeps every spelling
  described below.

- ``format`` is always asserted; an unknown format is refused unless
  ``ignore_unknown_formats``.
- ``strict=True`` makes an absent ``additionalProperties`` false in every schema that has
  ``properties`` (as OpenAI's structured outputs do); otherwise it is true.
- Members are generated in schema order (``property_order="schema"``); optional ones may be
  left out. Undeclared members (``additionalProperties``/``patternProperties``) come last.
  ``property_order="any"`` accepts every order (bounded: at most 12 required members per
  object; an optional member may repeat, each occurrence valid, unless min/max counts or
  ``not``/``oneOf`` witnesses need exact member sets).
- Strings never contain lone surrogates (escaped or not); every spelling of a character
  (raw, short escape, ``\\uXXXX``) is accepted wherever the character is.
- Numbers: ``number`` alone accepts every JSON number; under bounds, ``multipleOf``,
  ``const``/``enum`` or complements, only plain decimal notation (reported as
  ``number-notation``). ``integer`` accepts ``-?(0|[1-9][0-9]*)`` optionally followed by
  ``.0+`` (drafts 6 on; draft 4: no fraction); exponents are left out for integers.
- ``uniqueItems`` is exact when every item position's schema (``prefixItems``, ``items``,
  after ``allOf``/``$ref``) has finitely many values, at most
  ``Limits.max_unique_items_values`` (12) in all: ``enum``, ``const``, ``boolean``, ``null``,
  bounded integers, short closed patterns, arrays and closed objects of such. Equality is
  JSON Schema's (``1`` and ``1.0`` are equal, ``"a"`` and ``"\\u0061"`` too, ``true`` and
  ``1`` are not). Otherwise (an infinite item language, more values, or its complement under
  ``not``) it raises :class:`~tokamata.Unsupported`, or is ignored and reported with
  ``approximate={"uniqueItems"}``.
- Object keys are not checked for duplicates (a grammar cannot: keys are unbounded). Every
  occurrence satisfies its member schema, so a parser keeping the first or the last value
  gets a valid value, except where counts or witnesses see occurrences: ``minProperties``
  met by repeating an undeclared key, or a ``not``/``oneOf`` witness met by an occurrence a
  later duplicate overrides.
"""

from __future__ import annotations

import collections.abc
import json
from typing import Any, Iterable, Mapping, Optional

from ...deadline import compile_deadline
from ...errors import InvalidArgument, LimitExceeded, SchemaError
from ...grammar.ir import Grammar
from ...limits import DEFAULT_LIMITS, Limits
from ..json_spelling import NATURAL_REPORT
from .bounds import check_document, text_within_bounds
from .emit import Emitter
from .expand import Expander
from .refs import Document, draft_number
from .report import APPROXIMATIONS, Approximation, Options, Report

__all__ = ["schema_to_grammar", "Report", "Approximation", "APPROXIMATIONS"]


def schema_to_grammar(schema: Any, limits: Limits | None = None, *, whitespace: str = "compact",
                      spelling: str = "natural", strict: bool = False, approximate: Iterable[str] = frozenset(),
                      ignore_unknown_formats: bool = False, property_order: str = "schema",
                      indent: int = 2, max_whitespace: int = 20,
                      default_draft: int | str | None = None,
                      registry: Optional[Mapping[str, Any]] = None) -> tuple[Grammar, Report]:
    """Compile a JSON Schema (a dict/bool, or its JSON text) to a grammar and a report.

    The root's ``$schema`` selects the draft; ``default_draft`` applies when it is absent.
    Without either, the draft that every embedded ``$schema`` names decides (a draft-4
    document often declares it only in its definitions), else 2020-12.
    ``registry`` maps absolute URIs to schema documents (dicts/bools) that ``$ref`` /
    ``$dynamicRef`` may point to, with their anchors and JSON pointers; a registered document
    is of the schema's draft. Nothing is fetched: a reference to an unregistered document
    raises :class:`~tokamata.Unsupported` naming the keyword and its JSON pointer.

    >>> grammar, report = schema_to_grammar({"type": "integer", "minimum": 1}, spelling="any")
    >>> [str(a) for a in report]
    ['number-notation at /: numbers are generated in plain decimal notation (no exponent)']
    >>> grammar, report = schema_to_grammar({"type": "integer", "minimum": 1})
    >>> [a.kind for a in report]
    ['spelling']
    >>> registry = {"https://example.com/defs.json": {"$defs": {"id": {"type": "integer"}}}}
    >>> grammar, _ = schema_to_grammar({"$ref": "https://example.com/defs.json#/$defs/id"},
    ...                                registry=registry)
    """
    limits = limits or DEFAULT_LIMITS
    with compile_deadline(limits):
        try:
            return _schema_to_grammar(schema, limits, whitespace, spelling, strict, approximate,
                                      ignore_unknown_formats, property_order, indent, max_whitespace, default_draft,
                                      registry)
        except RecursionError:  # (a safety net: check_document bounds every walk's depth)
            raise LimitExceeded("max_json_depth", "more than Python's recursion limit",
                                limits.max_json_depth) from None


def _schema_to_grammar(schema: Any, limits: Limits, whitespace: str, spelling: str, strict: bool,
                       approximate: Iterable[str],
                       ignore_unknown_formats: bool, property_order: str, indent: int, max_whitespace: int,
                       default_draft: int | str | None,
                       registry: Optional[Mapping[str, Any]]) -> tuple[Grammar, Report]:
    if isinstance(approximate, str) or not isinstance(approximate, collections.abc.Iterable):
        raise InvalidArgument(f"approximate must be a set of approximation names, got {approximate!r}")
    if registry is not None and not isinstance(registry, collections.abc.Mapping):
        raise InvalidArgument(f"registry must be a mapping from URI to schema, got {type(registry).__name__}")
    options = Options(whitespace, strict, frozenset(approximate), ignore_unknown_formats, property_order,
                      indent, max_whitespace, spelling)
    if whitespace == "pretty" and indent >= limits.max_dfa_states:
        # one level of indentation is that many lexer states
        raise LimitExceeded("max_dfa_states", indent + 1, limits.max_dfa_states)
    source = ""
    text = schema if isinstance(schema, str) else ""  # (bytes may be UTF-16: not searched as text)
    if isinstance(schema, (str, bytes)):
        source = schema if isinstance(schema, str) else schema.decode("utf-8", "replace")
        try:
            schema = json.loads(schema)
        except RecursionError:
            raise LimitExceeded("max_json_depth", "more than Python's recursion limit",
                                limits.max_json_depth) from None
        except json.JSONDecodeError as error:
            raise SchemaError(f"the schema is not valid JSON: {error.msg}", text=error.doc,
                              span=(error.pos, min(error.pos + 1, len(error.doc)))) from None
        except ValueError as error:  # bytes that are not UTF-8, UTF-16 or UTF-32
            raise SchemaError(f"the schema is not valid JSON: {error}") from None
    if not text or not text_within_bounds(text, limits):  # (else: the walk is skipped)
        check_document(schema, limits)
    for uri, document_value in (registry or {}).items():
        check_document(document_value, limits, f"{uri}#")
    report = Report()
    if options.natural:
        report.add("spelling", "", NATURAL_REPORT)
    # a schema given as data is serialized once, and the text read as a schema given as text
    # is: the document's and the expander's keyword searches (which skip the walk of
    # identifiers, and the dump of the document, when nothing is found) and the grammar's source
    dumped = "" if source else _dumped(schema)
    document = Document(schema, None if default_draft is None else draft_number(default_draft), registry,
                        text or dumped)
    expander = Expander(document, options, limits, report, text or dumped)
    emitter = Emitter(expander, options, limits, report)
    grammar = emitter.build(expander.conj(()), source or dumped[:2000])
    return grammar, report


def _dumped(schema: Any) -> str:
    try:
        return json.dumps(schema)
    except (TypeError, ValueError):
        return ""
