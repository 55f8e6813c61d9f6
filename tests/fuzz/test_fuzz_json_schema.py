"""Fuzzing ``compile_json_schema``: random schemas built from a vocabulary of keywords (types,
bounds, strings and patterns, arrays, objects, combinators, ``$ref``/``$defs``, formats, junk
values of the wrong type), random options (whitespace, spelling, strict, property order,
approximate, indent), and byte-level mutations of the JSON text of the schemas of
``tests/unit/test_json_schema_front_end.py``'s ``TABLE`` and ``ERRORS``.

Checked for every input, in a capped worker process (``fuzz_harness``): compiling returns a
constraint or raises a :class:`tokamata.TokamataError`, within the worker's time and memory
caps and without crashing; a constraint that compiled passes ``fuzz_checks.walk`` (mask and
``consume`` agree, no live matcher is stuck), and a walk that ends with EOS produced JSON
text (``json.loads`` reads it).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import tokamata
from fuzz_checks import LIMITS, VOCAB, walk
from fuzz_harness import as_text, fuzz_settings, mutated, unit_table

# ------------------------------------------------------------------ the worker side


def _is_json(output: bytes) -> None:
    json.loads(output.decode("utf-8"))


def nested(key: str, depth: int) -> dict[str, Any]:
    """``{key: {key: ... {}}}``, ``depth`` levels (``properties`` nests through a member ``a``);
    built here, in the worker: a pickle of it would recurse as deep."""
    schema: dict[str, Any] = {}
    for _ in range(depth):
        schema = {key: {"a": schema}} if key == "properties" else {key: [schema]} if key == "allOf" else {key: schema}
    return schema


def run_input(value: tuple[Any, dict[str, Any], int]) -> str:
    schema, options, seed = value
    if isinstance(schema, tuple):  # ("nested", key, depth, as_text)
        _, key, depth, as_text = schema
        schema = nested(key, depth)
        if as_text:
            schema = json.dumps(schema) if depth < 500 else _deep_text(key, depth)
    try:
        constraint = tokamata.compile_json_schema(schema, VOCAB, limits=LIMITS, **options)
    except tokamata.TokamataError as e:
        return f"error {type(e).__name__}"
    return walk(constraint, seed, output_check=_is_json)


# ------------------------------------------------------------------ inputs

_TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]
_NUMBERS = st.one_of(st.integers(-5, 20), st.sampled_from([0.5, -1.25, 1e300, 10**20, 1e-9, 2**63, -(2**64)]),
                     st.floats(allow_nan=False, allow_infinity=False, width=32))
_COUNTS = st.one_of(st.integers(0, 4), st.sampled_from([10, 100, 10**9, 10**18, -1]))
_PATTERNS = ["^a+$", "[0-9]{2}", "^(ab|cd)*$", "é", ".*", "^\\w+$", "(", "\\p{L}", "^a{1000}$", "\\d+$", "(?i)x",
             "[^\\s]", "a|"]
_FORMATS = ["date", "date-time", "time", "email", "uuid", "ipv4", "ipv6", "uri", "hostname", "regex", "duration",
            "no-such-format"]
_NAMES = ["a", "b", "é", "", "$ref", "0", "a b"]
_JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.5, 1e20]), st.text("ab\"é\\", max_size=3)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(_NAMES), inner, max_size=3)),
    max_leaves=8)


def _keyword(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[str, Any]]:
    pair = lambda name, values: st.tuples(st.just(name), values)  # noqa: E731
    return st.one_of(
        pair("type", st.one_of(st.sampled_from(_TYPES), st.lists(st.sampled_from(_TYPES), max_size=3), st.just("x"))),
        pair("enum", st.lists(_JSON_VALUES, max_size=4)),
        pair("const", _JSON_VALUES),
        *[pair(k, _NUMBERS) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")],
        *[pair(k, _COUNTS) for k in ("minLength", "maxLength", "minItems", "maxItems", "minProperties",
                                     "maxProperties", "minContains", "maxContains")],
        pair("pattern", st.sampled_from(_PATTERNS)),
        pair("format", st.sampled_from(_FORMATS)),
        pair("items", st.one_of(inner, st.booleans())),
        pair("prefixItems", st.lists(inner, max_size=3)),
        pair("contains", inner),
        pair("uniqueItems", st.booleans()),
        pair("properties", st.dictionaries(st.sampled_from(_NAMES), inner, max_size=3)),
        pair("patternProperties", st.dictionaries(st.sampled_from(_PATTERNS), inner, max_size=2)),
        pair("additionalProperties", st.one_of(inner, st.booleans())),
        pair("propertyNames", inner),
        pair("required", st.lists(st.sampled_from(_NAMES), max_size=3)),
        pair("dependentRequired", st.dictionaries(st.sampled_from(_NAMES), st.lists(st.sampled_from(_NAMES), max_size=2),
                                                  max_size=2)),
        *[pair(k, st.lists(inner, min_size=1, max_size=3)) for k in ("anyOf", "oneOf", "allOf")],
        pair("not", inner),
        pair("if", inner), pair("then", inner), pair("else", inner),
        pair("$ref", st.sampled_from(["#", "#/$defs/a", "#/$defs/b", "#/properties/a", "#/$defs/missing",
                                       "other.json", "#/$defs/a/items"])),
        pair("$defs", st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)),
        pair("$schema", st.sampled_from(["https://json-schema.org/draft/2020-12/schema",
                                         "http://json-schema.org/draft-07/schema#", "nope"])),
        pair("default", _JSON_VALUES),
        pair("unknownKeyword", _JSON_VALUES),
        # the wrong type for a keyword
        st.tuples(st.sampled_from(["properties", "items", "minimum", "required", "enum", "anyOf", "pattern",
                                   "type", "$ref", "not"]), _JSON_VALUES),
    )


def _schema(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.builds(dict, st.lists(_keyword(inner), max_size=5))


schemas = st.recursive(st.one_of(st.booleans(), st.just({}), st.builds(dict, st.lists(_keyword(st.just({})), max_size=3))),
                       _schema, max_leaves=12)

options = st.fixed_dictionaries({}, optional={
    "whitespace": st.sampled_from(["compact", "flexible", "pretty", "nope"]),
    "spelling": st.sampled_from(["natural", "any", "nope"]),
    "strict": st.booleans(),
    "property_order": st.sampled_from(["schema", "any", "x"]),
    "approximate": st.sampled_from([frozenset(), frozenset({"format"}), frozenset({"uniqueItems", "pattern"})]),
    "ignore_unknown_formats": st.booleans(),
    "indent": st.sampled_from([0, 2, 8, -1, 10**6]),
    "max_whitespace": st.sampled_from([0, 3, 20, -1, 10**6]),
})

def _deep_text(key: str, depth: int) -> str:
    opening = {"properties": '{"properties": {"a": ', "allOf": '{"allOf": ['}.get(key, '{"%s": ' % key)
    closing = {"properties": "}}", "allOf": "]}"}.get(key, "}")
    return opening * depth + "{}" + closing * depth


#: ("nested", keyword, depth, as JSON text): a schema nested through one keyword
deep_schemas = st.tuples(st.just("nested"),
                         st.sampled_from(["not", "items", "contains", "additionalProperties", "propertyNames",
                                          "properties", "allOf"]),
                         st.one_of(st.integers(1, 3000), st.just(20_000)), st.booleans())

_SEEDS = [json.dumps(row[0]).encode() for row in unit_table("test_json_schema_front_end", "TABLE")] + [
    json.dumps(row[0]).encode() for row in unit_table("test_json_schema_front_end", "ERRORS")
    if not isinstance(row[0], str)]

# ------------------------------------------------------------------ tests


@fuzz_settings(100)
@given(schema=schemas, options=options, seed=st.integers(0, 2**32 - 1))
def test_structured_schemas(worker, schema: Any, options: dict[str, Any], seed: int) -> None:
    worker.run((schema, options, seed))


@fuzz_settings(10, shrink=False)
@given(schema=deep_schemas, seed=st.integers(0, 2**32 - 1))
def test_deep_schemas(worker, schema: tuple[str, str, int, bool], seed: int) -> None:
    worker.run((schema, {}, seed))


@fuzz_settings(80)
@given(data=mutated(_SEEDS), surrogates=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_mutated_schema_texts(worker, data: bytes, surrogates: bool, seed: int) -> None:
    worker.run((as_text(data, surrogates), {}, seed))
