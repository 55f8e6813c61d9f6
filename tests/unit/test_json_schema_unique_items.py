"""``uniqueItems``: exact over finite item languages, refused (or approximated) otherwise.

Every table row is compiled by ``tokamata.compile_json_schema`` and checked on the real Llama 3
tokenizer: an accepted instance's tokens are each allowed by the mask and end accepting; a
rejected one is refused somewhere or does not end accepting. Instances are JSON values
(serialized compactly) or :class:`Text` (exact bytes, for other spellings of one value:
escapes, ``1.0``, ``-0``). The table is about equality across spellings, so it compiles with
``spelling="any"``; the natural spelling (the default) is checked on the same rows with the
JSON values (not the Text ones) in natural spelling. ``jsonschema`` judges every instance first, so a wrong row fails
too. Refusals must name ``uniqueItems`` and the JSON pointer of the schema holding it.
Random walks through the masks of a few schemas must end in instances ``jsonschema`` accepts.
"""

from __future__ import annotations

import json
import random
from decimal import Decimal

import pytest

import tokamata
from mask_walk import random_walk
from natural_json import natural_dumps
from schema_walks import judge, validator
from tokamata.syntax.json_schema import schema_to_grammar


class Text(str):
    """An instance given as its exact JSON text."""


def text_of(instance) -> str:
    if isinstance(instance, Text):
        return str(instance)
    return json.dumps(instance, separators=(",", ":"), ensure_ascii=False)


DRAFT7 = "http://json-schema.org/draft-07/schema#"
COLORS = {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "uniqueItems": True}

# (schema, options, accepted, rejected)
TABLE = [
    # strings: duplicates by value, whatever the spelling
    (COLORS, {}, [[], ["red"], ["red", "green", "blue"], ["blue", "red"], Text('["red","\\u0067reen"]')],
     [["red", "red"], ["red", "green", "red"], ["red", "green", "blue", "red"], Text('["red","\\u0072ed"]'),
      Text('["\\u0072ed","red"]'), Text('["r\\u0065d","\\u0072\\u0065\\u0064"]'), ["yellow"]]),
    ({"type": "array", "items": {"enum": ["a\"b", "a/b", "\n"]}, "uniqueItems": True}, {},
     [["a\"b", "a/b", "\n"], Text('["a\\/b","\\n"]'), Text('["\\u000a","a\\u0022b"]')],
     [Text('["a/b","a\\/b"]'), Text('["\\n","\\u000A"]'), Text('["a\\"b","a\\u0022b"]')]),
    ({"type": "array", "items": {"type": "string", "pattern": "^[a-c]$"}, "uniqueItems": True}, {},
     [["a", "c", "b"], Text('["\\u0061","b"]')], [["a", "b", "a"], Text('["a","\\u0061"]'), ["d"]]),
    # numbers by mathematical value
    ({"type": "array", "items": {"enum": [1, 2.5, 10]}, "uniqueItems": True}, {},
     [[1, 2.5], Text("[1.0,10]"), Text("[2.50,1]"), [10, 2.5, 1]],
     [Text("[1,1.0]"), Text("[2.5,2.50]"), Text("[10,10.000]"), [1, 1], [3]]),
    ({"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 3}, "uniqueItems": True}, {},
     [[3, 1, 2], Text("[1.0,2]")], [Text("[2,2.0]"), [1, 2, 3, 1], [0]]),
    ({"type": "array", "items": {"enum": [0, 1]}, "uniqueItems": True}, {},
     [Text("[-0.0,1]"), [1, 0]], [Text("[0,-0]"), Text("[0.0,0]"), Text("[1,-0,0]")]),
    # booleans and null; true is not 1
    ({"type": "array", "items": {"type": ["boolean", "null"]}, "uniqueItems": True}, {},
     [[True, False, None], [None]], [[True, True], [None, False, None]]),
    ({"type": "array", "items": {"enum": [True, 1, False, 0]}, "uniqueItems": True}, {},
     [[True, 1], [False, 0, True, 1]], [[True, True], Text("[1,1.0]"), [0, False, 0]]),
    # prefixItems + items, draft 7 items array + additionalItems
    ({"type": "array", "prefixItems": [{"enum": ["a", "b"]}, {"enum": ["b", "c"]}], "items": {"enum": ["a", "c", "d"]},
      "uniqueItems": True}, {},
     [["a", "b"], ["b", "c", "a", "d"], ["a", "c", "d"], ["b"]],
     [["b", "b"], ["a", "b", "a"], ["a", "c", "c"], ["a", "b", "d", "d"], ["c"]]),
    ({"$schema": DRAFT7, "items": [{"type": "boolean"}, {"type": "boolean"}], "additionalItems": False,
      "uniqueItems": True}, {},
     [[False, True], [True], []], [[True, True], [False, True, False], [False, True, None]]),
    # minItems / maxItems
    ({"type": "array", "items": {"enum": ["a", "b", "c", "d"]}, "minItems": 2, "maxItems": 3, "uniqueItems": True}, {},
     [["a", "b"], ["d", "c", "a"]], [["a"], [], ["a", "b", "c", "d"], ["a", "a"]]),
    ({"type": "array", "items": {"enum": [1, 2, 3]}, "minItems": 3, "uniqueItems": True}, {},
     [[1, 2, 3], [3, 1, 2]], [[1, 2], [1, 2, 3, 1], [1, 2, 2]]),
    # no array can have 3 distinct items out of 2 values: only the string branch is left
    ({"anyOf": [{"type": "array", "items": {"enum": [1, 2]}, "minItems": 3, "uniqueItems": True},
                {"type": "string"}]}, {},
     ["x"], [[1, 2], [1, 2, 1], [1, 2, 2], [], [1]]),
    # nested arrays: inner arrays compared elementwise, numbers by value
    ({"type": "array", "items": {"type": "array", "items": {"enum": [1, 2]}, "maxItems": 2}, "uniqueItems": True}, {},
     [[[1], [2], [1, 2], []], [[2, 1], [1, 2]], Text("[[1],[1.0,2]]")],
     [[[1], [1]], Text("[[1,2],[1.0,2.0]]"), [[], []], [[1, 1], [2], [1, 1]]]),
    ({"type": "array", "items": {"type": "array", "items": {"enum": ["x", "y"]}, "uniqueItems": True},
      "uniqueItems": True}, {},
     [[["x"], ["x", "y"], ["y", "x"], []]], [[["x", "x"]], [["y"], ["y"]], [["x", "y"], ["x", "y"]]]),
    # closed objects: compared whatever the member order
    ({"type": "array", "items": {"type": "object", "properties": {"k": {"enum": [1, 2]}, "v": {"type": "boolean"}},
                                 "required": ["k"], "additionalProperties": False}, "uniqueItems": True}, {},
     [[{"k": 1}, {"k": 1, "v": True}, {"k": 2}], [{"k": 1, "v": False}, {"k": 1, "v": True}]],
     [[{"k": 1}, {"k": 1}], Text('[{"k":1},{"k":1.0}]'), [{"k": 1, "v": False}, {"k": 1, "v": False}]]),
    ({"type": "array", "items": {"type": "object", "properties": {"k": {"enum": [1, 2]}, "v": {"type": "boolean"}},
                                 "required": ["k"], "additionalProperties": False}, "uniqueItems": True},
     {"property_order": "any"},
     [[{"v": True, "k": 1}, {"k": 1}], [{"k": 2, "v": False}, {"v": True, "k": 2}]],
     [[{"k": 1, "v": True}, {"v": True, "k": 1}], [{"v": False, "k": 2}, {"k": 2, "v": False}]]),
    # contains counts distinct items
    ({"type": "array", "items": {"enum": ["a", "b", "c"]}, "contains": {"const": "a"}, "uniqueItems": True}, {},
     [["a"], ["b", "a", "c"]], [[], ["b", "c"], ["a", "a"]]),
    ({"type": "array", "items": {"enum": ["a", "b", "c", "d"]}, "contains": {"enum": ["a", "b"]}, "minContains": 2,
      "maxContains": 2, "uniqueItems": True}, {},
     [["a", "b"], ["c", "b", "a", "d"]], [["a", "c"], ["a", "a"], ["a", "b", "a"], ["d"]]),
    # the item schema comes from elsewhere: allOf, $ref
    ({"$defs": {"color": {"enum": ["r", "g"]}}, "allOf": [{"uniqueItems": True}], "items": {"$ref": "#/$defs/color"}},
     {}, [["r", "g"], ["g"], 5], [["g", "g"], ["r", "g", "r"]]),
    ({"allOf": [{"type": "array", "uniqueItems": True}, {"items": {"type": "boolean"}}]}, {},
     [[True, False]], [[False, False]]),
    # uniqueItems on something that is not an array
    ({"allOf": [{"uniqueItems": True}, {"type": "string"}]}, {}, ["s"], [[1, 1], []]),
    # whitespace styles
    (COLORS, {"whitespace": "flexible"}, [Text('[ "red" ,\n"blue" ]'), Text("[ ]")],
     [Text('[ "red" , "red" ]'), Text('["blue",\t"\\u0062lue"]')]),
    (COLORS, {"whitespace": "pretty"}, [Text('[\n  "red",\n  "blue"\n]'), Text("[]")],
     [Text('[\n  "red",\n  "red"\n]')]),
]


@pytest.fixture(scope="module")
def llama3():
    from real_tokenizers import llama3

    return llama3()


def _accepts(constraint, tokenizer, text: str) -> bool:
    matcher = constraint.matcher()
    for token in tokenizer.encode(text):
        if token not in set(matcher.allowed_tokens().tolist()):
            return False
        assert matcher.consume(token)
    return matcher.is_accepting()


@pytest.mark.parametrize("schema,options,accepted,rejected", TABLE,
                         ids=[f"{i}-{json.dumps(r[0])[:50]}" for i, r in enumerate(TABLE)])
def test_table(llama3, schema, options, accepted, rejected):
    check = validator(schema)
    constraint = tokamata.compile_json_schema(schema, llama3.vocab, spelling="any", **options)
    assert not any(line.startswith("uniqueItems") for line in constraint.report()), constraint.report()
    for instance in accepted:
        assert judge(text_of(instance).encode(), check)[0] == "valid", f"table wrong: {text_of(instance)}"
        assert _accepts(constraint, llama3, text_of(instance)), text_of(instance)
    for instance in rejected:
        assert judge(text_of(instance).encode(), check)[0] == "schema-invalid", f"table wrong: {text_of(instance)}"
        assert not _accepts(constraint, llama3, text_of(instance)), text_of(instance)
    if options:  # (whitespace styles: the natural layouts are json.dumps's, checked elsewhere)
        return
    natural = tokamata.compile_json_schema(schema, llama3.vocab)
    for instance, ok in [(i, True) for i in accepted] + [(i, False) for i in rejected]:
        if not isinstance(instance, Text):
            assert _accepts(natural, llama3, natural_dumps(instance)) is ok, natural_dumps(instance)


def finite_values(schema, limits=tokamata.Limits()):
    from tokamata.syntax.json_schema.expand import Expander
    from tokamata.syntax.json_schema.refs import Document
    from tokamata.syntax.json_schema.report import Options, Report
    from tokamata.syntax.json_schema.values import ValueSets, to_json

    expander = Expander(Document(schema), Options(), limits, Report())
    return [to_json(v) for v in ValueSets(expander, limits).values(expander.conj(()))]


# (schema, its values as JSON Schema sees them, in any order: numbers as Decimal)
VALUE_SETS = [
    ({"enum": [1, 1.0, 2.50, "a", "A", None, True, 1e2, 100]}, [1, Decimal("2.5"), "a", "A", None, True, 100]),
    ({"type": "integer", "minimum": -1, "maximum": 1}, [-1, 0, 1]),
    ({"type": "number", "multipleOf": 0.5, "exclusiveMinimum": 0, "maximum": 1.5}, [Decimal("0.5"), 1, Decimal("1.5")]),
    ({"type": "string", "pattern": "^(ab|c)$"}, ["ab", "c"]),
    ({"type": "string", "maxLength": 0}, [""]),
    ({"type": "array", "items": {"type": "boolean"}, "maxItems": 1}, [[], [True], [False]]),
    ({"type": "array", "prefixItems": [{"const": 0}], "items": False, "minItems": 1}, [[0]]),
    ({"type": "array", "items": {"enum": ["x", "y"]}, "uniqueItems": True}, [[], ["x"], ["y"], ["x", "y"], ["y", "x"]]),
    ({"type": "object", "properties": {"a": {"const": 1}}, "additionalProperties": False}, [{}, {"a": 1}]),
    ({"type": "object", "properties": {"a": {"type": "null"}}, "required": ["a"], "additionalProperties": False,
      "minProperties": 2}, []),
    ({"not": {"type": ["string", "number", "object", "array"]}}, [None, True, False]),
    (False, []),
]


@pytest.mark.parametrize("schema,expected", VALUE_SETS, ids=[json.dumps(r[0])[:50] for r in VALUE_SETS])
def test_value_sets(schema, expected):
    def plain(v):  # numbers by value, as one text
        if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool):
            return f"number {Decimal(str(v)).normalize()}"
        if isinstance(v, list):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    key = lambda v: json.dumps(plain(v), sort_keys=True)  # noqa: E731
    assert sorted(map(key, finite_values(schema))) == sorted(map(key, expected))


def test_value_sets_refuse():
    from tokamata.syntax.json_schema.values import NotFinite

    for schema, reason in [({"type": "string"}, "infinite"), ({"type": "number", "minimum": 0, "maximum": 1}, "infinite"),
                           ({"enum": list(range(13))}, "more than 12"), ({"type": "array", "maxItems": 1}, "infinite"),
                           ({"type": "array", "items": {"const": 1}}, "unbounded length"),
                           ({"type": "object", "properties": {"a": {"const": 1}}}, "members other than")]:
        with pytest.raises(NotFinite, match=reason):
            finite_values(schema)


def test_impossible_array_alone_allows_nothing():
    with pytest.raises(tokamata.SchemaError, match="allows no JSON value"):
        schema_to_grammar({"type": "array", "items": {"enum": [1, 2]}, "minItems": 3, "uniqueItems": True})


# (schema, limits, JSON pointer of the schema holding uniqueItems, words of the reason)
REFUSED = [
    ({"type": "array", "uniqueItems": True}, None, "", "infinite item language"),
    ({"properties": {"tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}}, None,
     "/properties/tags", "infinite item language"),
    ({"type": "array", "prefixItems": [{"type": "boolean"}], "uniqueItems": True}, None, "", "infinite item language"),
    ({"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1}, "uniqueItems": True}, None, "",
     "infinite item language"),
    ({"type": "array", "items": {"enum": list(range(13))}, "uniqueItems": True}, None, "", "more than 12 distinct"),
    ({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 99}, "uniqueItems": True}, None, "",
     "more than 12 distinct"),
    ({"type": "array", "prefixItems": [{"enum": [1, 2, 3]}], "items": {"enum": [4, 5]}, "uniqueItems": True},
     tokamata.Limits(max_unique_items_values=4), "", "more than 4 distinct"),
    ({"type": "array", "items": {"enum": list(range(13))}, "uniqueItems": True},
     tokamata.Limits(max_unique_items_values=13), "", "max_grammar_symbols"),
    ({"type": "array", "items": {"$ref": "#"}, "maxItems": 2, "uniqueItems": True}, None, "", "recursive"),
    ({"type": "array", "items": {"type": "object", "properties": {"a": {"const": 1}}}, "uniqueItems": True}, None, "",
     "members other than the declared ones"),
    ({"type": "array", "items": {"type": "array", "items": {"const": 1}}, "uniqueItems": True}, None, "",
     "unbounded length"),
    ({"allOf": [{"uniqueItems": True}], "items": {"type": "integer"}}, None, "/allOf/0", "infinite item language"),
    ({"not": {"type": "array", "uniqueItems": True}}, None, "/not", "complement"),
    ({"type": "array", "items": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True, "maxItems": 3},
      "maxItems": 1}, None, "/items", "infinite item language"),
]


@pytest.mark.parametrize("schema,limits,where,reason", REFUSED, ids=[r[3] + "-" + json.dumps(r[0])[:40] for r in REFUSED])
def test_refused_names_keyword_and_pointer(schema, limits, where, reason):
    with pytest.raises(tokamata.Unsupported) as info:
        schema_to_grammar(schema, limits)
    assert info.value.keyword == "uniqueItems" and info.value.pointer == where, str(info.value)
    assert reason in str(info.value)
    # and approximate={"uniqueItems"} compiles it, reporting where
    _, report = schema_to_grammar(schema, limits, approximate={"uniqueItems"})
    assert [a.pointer for a in report if a.kind == "uniqueItems"] == [where + "/uniqueItems"], str(report)


def test_approximation_ignores_duplicates_only_where_refused(llama3):
    vocab = llama3.vocab
    loose = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    constraint = tokamata.compile_json_schema(loose, vocab, approximate={"uniqueItems"}, spelling="any")
    assert constraint.report() == ["uniqueItems at /uniqueItems: items are not checked for duplicates: an infinite "
                                   "item language (distinct items are enforced over at most 12 item values, "
                                   "Limits.max_unique_items_values)"]
    assert _accepts(constraint, llama3, '["a","a"]')
    # exact where it can be, with or without the option
    constraint = tokamata.compile_json_schema(COLORS, vocab, approximate={"uniqueItems"}, spelling="any")
    assert constraint.report() == []
    assert not _accepts(constraint, llama3, '["red","red"]')
    assert _accepts(constraint, llama3, '["red","blue"]')


def test_max_items_one_needs_no_check():
    grammar, report = schema_to_grammar({"type": "array", "maxItems": 1, "uniqueItems": True}, spelling="any")
    assert not len(report)


WALKED = [
    COLORS,
    {"type": "array", "prefixItems": [{"enum": [1, 2]}, {"type": "boolean"}], "items": {"enum": [1, 2, 3, "1"]},
     "uniqueItems": True},
    {"type": "array", "items": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 2},
                                "maxItems": 1}, "contains": {"const": []}, "uniqueItems": True},
    {"type": "object", "properties": {"flags": {"type": "array", "items": {"enum": ["x", "y", "z", None, True]},
                                                "minItems": 2, "uniqueItems": True}},
     "required": ["flags"], "additionalProperties": False},
]


@pytest.mark.parametrize("schema", WALKED, ids=[json.dumps(s)[:50] for s in WALKED])
def test_random_walks_are_valid(llama3, schema):
    vocab = llama3.vocab
    constraint = tokamata.compile_json_schema(schema, vocab)
    check = validator(schema)
    rng = random.Random(json.dumps(schema))
    judged = 0
    for _ in range(40):
        matcher = constraint.matcher()
        out = random_walk(matcher, vocab, rng, steps=80, stop_after=30, stop_chance=0.1, short_bytes=3,
                          short_bias=0.8)
        if matcher.is_accepting():
            verdict, detail = judge(out, check)
            assert verdict == "valid", (out, detail)
            judged += 1
    assert judged >= 10, judged
