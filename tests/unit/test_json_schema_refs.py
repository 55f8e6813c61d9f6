"""JSON Schema references across documents (``registry``) and ``$dynamicRef``: tables of
(schema, registry, valid instances, invalid instances), each row also judged by
``jsonschema`` with the same documents in a ``referencing`` registry, and the errors for what
is not registered or does not resolve.

The grammar is run by the real engine over a byte-level vocabulary (one token per byte), so a
row fails if any valid instance is refused at some byte or any invalid one is accepted.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import referencing
import referencing.jsonschema

import tokamata
from natural_json import natural_dumps

BYTES = tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])
EX = "https://example.com/"
DRAFT7 = "http://json-schema.org/draft-07/schema#"

TREE = {"$id": EX + "tree.json", "$dynamicAnchor": "node", "type": "object",
        "properties": {"data": True, "children": {"type": "array", "items": {"$dynamicRef": "#node"}}}}
GENERIC_LIST = {"$id": EX + "list.json", "type": "array", "items": {"$dynamicRef": "#item"},
                "$defs": {"default": {"$dynamicAnchor": "item"}}}

# (schema, registry, valid values, invalid values)
TABLE = [
    # a whole registered document; a JSON pointer and an anchor into one
    ({"$ref": EX + "int.json"}, {EX + "int.json": {"type": "integer"}}, [1, -3, 2.0], ["1", 1.5, None]),
    ({"properties": {"a": {"$ref": EX + "defs.json#/$defs/short"}}},
     {EX + "defs.json": {"$defs": {"short": {"type": "string", "maxLength": 2}}}},
     [{}, {"a": "ab"}, {"b": 1}], [{"a": "abc"}, {"a": 1}]),
    ({"items": {"$ref": EX + "anchors.json#pos"}},
     {EX + "anchors.json": {"$defs": {"p": {"$anchor": "pos", "type": "integer", "minimum": 1}}}},
     [[], [1, 7]], [[0], [1, "x"]]),
    # relative references: against the schema's $id, the registered document's own $id, and
    # its retrieval URI when it has none
    ({"$id": EX + "dir/root.json", "$ref": "int.json"}, {EX + "dir/int.json": {"type": "integer"}}, [5], ["5"]),
    ({"$ref": EX + "alias.json"},
     {EX + "alias.json": {"$id": EX + "real/doc.json", "$ref": "#/$defs/s", "$defs": {"s": {"type": "string"}}}},
     ["x"], [1]),
    ({"$ref": EX + "a/outer.json"},
     {EX + "a/outer.json": {"properties": {"x": {"$ref": "inner.json"}}}, EX + "a/inner.json": {"type": "null"}},
     [{"x": None}, {}], [{"x": 0}]),
    # a registered document that refers to itself (recursion through a member)
    ({"$ref": EX + "nested.json"},
     {EX + "nested.json": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"$ref": "#"}]}}},
     [[], [1, [2, [3]]]], [["x"], [1, [None]]]),
    # an embedded resource of a registered document, by its own $id
    ({"$ref": EX + "embedded/bool.json"},
     {EX + "holder.json": {"$defs": {"b": {"$id": EX + "embedded/bool.json", "type": "boolean"}}}},
     [True, False], [0, "true"]),
    # draft 7 documents: $id plain-name fragments are anchors
    ({"$schema": DRAFT7, "$ref": EX + "d7.json#num"},
     {EX + "d7.json": {"definitions": {"n": {"$id": "#num", "type": "number"}}}}, [1.5], ["x"]),
    # $dynamicRef: the outermost $dynamicAnchor in the dynamic scope wins
    ({"$id": EX + "strict-tree.json", "$dynamicAnchor": "node", "$ref": "tree.json",
      "unevaluatedProperties": False},
     {EX + "tree.json": TREE},
     [{"children": [{"data": 1}]}, {"data": [], "children": [{"children": []}]}],
     [{"children": [{"daat": 1}]}, {"x": 1}, {"children": [{"children": [{"dat": 0}]}]}]),
    ({"$ref": EX + "tree.json"}, {EX + "tree.json": TREE},
     [{"children": [{"daat": 1}]}], [{"children": [1]}]),
    ({"$id": EX + "ints.json", "$ref": "list.json", "$defs": {"i": {"$dynamicAnchor": "item", "type": "integer"}}},
     {EX + "list.json": GENERIC_LIST}, [[], [1, 2]], [["a"], [1.5]]),
    ({"$ref": EX + "list.json"}, {EX + "list.json": GENERIC_LIST}, [[], [1, "a", None]], [{}]),
    # two dynamic scopes reaching the same $dynamicRef
    ({"$id": EX + "pair.json", "type": "object",
      "properties": {"ints": {"$ref": "ints.json"}, "strs": {"$ref": "strs.json"}},
      "$defs": {"ints": {"$id": "ints.json", "$ref": "list.json",
                         "$defs": {"i": {"$dynamicAnchor": "item", "type": "integer"}}},
                "strs": {"$id": "strs.json", "$ref": "list.json",
                         "$defs": {"s": {"$dynamicAnchor": "item", "type": "string"}}}}},
     {EX + "list.json": GENERIC_LIST},
     [{"ints": [1], "strs": ["a"]}, {}], [{"ints": ["a"]}, {"strs": [1]}]),
    # the initial target has no matching $dynamicAnchor: a plain $ref
    ({"$id": EX + "m.json", "$dynamicAnchor": "item", "type": "array", "$ref": "plain.json"},
     {EX + "plain.json": {"items": {"$dynamicRef": "#item"}, "$defs": {"x": {"$anchor": "item", "type": "null"}}}},
     [[], [None]], [[1], [[]]]),
]


def oracle_valid(schema, registry, value) -> bool:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    spec = referencing.jsonschema.specification_with(cls.META_SCHEMA["$schema"])
    resources = referencing.Registry().with_resources(
        (uri, referencing.Resource.from_contents(doc, default_specification=spec)) for uri, doc in registry.items())
    return cls(schema, registry=resources).is_valid(value)


def accepts(constraint, value, natural: bool = True) -> bool:
    """Whether ``constraint`` accepts ``value`` in natural spelling (the default's), or as
    ``json.dumps`` writes it."""
    matcher = constraint.matcher()
    text = (natural_dumps(value) if natural else json.dumps(value, separators=(",", ":"), ensure_ascii=False)).encode()
    return all(matcher.consume(b) for b in text) and matcher.is_accepting()


@pytest.mark.parametrize("schema,registry,valid,invalid", TABLE, ids=[json.dumps(r[0])[:60] for r in TABLE])
def test_table(schema, registry, valid, invalid):
    constraint = tokamata.compile_json_schema(schema, BYTES, registry=registry, property_order="any")
    for value in valid:
        assert oracle_valid(schema, registry, value), f"table wrong: jsonschema rejects {value!r}"
        assert accepts(constraint, value), (schema, value)
    for value in invalid:
        assert not oracle_valid(schema, registry, value), f"table wrong: jsonschema accepts {value!r}"
        assert not accepts(constraint, value), (schema, value)


def test_registry_documents_are_only_read_when_referenced():
    registry = {EX + "unused.json": {"$schema": "https://example.com/unknown-meta", "type": "null"},
                EX + "int.json": {"type": "integer"}}
    constraint = tokamata.compile_json_schema({"$ref": EX + "int.json"}, BYTES, registry=registry)
    assert accepts(constraint, 3) and not accepts(constraint, None)


ERRORS = [
    # nothing is fetched: an unregistered document is Unsupported, naming the pointer
    ({"properties": {"a": {"$ref": EX + "missing.json"}}}, {EX + "int.json": {"type": "integer"}},
     tokamata.Unsupported, "$ref at /properties/a/$ref"),
    ({"$ref": "https://json-schema.org/draft/2020-12/schema"}, None, tokamata.Unsupported, "$ref at /$ref"),
    # a registered document's own errors name their place in it
    ({"$ref": EX + "bad.json"}, {EX + "bad.json": {"properties": {"x": {"type": "strange"}}}},
     tokamata.SchemaError, EX + "bad.json#/properties/x/type"),
    ({"$ref": EX + "int.json#/$defs/nothing"}, {EX + "int.json": {"type": "integer"}},
     tokamata.SchemaError, "does not resolve"),
    ({"$ref": EX + "int.json#nope"}, {EX + "int.json": {"type": "integer"}}, tokamata.SchemaError, "no anchor"),
    ({"$ref": EX + "d7.json"}, {EX + "d7.json": {"$schema": DRAFT7, "type": "integer"}},
     tokamata.Unsupported, "drafts are not mixed"),
    ({"$ref": EX + "meta.json"}, {EX + "meta.json": {"$schema": "https://example.com/unknown-meta"}},
     tokamata.Unsupported, "unknown meta-schema"),
    # an embedded $schema of another draft (draft 4's "integer" refuses 1.0) is not read as ours
    ({"$schema": "https://json-schema.org/draft/2020-12/schema",
      "$defs": {"e": {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}},
      "$ref": "#/$defs/e"}, None, tokamata.Unsupported, "$schema at /$defs/e"),
    # a root without $schema whose embedded declarations disagree: no draft to read it in
    ({"$defs": {"e": {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"},
                "f": {"$schema": DRAFT7, "type": "integer"}}}, None, tokamata.Unsupported, "drafts are not mixed"),
    ({"$ref": "int.json"}, {"int.json": {"type": "integer"}}, tokamata.InvalidArgument, "absolute URIs"),
]


@pytest.mark.parametrize("schema,registry,error,fragment", ERRORS, ids=[r[3] for r in ERRORS])
def test_errors(schema, registry, error, fragment):
    with pytest.raises(error) as info:
        tokamata.compile_json_schema(schema, BYTES, registry=registry)
    assert fragment in str(info.value)


DRAFT4 = "http://json-schema.org/draft-04/schema#"
# A root without $schema is read in the draft its embedded declarations agree on (many draft-4
# documents declare it only in their definitions); (schema, valid, invalid) under draft 4.
INFERRED_DRAFT_TABLE = [
    ({"definitions": {"n": {"$schema": DRAFT4, "type": "integer", "maximum": 5, "exclusiveMaximum": True}},
      "properties": {"n": {"$ref": "#/definitions/n"}}},
     [{"n": 4}, {"n": -2}, {}], [{"n": 5}, {"n": 1.0}, {"n": 4.5}]),
    ({"type": "object", "properties": {"a": {"$schema": DRAFT4, "id": "http://example.com/a.json", "type": "string"},
                                       "b": {"$ref": "http://example.com/a.json"}}},
     [{"a": "x", "b": "y"}], [{"b": 1}]),
]


@pytest.mark.parametrize("schema,valid,invalid", INFERRED_DRAFT_TABLE, ids=[json.dumps(r[0])[:50] for r in INFERRED_DRAFT_TABLE])
def test_root_without_schema_takes_the_draft_of_its_embedded_declarations(schema, valid, invalid):
    # (draft 4's integers are a matter of spelling, 1.0 is none: every spelling is allowed)
    constraint = tokamata.compile_json_schema(schema, BYTES, property_order="any", spelling="any")
    oracle = jsonschema.Draft4Validator(schema)
    for value in valid:
        assert oracle.is_valid(value), f"table wrong: jsonschema rejects {value!r}"
        assert accepts(constraint, value, natural=False), (schema, value)
    for value in invalid:
        assert not oracle.is_valid(value), f"table wrong: jsonschema accepts {value!r}"
        assert not accepts(constraint, value, natural=False), (schema, value)


def test_a_default_draft_given_by_the_caller_is_not_overridden():
    from tokamata.syntax.json_schema import schema_to_grammar
    schema = INFERRED_DRAFT_TABLE[0][0]
    with pytest.raises(tokamata.Unsupported, match="drafts are not mixed"):
        schema_to_grammar(schema, default_draft="2020-12")


META = "https://json-schema.org/draft/2020-12/schema"
VOCAB = "https://json-schema.org/draft/2020-12/vocab/"


def meta(*vocabularies: str, **extra: bool) -> dict:
    return {"$schema": META, "$vocabulary": {**{VOCAB + v: True for v in vocabularies}, **extra}}


# (meta-schema, schema keywords, valid, invalid): a registered meta-schema's $vocabulary decides
# which keywords count (jsonschema does not implement $vocabulary: no oracle here)
VOCABULARY_TABLE = [
    (meta("core", "applicator"), {"properties": {"a": False, "n": {"minimum": 10}}, "type": "string"},
     [{"n": 1}, 5, {}], [{"a": 1}]),
    (meta("core", "validation", **{"https://example.com/vocab/custom": False}),
     {"type": ["number", "object", "string"], "properties": {"a": False}, "format": "date"},
     [20, 1.5, {"a": 1}, "x"], [None, []]),
    (meta("core", "applicator", "validation", "format-annotation"), {"type": "string", "format": "date"},
     ["2020-01-01"], ["x", 1]),
    ({"$schema": META}, {"type": "integer", "minimum": 0}, [0, 3], [-1, "3"]),  # no $vocabulary: all of them
]


@pytest.mark.parametrize("metaschema,keywords,valid,invalid", VOCABULARY_TABLE,
                         ids=[json.dumps(r[1])[:50] for r in VOCABULARY_TABLE])
def test_registered_meta_schema_vocabularies(metaschema, keywords, valid, invalid):
    registry = {EX + "meta.json": metaschema}
    constraint = tokamata.compile_json_schema({"$schema": EX + "meta.json", **keywords}, BYTES, registry=registry)
    assert all(accepts(constraint, v) for v in valid)
    assert not any(accepts(constraint, v) for v in invalid)


VOCABULARY_ERRORS = [
    (meta("core", "applicator", **{"https://example.com/vocab/custom": True}), "unknown vocabulary"),
    ({"$schema": "http://json-schema.org/draft-07/schema#"}, "not a 2020-12 dialect"),
]


@pytest.mark.parametrize("metaschema,fragment", VOCABULARY_ERRORS, ids=[r[1] for r in VOCABULARY_ERRORS])
def test_meta_schema_errors(metaschema, fragment):
    with pytest.raises(tokamata.Unsupported, match=fragment):
        tokamata.compile_json_schema({"$schema": EX + "meta.json"}, BYTES, registry={EX + "meta.json": metaschema})


def test_dialects_are_not_mixed():
    registry = {EX + "meta.json": meta("core", "applicator"), EX + "other.json": {"$schema": META, "type": "null"}}
    with pytest.raises(tokamata.Unsupported, match="dialects are not mixed"):
        tokamata.compile_json_schema({"$schema": EX + "meta.json", "$ref": EX + "other.json"}, BYTES,
                                     registry=registry)


def test_unsupported_remote_reference_carries_keyword_and_pointer():
    with pytest.raises(tokamata.Unsupported) as info:
        tokamata.compile_json_schema({"items": {"$ref": EX + "x.json"}}, BYTES)
    assert (info.value.keyword, info.value.pointer) == ("$ref", "/items/$ref")


SUITE = Path(__file__).resolve().parents[3] / "shared" / "data" / "json-schema-test-suite" / "tests"


def _suite_schemas() -> list:
    if not SUITE.is_dir():
        pytest.skip(f"JSON-Schema-Test-Suite not found at {SUITE} (../shared/data, see ../shared/README.md)")
    schemas = []
    for path in sorted(SUITE.glob("draft*/**/*.json")):
        for group in json.loads(path.read_text(encoding="utf-8")):
            schemas.append((path.parent.name, group["schema"]))
    return schemas


def _same_document(schema, text: str) -> None:
    from tokamata.errors import TokamataError
    from tokamata.syntax.json_schema.refs import Document

    try:
        walked = Document(schema)
    except TokamataError as error:
        with pytest.raises(type(error)):
            Document(schema, text=text)
        return
    read = Document(schema, text=text)
    assert (read.draft, read.resources, read.anchors, read.dynamic_anchors, read.recursive_anchors) == \
        (walked.draft, walked.resources, walked.anchors, walked.dynamic_anchors, walked.recursive_anchors)
    for path in walked.bases:  # every location: the same base and resource root
        assert read.base(path) == walked.base(path)
        assert read._nearest(read.roots, path) == walked.roots[path]


def test_document_from_text_equals_the_walked_document() -> None:
    """Given the schema's text, a document that declares no identifier, anchor or embedded
    dialect skips its walk; on every schema of the JSON-Schema-Test-Suite (every draft) it is
    the walked document, as are ones built from texts that hide keywords in escapes."""
    schemas = _suite_schemas()
    skipped = 0
    for _, schema in schemas:
        text = json.dumps(schema, ensure_ascii=False)
        _same_document(schema, text)
        skipped += "$id" not in text and '"id"' not in text
        # a keyword spelled with an escape is still found (the text is walked)
        _same_document(schema, text.replace('"$', '"\\u0024'))
    assert skipped > 100  # the shortcut is exercised
