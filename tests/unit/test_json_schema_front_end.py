"""The JSON Schema front end: tables of (schema, valid instances, invalid instances).

Oracles: ``jsonschema`` (draft 2020-12 unless the schema says otherwise) decides every table
row whose schema it can judge; the grammar is checked with a small Earley recognizer over
the IR (bytes, terminals lexed where their expression accepts), and, for a sample, with the
real engine and the Llama 3 tokenizer token by token. Format rows follow the RFCs (the
``jsonschema`` format checker needs optional packages for several of them). The table rows
run in both spellings: ``"any"`` with the values as ``json.dumps`` writes them, ``"natural"``
(the default) with the values in natural spelling (tests/natural_json.py); tests about RFC
spellings (escapes, ``-0``, trailing zeros) use ``spelling="any"``.
"""

from __future__ import annotations

import json
import random
from decimal import Decimal

import jsonschema
import pytest

import tokamata
from mask_walk import random_walk
from natural_json import natural_dumps
from tokamata.automata import boolean
from tokamata.automata import derivatives as d
from tokamata.grammar.ir import Grammar, is_terminal, nonterminal_index
from tokamata.grammar.builder import GrammarBuilder
from tokamata.syntax.json_schema import schema_to_grammar
from tokamata.syntax.json_schema import lexemes as lx
from tokamata.syntax.json_schema import numbers as nm


# -- a reference recognizer -----------------------------------------------------------------
def recognize(grammar: Grammar, data: bytes) -> bool:
    """Earley over bytes; a terminal may end wherever its expression accepts (no epsilon
    rules: the JSON Schema front end never makes them)."""
    by_lhs: dict[int, list[int]] = {}
    for i, rule in enumerate(grammar.rules):
        by_lhs.setdefault(rule.lhs, []).append(i)
    n = len(data)
    chart: list[set] = [set() for _ in range(n + 1)]
    agenda: list[list] = [[] for _ in range(n + 1)]

    def add(pos: int, item: tuple) -> None:
        if item not in chart[pos]:
            chart[pos].add(item)
            agenda[pos].append(item)

    def ends(t: int, pos: int) -> list[int]:
        found, node, j = [], grammar.terminals[t].expr, pos
        while True:
            if node.nullable and j > pos:
                found.append(j)
            if j == n:
                return found
            node = d.derivative(node, data[j])
            if node is d.NOTHING:
                return found
            j += 1

    for r in by_lhs.get(grammar.start, []):
        add(0, (r, 0, 0))
    for pos in range(n + 1):
        done: set = set()
        while agenda[pos]:
            r, dot, origin = agenda[pos].pop()
            rhs = grammar.rules[r].rhs
            if dot == len(rhs):
                lhs = grammar.rules[r].lhs
                if (lhs, origin) in done:
                    continue
                done.add((lhs, origin))
                for r2, dot2, origin2 in list(chart[origin]):
                    rhs2 = grammar.rules[r2].rhs
                    if dot2 < len(rhs2) and not is_terminal(rhs2[dot2]) and nonterminal_index(rhs2[dot2]) == lhs:
                        add(pos, (r2, dot2 + 1, origin2))
                continue
            symbol = rhs[dot]
            if is_terminal(symbol):
                for j in ends(symbol, pos):
                    add(j, (r, dot + 1, origin))
            else:
                for r2 in by_lhs.get(nonterminal_index(symbol), []):
                    add(pos, (r2, 0, pos))
    return any(origin == 0 and grammar.rules[r].lhs == grammar.start and dot == len(grammar.rules[r].rhs)
               for r, dot, origin in chart[n])


def compact(value) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def oracle_valid(schema, value) -> bool:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(value)


# -- tables ---------------------------------------------------------------------------------
# (schema, valid values, invalid values); every row is checked against jsonschema too
TABLE = [
    ({"type": "string"}, ["", "a", "é\"\\\n😀"], [1, None, [], {}]),
    ({"type": "integer"}, [0, -3, 10 ** 30, 1.0], [1.5, "1", True]),
    ({"type": "number"}, [0, -3.25, 1e-7, 2.5e20], ["1", None]),
    ({"type": ["null", "boolean"]}, [None, True, False], [0, ""]),
    ({"enum": ["a", 1, None, [1, 2], {"k": "v"}]}, ["a", 1, 1.0, None, [1, 2], {"k": "v"}],
     ["b", 2, [1], [1, 2, 3], {"k": "w"}, {"k": "v", "x": 1}]),
    ({"const": {"a": [1, {"b": None}]}}, [{"a": [1, {"b": None}]}], [{"a": [1, {"b": 0}]}, {"a": [1]}]),
    ({"type": "integer", "minimum": -5, "exclusiveMaximum": 12}, [-5, 0, 11, 7.0], [-6, 12, 13, 100]),
    ({"type": "number", "minimum": 0.25, "maximum": 1.5}, [0.25, 0.5, 1, 1.5, 1.25], [0.24, 1.51, 2, -1]),
    ({"type": "number", "exclusiveMinimum": 0}, [0.001, 1, 100], [0, -0.5]),
    ({"type": "integer", "minimum": 12345678901234567890}, [12345678901234567890, 10 ** 21],
     [12345678901234567889, 0]),
    ({"type": "integer", "multipleOf": 7}, [0, 7, -14, 700], [1, 15, -8]),
    ({"type": "number", "multipleOf": 0.25}, [0, 0.25, 1.5, -2.75], [0.1, 1.3]),
    ({"type": "integer", "multipleOf": 3, "minimum": 10, "maximum": 20}, [12, 15, 18], [9, 10, 21, 13]),
    ({"type": "string", "minLength": 2, "maxLength": 3}, ["ab", "abc", "é😀"], ["a", "abcd", ""]),
    ({"type": "string", "pattern": "^[a-z]+\\d$"}, ["ab1", "z9"], ["ab", "1", "Ab1"]),
    ({"type": "string", "pattern": "cat"}, ["cat", "concatenate"], ["dog", "ca t"]),
    ({"type": "string", "pattern": "^a|b$"}, ["abc", "xxb", "ab"], ["ba", "c"]),
    ({"type": "string", "pattern": "^\\w+$", "maxLength": 4}, ["ab_1", "x"], ["ab-1", "abcde"]),
    # minLength 0 / 1 without maxLength is dropped only when another keyword implies it
    ({"type": "string", "minLength": 1, "pattern": "^a*$"}, ["a", "aaa"], ["", "b"]),
    ({"type": "string", "minLength": 0, "pattern": "^a*$"}, ["", "aa"], ["b"]),
    ({"type": "string", "minLength": 1, "pattern": "^a+$"}, ["a"], ["", "ab"]),
    ({"type": "string", "minLength": 1, "format": "date"}, ["2024-02-29"], ["", "2023-02-29"]),
    ({"type": "string", "minLength": 2, "pattern": "^a*$"}, ["aa"], ["", "a"]),
    ({"pattern": "^x"}, ["xy", 1, None, {}], ["y"]),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
      "required": ["a"]},
     [{"a": 1}, {"a": 1, "b": "x"}, {"a": 1, "b": "x", "c": [True]}, {"a": 1, "z": None}],
     [{}, {"b": "x"}, {"a": "1"}, {"a": 1, "b": 2}]),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
     [{}, {"a": 1}], [{"b": 1}, {"a": 1, "b": 2}]),
    ({"type": "object", "additionalProperties": {"type": "number"}, "minProperties": 1, "maxProperties": 2},
     [{"x": 1}, {"x": 1, "y": 2.5}], [{}, {"x": "1"}, {"x": 1, "y": 2, "z": 3}]),
    ({"type": "object", "patternProperties": {"^s_": {"type": "string"}, "^n_": {"type": "number"}},
      "additionalProperties": False},
     [{"s_a": "x", "n_b": 1}, {}], [{"s_a": 1}, {"n_b": "x"}, {"other": 1}]),
    ({"type": "object", "properties": {"s_1": {"minLength": 2}}, "patternProperties": {"^s_": {"type": "string"}}},
     [{"s_1": "ab"}, {"s_1": "ab", "s_2": "x"}], [{"s_1": "a"}, {"s_1": 12}, {"s_1": "ab", "s_2": 1}]),
    ({"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}}, [{}, {"abc": 1}], [{"aB": 1}, {"1": 2}]),
    ({"dependentRequired": {"a": ["b"]}}, [{}, {"b": 1}, {"a": 1, "b": 2}], [{"a": 1}]),
    ({"dependentSchemas": {"a": {"properties": {"b": {"type": "string"}}}}},
     [{"a": 1}, {"b": 2}, {"a": 1, "b": "x"}], [{"a": 1, "b": 2}]),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
     [[1], [1, 2, 3]], [[], [1, 2, 3, 4], ["a"]]),
    ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "null"}], "items": False},
     [[], ["a"], ["a", None]], [[1], ["a", 1], ["a", None, 1]]),
    ({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "number"}},
     [["a", 1, 2.5], ["a"]], [["a", "b"], [1]]),
    ({"type": "array", "contains": {"type": "string"}}, [["a"], [1, "a", 2]], [[], [1, 2]]),
    ({"type": "array", "contains": {"type": "string"}, "minContains": 2, "maxContains": 3},
     [["a", "b"], ["a", 1, "b", "c"]], [["a"], ["a", "b", "c", "d"]]),
    ({"$defs": {"pos": {"type": "integer", "minimum": 1}}, "type": "array", "items": {"$ref": "#/$defs/pos"}},
     [[1, 2]], [[0], [1, -1]]),
    ({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                                                         "next": {"$ref": "#/$defs/node"}},
                         "required": ["v"], "additionalProperties": False}},
      "$ref": "#/$defs/node"},
     [{"v": 1}, {"v": 1, "next": {"v": 2, "next": {"v": 3}}}], [{"v": 1, "next": {}}, {"v": "1"}]),
    ({"anyOf": [{"type": "string", "maxLength": 1}, {"type": "integer", "minimum": 10}]},
     ["", "a", 10, 99], ["ab", 9, None]),
    ({"allOf": [{"type": "integer"}, {"minimum": 2}, {"maximum": 4}]}, [2, 3, 4], [1, 5, 2.5]),
    ({"allOf": [{"properties": {"a": {"type": "integer"}}}, {"properties": {"a": {"minimum": 3}}}]},
     [{"a": 3}, {}], [{"a": 2}, {"a": "x"}]),
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, [1, 2.5, "x"], [2, 3]),
    ({"oneOf": [{"properties": {"k": {"const": "a"}, "x": {"type": "integer"}}, "required": ["k"]},
                {"properties": {"k": {"const": "b"}, "x": {"type": "string"}}, "required": ["k"]}],
      "type": "object"},
     [{"k": "a", "x": 1}, {"k": "b", "x": "s"}], [{"k": "a", "x": "s"}, {"k": "c"}, {}]),
    ({"not": {"type": "string"}}, [1, None, [], {}], ["", "x"]),
    ({"type": "string", "not": {"enum": ["a", "b"]}}, ["c", "", "ab"], ["a", "b"]),
    ({"type": "integer", "not": {"multipleOf": 2}}, [1, -3], [0, 2]),
    ({"type": "object", "not": {"required": ["a"]}}, [{}, {"b": 1}], [{"a": 1}]),
    ({"type": "object", "not": {"additionalProperties": {"type": "string"}}}, [{"a": 1}, {"a": "x", "b": None}],
     [{}, {"a": "x"}]),
    ({"type": "object", "not": {"properties": {"a": {}}, "additionalProperties": False}},
     [{"b": 1}, {"a": 1, "c": 2}], [{}, {"a": 1}]),
    ({"type": "object", "not": {"propertyNames": {"maxLength": 2}}}, [{"abc": 1}, {"a": 1, "abc": 2}],
     [{}, {"ab": 1}]),
    ({"type": "object", "oneOf": [{"patternProperties": {"^x": {"type": "integer"}}}, {"required": ["y"]}]},
     [{"x1": 1}, {}, {"y": 1, "x1": "s"}], [{"y": 2, "x1": 1}, {"x1": "s"}]),
    ({"if": {"properties": {"t": {"const": "n"}}, "required": ["t"]},
      "then": {"properties": {"v": {"type": "number"}}},
      "else": {"properties": {"v": {"type": "string"}}}, "type": "object"},
     [{"t": "n", "v": 1}, {"t": "s", "v": "x"}, {"v": "x"}], [{"t": "n", "v": "x"}, {"v": 1}]),
    ({"type": "array", "maxItems": 1, "uniqueItems": True}, [[], [1]], [[1, 1]]),
    ({"allOf": [{"properties": {"a": {"type": "integer"}}}], "properties": {"b": {}},
      "unevaluatedProperties": False}, [{"b": 2, "a": 1}, {}], [{"c": 1}, {"a": 1, "c": 2}]),
    ({"if": {"properties": {"t": {"const": 1}}, "required": ["t"]}, "then": {"properties": {"x": {}}},
      "unevaluatedProperties": False}, [{"t": 1, "x": 2}, {}], [{"t": 1, "y": 2}, {"t": 2}]),
    ({"prefixItems": [{"type": "string"}], "unevaluatedItems": {"type": "integer"}},
     [["a"], ["a", 1, 2]], [["a", "b"], [1]]),
    (True, [1, "x", {"a": [None]}], []),
    # multiples under oneOf/not (MaskBench Handwritten---allone4): exact on values
    ({"type": "number", "allOf": [{"minimum": 1}, {"oneOf": [{"multipleOf": 3}, {"multipleOf": 5}, {"multipleOf": 7}]},
                                  {"oneOf": [{"allOf": [{"not": {"multipleOf": 5}}, {"not": {"multipleOf": 7}}]},
                                             {"multipleOf": 24}]},
                                  {"oneOf": [{"not": {"multipleOf": 8}}, {"multipleOf": 11}]}, {"not": {"multipleOf": 8}}]},
     [3, 6, 9, 27, 78, 10 ** 40 + 2], [0, -3, 1, 5, 7, 24, 15, 21, 33, 48, 2.5, 3.5, 10 ** 40, 10 ** 40 + 5]),
    # property_order="schema": required outside, properties inside allOf/anyOf: the properties' order
    ({"required": ["b"], "allOf": [{"properties": {"a": {}, "b": {}}}]}, [{"a": 1, "b": 2}, {"b": 2}],
     [{"a": 1}, {}]),
    ({"required": ["b"], "anyOf": [{"properties": {"a": {"type": "integer"}, "b": {}}}, {"properties": {"c": {}}}]},
     [{"a": 1, "b": 2}, {"b": 2}, {"b": 2, "c": 1}], [{"a": 1}, {"c": 1}]),
    ({"required": ["c", "a"], "allOf": [{"properties": {"a": {}, "b": {}}}, {"properties": {"b": {}, "c": {}}}]},
     [{"a": 1, "b": 2, "c": 3}, {"a": 1, "c": 3}], [{"a": 1, "b": 2}, {"c": 3}]),
    ({"required": ["z"], "properties": {"y": {}}, "allOf": [{"properties": {"x": {}}}]},
     [{"y": 1, "z": 3, "x": 2}, {"z": 3}], [{"y": 1, "x": 2}]),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {"type": "integer"}},
      "properties": {"x": {"$ref": "#/definitions/a", "type": "string"}}},
     [{"x": 1}], [{"x": "s"}]),
    ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "maximum": 3,
      "exclusiveMaximum": True}, [2], [3, 1.0]),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "integer"}],
      "additionalItems": False}, [[], [1]], [[1, 2], ["a"]]),
    ({"$id": "https://example.com/root.json", "$defs": {"a": {"$id": "a.json", "type": "integer"}},
      "$ref": "a.json"}, [1], ["x"]),
    ({"$defs": {"a": {"$anchor": "num", "type": "number"}}, "items": {"$ref": "#num"}}, [[1.5]], [["x"]]),
]

FORMATS = [
    ("date", ["2020-02-29", "1999-12-31"], ["2021-02-29", "2020-13-01", "2020-1-01"]),
    ("time", ["08:30:06Z", "23:59:60Z", "15:59:60-08:00", "12:00:00.5+01:30"], ["24:00:00Z", "22:59:60Z", "12:00:00"]),
    ("date-time", ["1963-06-19T08:30:06.283185Z", "1963-06-19t08:30:06z"], ["1963-06-19 08:30:06Z"]),
    ("duration", ["P4DT12H30M5S", "P2W", "PT1M"], ["P", "PT", "P1Y2W", "PT1H2S"]),
    ("email", ["joe.bloggs@example.com", '"joe bloggs"@example.com', "a@[127.0.0.1]"], ["2962", "a..b@c.d"]),
    ("hostname", ["www.example.com", "a-b.c"], ["-a.com", "a_b", "a" * 64 + ".com"]),
    # RFC 6531 local parts (64 UTF-8 octets); domains stay ASCII (U-labels need IDNA tables)
    ("idn-email", ["δοκιμή@example.com", '"δο κ@"@example.com', "é" * 32 + "@a.b", "𝕏" * 16 + "@x", "\x85@x",
                   "a" * 64 + "@x", "joe.bloggs@[127.0.0.1]"],
     ["é" * 33 + "@a.b", "𝕏" * 17 + "@x", "a" * 65 + "@x", "user＠example.com", "a..é@x", ".é@x", "é@", "2962",
      '"\\é"@x']),
    ("ipv4", ["192.168.0.1", "0.0.0.0"], ["256.1.1.1", "01.1.1.1", "1.1.1"]),
    ("ipv6", ["::1", "1:2:3:4:5:6:7:8", "::ffff:192.168.0.1"], ["1::2::3", "12345::", "1:2:3:4:5:6:7"]),
    ("uuid", ["2EB8AA08-AA98-11EA-B4AA-73B441D16380"], ["2eb8aa08aa9811eab4aa73b441d16380"]),
    ("uri", ["http://example.com/a?b#c", "urn:isbn:0451450523"], ["//example.com", "a b:c", "abc"]),
    ("uri-reference", ["/a/b", "", "#f", "http://x.y"], ["\\\\server", "a b"]),
]

ERRORS = [
    ({"$ref": "other.json"}, tokamata.Unsupported, "$ref at /$ref"),
    ({"type": "array", "uniqueItems": True}, tokamata.Unsupported, "uniqueItems at /"),
    ({"properties": {"a": {"format": "no-such-format"}}}, tokamata.Unsupported, "format at /properties/a"),
    ({"format": "regex"}, tokamata.Unsupported, "format"),
    ({"pattern": "\\p{L}"}, tokamata.Unsupported, "pattern"),
    ({"pattern": "(a)\\1"}, tokamata.Unsupported, "backreference"),
    ({"type": "strange"}, tokamata.SchemaError, "unknown type"),
    ({"$ref": "#/$defs/missing"}, tokamata.SchemaError, "does not resolve"),
    ({"minLength": -1}, tokamata.SchemaError, "minLength"),
    ({"multipleOf": 0}, tokamata.SchemaError, "multipleOf"),
    ({"type": "integer", "minimum": 5, "maximum": 4}, tokamata.SchemaError, "allows no JSON value"),
    (False, tokamata.SchemaError, "allows no JSON value"),
    ({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, tokamata.SchemaError, "refers to itself"),
    ({"not": {"prefixItems": [{}], "items": {"type": "string"}}}, tokamata.Unsupported, "not at /"),
    ("{not json", tokamata.SchemaError, "not valid JSON"),
]


@pytest.mark.parametrize("spelling", ["any", "natural"])
@pytest.mark.parametrize("schema,valid,invalid", TABLE, ids=[json.dumps(r[0])[:60] for r in TABLE])
def test_table(schema, valid, invalid, spelling):
    grammar, _ = schema_to_grammar(schema, approximate={"uniqueItems"} if schema == {} else (), spelling=spelling)
    for value in valid:
        assert oracle_valid(schema, value), f"table wrong: jsonschema rejects {value!r}"
    for value in invalid:
        assert not oracle_valid(schema, value), f"table wrong: jsonschema accepts {value!r}"
    for value, ok in [(v, True) for v in valid] + [(v, False) for v in invalid]:
        if spelling == "any":
            assert recognize(grammar, compact(value)) is ok, (schema, value)
        else:  # (judged as spelled: in draft 4, 1.0 spelled naturally is 1, an integer)
            text = natural_dumps(value)
            assert recognize(grammar, text.encode()) is oracle_valid(schema, json.loads(text)), (schema, text)


@pytest.mark.parametrize("name,valid,invalid", FORMATS, ids=[r[0] for r in FORMATS])
def test_formats(name, valid, invalid):
    grammar, _ = schema_to_grammar({"type": "string", "format": name})
    for value in valid:
        assert recognize(grammar, compact(value)), (name, value)
    for value in invalid:
        assert not recognize(grammar, compact(value)), (name, value)


def test_idn_email_counts_octets_whatever_the_spelling():
    grammar, report = schema_to_grammar({"format": "idn-email"}, spelling="any")
    assert [a.kind for a in report] == ["format-subset"]
    escaped = "\\u00e9" * 32  # 32 x U+00E9 (2 octets each), spelled as escapes
    assert recognize(grammar, f'"{escaped}@x"'.encode())
    assert not recognize(grammar, f'"{escaped}\\u00e9@x"'.encode())
    assert not recognize(grammar, f'"{escaped}a@x"'.encode())
    assert recognize(grammar, ('"' + "\\ud835\\udd4f" * 16 + '@x"').encode())  # 16 x U+1D54F, 4 octets each
    assert not recognize(grammar, ('"' + "\\ud835\\udd4f" * 16 + 'a@x"').encode())


def test_format_spellings_and_ignored_formats():
    grammar, _ = schema_to_grammar({"format": "date"}, spelling="any")
    assert recognize(grammar, b'"\\u0032020-02-29"')  # an escaped digit is a digit
    assert recognize(grammar, b"5")  # formats constrain strings only
    grammar, report = schema_to_grammar({"format": "whatever"}, ignore_unknown_formats=True, spelling="any")
    assert recognize(grammar, b'"x"') and [a.kind for a in report] == ["format"]
    grammar, report = schema_to_grammar({"format": "hostname"}, spelling="any")
    assert [a.kind for a in report] == ["format-subset"]


@pytest.mark.parametrize("schema,error,fragment", ERRORS, ids=[str(r[0])[:40] for r in ERRORS])
def test_errors(schema, error, fragment):
    with pytest.raises(error) as info:
        schema_to_grammar(schema)
    assert fragment in str(info.value)


def test_unsupported_names_keyword_and_pointer():
    with pytest.raises(tokamata.Unsupported) as info:
        schema_to_grammar({"properties": {"a/b": {"type": "array", "uniqueItems": True}}})
    assert info.value.keyword == "uniqueItems" and info.value.pointer == "/properties/a~1b"


# ECMA-262 semantics where Python's re (and so jsonschema) differs
ECMA = [
    ("^[a-z]+\\d$", ["ab1"], ["ab1\n"]),  # $ is the very end
    ("^\\w+$", ["ab_1"], ["é"]),  # \w, \d are ASCII
    ("^\\d$", ["1"], ["١"]),
    ("^\\s$", [" ", "\u00a0", "\ufeff"], ["\x1c"]),
    ("^.$", ["a", "é"], ["\n", "\r", "\u2028"]),
    ("^[^]$", ["\n"], ["ab"]),
    ("^(?<year>\\d{4})$", ["2024"], ["24"]),
    ("^\\cJ$", ["\n"], ["J"]),
    ("^\\u{1F600}$", ["😀"], ["x"]),
]


@pytest.mark.parametrize("pattern,valid,invalid", ECMA, ids=[r[0] for r in ECMA])
def test_ecma_patterns(pattern, valid, invalid):
    grammar, _ = schema_to_grammar({"type": "string", "pattern": pattern})
    for value in valid:
        assert recognize(grammar, compact(value)), (pattern, value)
    for value in invalid:
        assert not recognize(grammar, compact(value)), (pattern, value)


def test_strings_accept_every_spelling():
    grammar, _ = schema_to_grammar({"enum": ["é😀\"/"]}, spelling="any")
    for text in ['"é😀\\"/"', '"\\u00e9\\ud83d\\ude00\\u0022\\/"', '"\\u00E9😀\\"\\u002F"']:
        assert recognize(grammar, text.encode()), text
    grammar, _ = schema_to_grammar({"type": "string"}, spelling="any")
    for text in ['"\\ud800"', '"\\udc00\\ud800"', '"\x01"', '"\\x"', '"\\u12"']:
        assert not recognize(grammar, text.encode()), text


def test_number_spellings():
    grammar, report = schema_to_grammar({"type": "number", "maximum": 10}, spelling="any")
    assert [a.kind for a in report] == ["number-notation"]
    for text in [b"10", b"10.000", b"-0", b"-0.0", b"9.99999"]:
        assert recognize(grammar, text), text
    for text in [b"10.0001", b"1e1", b"01", b"1.", b"+1"]:
        assert not recognize(grammar, text), text
    grammar, report = schema_to_grammar({"type": "number"}, spelling="any")
    assert recognize(grammar, b"1e400") and not list(report)


def test_strict_closes_objects():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    grammar, _ = schema_to_grammar(schema, strict=True)
    assert recognize(grammar, b'{"a":1}') and not recognize(grammar, b'{"a":1,"b":2}')
    grammar, _ = schema_to_grammar(schema)
    assert recognize(grammar, b'{"a":1,"b":2}')


@pytest.mark.parametrize("value", [{"a": [1, {"b": None}], "c": "d"}, [], {}, [[]], "x", {"k": {}}])
def test_whitespace_styles(value):
    schema = {"type": ["object", "array", "string"], "additionalProperties": True}
    pretty = json.dumps(value, indent=2, ensure_ascii=False).encode()
    loose = json.dumps(value, ensure_ascii=False).encode()
    grammar, _ = schema_to_grammar(schema, whitespace="flexible")
    assert recognize(grammar, compact(value)) and recognize(grammar, pretty) and recognize(grammar, loose)
    assert recognize(grammar, b" " + compact(value) + b"\n")
    grammar, _ = schema_to_grammar(schema, whitespace="pretty", approximate={"pretty-depth"})
    assert recognize(grammar, pretty)
    if pretty != compact(value):
        assert not recognize(grammar, compact(value))
    grammar, _ = schema_to_grammar(schema, whitespace="pretty", indent=4, approximate={"pretty-depth"})
    assert recognize(grammar, json.dumps(value, indent=4, ensure_ascii=False).encode())


def test_flexible_whitespace_is_bounded():
    grammar, _ = schema_to_grammar({"type": "array"}, whitespace="flexible", max_whitespace=3)
    assert recognize(grammar, b"[   1   ]") and not recognize(grammar, b"[    1]")


def test_pretty_refuses_unbounded_nesting_unless_asked():
    with pytest.raises(tokamata.Unsupported, match="pretty"):
        schema_to_grammar({"type": "object"}, whitespace="pretty")


def test_embedding_a_schema_grammar_renumbers():
    grammar, _ = schema_to_grammar({"type": "integer"})
    builder = GrammarBuilder("", tokamata.Limits())
    outer = builder.nonterminal("outer")
    symbol = builder.embed(grammar, "json_", None)
    builder.add_rule(outer, [symbol])
    embedded = builder.build(outer)
    assert nonterminal_index(symbol) == grammar.start + 1 and len(embedded.terminals) == len(grammar.terminals)
    assert embedded.nonterminals[1:] == tuple("json_" + name for name in grammar.nonterminals)


# -- the automata pieces --------------------------------------------------------------------
def _accepts(expr: d.Expr, text: str) -> bool:
    for byte in text.encode():
        expr = d.derivative(expr, byte)
        if expr is d.NOTHING:
            return False
    return expr.nullable


NUMBERS = ["0", "-0", "-0.0", "0.00", "1", "10", "9.99", "100.000", "-1", "-9.5", "0.05", "-0.05", "123",
           "0.5", "1.25", "-123.4", "12.5", "7", "1.4", "2.75", "1000", "0.125", "-0.375"]


@pytest.mark.parametrize("bound", ["0", "1", "-1", "9.5", "-9.5", "10", "0.05", "-0.05", "123", "1.25"])
def test_number_bounds_are_exact(bound):
    b = Decimal(bound)
    for strict in (False, True):
        low = boolean.intersection(nm.at_least(b, strict, tokamata.Limits()), lx.PLAIN_NUMBER)
        high = boolean.intersection(nm.at_most(b, strict, tokamata.Limits()), lx.PLAIN_NUMBER)
        for text in NUMBERS:
            x = Decimal(text)
            assert _accepts(low, text) == (x > b if strict else x >= b), (bound, strict, text)
            assert _accepts(high, text) == (x < b if strict else x <= b), (bound, strict, text)


@pytest.mark.parametrize("step", ["3", "0.5", "0.01", "2.5", "0.7", "0.125"])
def test_multiple_of_is_exact(step):
    expr = nm.multiple_of(Decimal(step), tokamata.Limits())
    for text in NUMBERS:
        assert _accepts(expr, text) == (Decimal(text) % Decimal(step) == 0), (step, text)


LONG = "1" + "0" * 308  # 309 integer digits: with a fraction, Python floats overflow


LONG_TEXTS = ["6", "6.0", "-6.00", "7", "14", "1001", "1001.0", LONG, LONG + ".0", LONG + ".5",
              LONG[:-1] + ".0", LONG[:-1] + ".5", "-" + LONG + ".0", LONG + "0"]


@pytest.mark.parametrize("name,number", [
    ("multiple of 0.01", nm.multiple_of(Decimal("0.01"), tokamata.Limits())),  # (one remainder: no residues)
    ("at least 5", boolean.intersection(nm.PLAIN_ANY, nm.at_least(Decimal(5), False, tokamata.Limits()))),
    ("integer", nm.INTEGER_ANY),
    ("plain", nm.PLAIN_ANY),
    ("values", d.alternation(nm.number_value(Decimal(6), tokamata.Limits()),
                             nm.number_value(Decimal(LONG), tokamata.Limits()))),
])
def test_overflow_safe_leaves_out_exactly_long_fractions(name, number):
    final = nm.overflow_safe(number, tokamata.Limits())
    for text in NUMBERS + LONG_TEXTS:
        long_fraction = "." in text and len(text.lstrip("-").split(".")[0]) > 308
        assert _accepts(final, text) == (_accepts(number, text) and not long_fraction), (name, text)
    assert nm.overflow_safe(lx.NUMBER, tokamata.Limits()) is lx.NUMBER  # type number alone: every number


@pytest.mark.parametrize("name,number,integral", [
    ("multiple of 3", nm.multiple_of(Decimal(3), tokamata.Limits()), True),
    ("integer multiple of 3", boolean.intersection(nm.INTEGER_ANY, nm.multiple_of(Decimal(3), tokamata.Limits())),
     True),
    ("not even integer", boolean.difference(nm.INTEGER_ANY, nm.multiple_of(Decimal(2), tokamata.Limits())), True),
    ("multiples of 7 but not 11 or 13", boolean.intersection(
        nm.INTEGER_ANY, nm.multiple_of(Decimal(7), tokamata.Limits()),
        boolean.difference(nm.PLAIN_ANY, nm.multiple_of(Decimal(11), tokamata.Limits())),
        boolean.difference(nm.PLAIN_ANY, nm.multiple_of(Decimal(13), tokamata.Limits()))), True),
    ("multiple of 0.5", nm.multiple_of(Decimal("0.5"), tokamata.Limits()), False),
    ("not even", boolean.difference(nm.PLAIN_ANY, nm.multiple_of(Decimal(2), tokamata.Limits())), False),
])
def test_overflow_safe_keeps_divisibility_to_remainders(name, number, integral):
    # the exact restriction would pair each remainder with each of 309 integer-part lengths:
    # integral languages lose their fractions instead (every value stays in, nothing outside
    # gets in), others keep fractions after long integer parts (numbers.py's docstring)
    final = nm.overflow_safe(number, tokamata.Limits())
    for text in NUMBERS + LONG_TEXTS:
        assert _accepts(final, text) == (_accepts(number, text) and not (integral and "." in text)), (name, text)


def test_overflow_safe_spells_large_remainder_products_without_fraction():
    # exactly, the automaton would pair 3003 remainders with 309 integer lengths: integral values
    # lose their ".0" spellings instead (every value stays in, nothing outside gets in)
    limits = tokamata.Limits()
    number = boolean.intersection(
        nm.INTEGER_ANY, boolean.difference(nm.PLAIN_ANY, nm.multiple_of(Decimal(7), limits)),
        boolean.difference(nm.PLAIN_ANY, nm.multiple_of(Decimal(11), limits)),
        d.alternation(boolean.difference(nm.multiple_of(Decimal(3), limits), nm.multiple_of(Decimal(13), limits)),
                      boolean.difference(nm.multiple_of(Decimal(13), limits), nm.multiple_of(Decimal(3), limits))))
    final = nm.overflow_safe(number, limits)
    for n in range(-200, 200):
        valid = n % 7 != 0 and n % 11 != 0 and (n % 3 == 0) != (n % 13 == 0)
        assert _accepts(final, str(n)) == valid, n
        assert not _accepts(final, f"{n}.0")


@pytest.mark.parametrize("schema,remainders", [
    ({"type": "integer", "allOf": [{"not": {"multipleOf": 7}}, {"not": {"multipleOf": 11}},
                                   {"oneOf": [{"multipleOf": 3}, {"multipleOf": 13}]}]}, 3003),
    ({"type": "integer", "multipleOf": 7}, 7),
    ({"type": "integer", "not": {"multipleOf": 2}}, 2),
    ({"type": "number", "multipleOf": 840}, 840),
    ({"type": "number", "not": {"multipleOf": 2}}, None),  # (fractions: nothing narrowed)
    ({"type": "number", "multipleOf": 0.25}, None),
    ({"type": "integer"}, None),
])
def test_integer_notation_narrowing_is_reported(schema, remainders):
    _, report = schema_to_grammar(schema, spelling="any")
    found = [a for a in report if a.kind == "integer-notation"]
    if remainders is None:
        assert not found, schema
    else:
        assert len(found) == 1 and f"({remainders} remainders)" in str(found[0]), schema
    _, report = schema_to_grammar(schema)  # natural spelling: integral values have no fraction anyway
    assert "integer-notation" not in [a.kind for a in report], schema


def test_combined_multiples_keep_the_lexer_small():
    # regression (4e92a35): the 309-digit counter multiplied every remainder state; a long
    # number then crossed max_dfa_states after ~100 tokens
    schema = {"type": "integer", "allOf": [{"not": {"multipleOf": 7}}, {"not": {"multipleOf": 11}},
                                           {"oneOf": [{"multipleOf": 3}, {"multipleOf": 13}]}]}
    tokens = [str(i).encode() for i in range(100)] + [b"-", b".", None]
    vocab = tokamata.Vocabulary.from_token_bytes(tokens, eos_token_ids=[len(tokens) - 1])
    matcher = tokamata.compile_json_schema(schema, vocab, limits=tokamata.Limits(max_dfa_states=10000)).matcher()
    for _ in range(150):
        assert tokens.index(b"1") in matcher.allowed_tokens().tolist()
        assert matcher.consume(tokens.index(b"1"))
    n = int("1" * 150)
    assert matcher.is_accepting() == (n % 7 != 0 and n % 11 != 0 and (n % 3 == 0) != (n % 13 == 0))


def test_intersection_and_difference_keep_nonempty_invariant():
    a = lx.literal("ab")
    assert boolean.intersection(a, lx.literal("ac")) is d.NOTHING
    assert boolean.difference(a, a) is d.NOTHING
    star = d.repeat(d.byte_set(1 << 97), 0, d.UNBOUNDED)
    even = d.repeat(lx.literal("aa"), 0, d.UNBOUNDED)
    odd = boolean.difference(star, even)
    assert _accepts(odd, "aaa") and not _accepts(odd, "aaaa")
    assert boolean.intersection(odd, even) is d.NOTHING
    with pytest.raises(tokamata.LimitExceeded):
        big = d.repeat(d.byte_set(1 << 97), 0, 5000)
        boolean.intersection(big, lx.literal("b"), limits=tokamata.Limits(max_dfa_states=10)) and \
            boolean.difference(big, d.repeat(d.byte_set(1 << 97), 0, 4999), limits=tokamata.Limits(max_dfa_states=10))


# -- with the engine and a real tokenizer ---------------------------------------------------
ENGINE_SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                      "age": {"type": "integer", "minimum": 0, "maximum": 150},
                                      "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3}},
     "required": ["name"], "additionalProperties": False},
    {"type": "array", "items": {"type": "string", "format": "date"}, "minItems": 1},
    {"anyOf": [{"type": "number", "multipleOf": 0.5}, {"type": "string", "pattern": "^[A-Z]{2}\\d+$"}]},
]
ENGINE_VALUES = [
    ({"name": "Zoë", "age": 41, "tags": ["a", "b"]}, {"name": "Al"}),
    (["2024-02-29", "1999-01-31"],),
    (2.5, -10, "AB12"),
]
ENGINE_INVALID = [
    [{"name": "Bob", "age": 151}, {"age": 3}, {"name": "x", "tags": ["c"]}, {"name": "123456789"}],
    [[], ["2023-02-29"]],
    [0.3, "ab12"],
]


def test_engine_with_llama3():
    from real_tokenizers import llama3

    tokenizer = llama3()
    vocab = tokenizer.vocab
    if not hasattr(tokamata, "compile_grammar_ir"):
        pytest.skip("the grammar engine is not available")
    for schema, values, invalid in zip(ENGINE_SCHEMAS, ENGINE_VALUES, ENGINE_INVALID):
        grammar, _ = schema_to_grammar(schema)
        constraint = tokamata.compile_grammar_ir(grammar, vocab)
        for value in values:
            matcher = constraint.matcher()
            for token in tokenizer.encode(compact(value).decode()):
                assert token in set(matcher.allowed_tokens().tolist()), (value, vocab.token_bytes[token])
                assert matcher.consume(token)
            assert matcher.is_accepting(), value
        for value in invalid:
            matcher = constraint.matcher()
            ok = all(matcher.consume(t) for t in tokenizer.encode(compact(value).decode()))
            assert not (ok and matcher.is_accepting()), value
        rng = random.Random(3)
        for _ in range(6):
            matcher = constraint.matcher()
            out = random_walk(matcher, vocab, rng, steps=80, stop_after=20, stop_chance=0.2, short_bytes=3,
                              short_bias=0.8)
            if matcher.is_accepting():
                assert oracle_valid(schema, json.loads(out)), out


ANCHORS = [
    ("(^a.b)|(^xy)", ["a.bz", "xyz"], ["za.b", "zxy"]),
    ("^(\\d{4}(-\\d{2})?$)|(^\\d{2}$)", ["2024", "2024-01", "12"], ["20245", "x12", "123"]),
    ("^$|(^(?:\\S+\\s+){0,2}\\S+$)", ["", "a b", "a b c"], ["a b c d", " a"]),
    ("^[\\S]+$", ["ab"], ["a b", ""]),
    ("^[a\\S]$", ["a", "b"], [" "]),
]


@pytest.mark.parametrize("pattern,valid,invalid", ANCHORS, ids=[r[0] for r in ANCHORS])
def test_anchors_in_whole_groups_and_non_space_classes(pattern, valid, invalid):
    grammar, _ = schema_to_grammar({"type": "string", "pattern": pattern})
    for value in valid:
        assert oracle_valid({"pattern": pattern}, value)
        assert recognize(grammar, compact(value)), (pattern, value)
    for value in invalid:
        assert not oracle_valid({"pattern": pattern}, value)
        assert not recognize(grammar, compact(value)), (pattern, value)


def test_long_literals_compile_without_recursion():
    """Concatenation chains as long as a schema's strings (a 5,000-character const, and an
    enum of them) are built and appended to without recursion; what they cost in DFA
    states is bounded by the limits."""
    from real_tokenizers import llama3

    tokenizer = llama3()
    long_text = "ab" * 2500
    limits = tokamata.Limits(max_dfa_states=100_000)
    for schema in ({"const": long_text}, {"enum": [long_text, long_text + "c"]}):
        constraint = tokamata.compile_json_schema(schema, tokenizer.vocab, limits=limits)
        matcher = constraint.matcher()
        assert all(matcher.consume(t) for t in tokenizer.encode(json.dumps(long_text)))
        assert matcher.is_accepting()
        matcher = constraint.matcher()
        ok = all(matcher.consume(t) for t in tokenizer.encode(json.dumps(long_text[:-1])))
        assert not (ok and matcher.is_accepting())
    # a state per character at least: 5,002 bytes of const cross a bound of 4,000 states
    with pytest.raises(tokamata.LimitExceeded, match="max_dfa_states"):
        few = tokamata.Limits(max_dfa_states=4_000)
        matcher = tokamata.compile_json_schema({"const": long_text}, tokenizer.vocab, limits=few).matcher()
        for token in tokenizer.encode(json.dumps(long_text)):
            matcher.consume(token)


@pytest.mark.parametrize("text", [
    '{"allOf": [{"properties": {"a": {}}}], "unevaluatedProperties": false}',
    # the keyword spelled with an escape: a plain text search of the schema would miss it
    '{"allOf": [{"properties": {"a": {}}}], "unevaluatedPr\\u006fperties": false}',
])
def test_unevaluated_keywords_found_in_schema_text(text):
    schema = json.loads(text)
    grammar, _ = schema_to_grammar(text)
    for value, valid in (({"a": 1}, True), ({}, True), ({"a": 1, "b": 2}, False)):
        assert oracle_valid(schema, value) is valid
        assert recognize(grammar, compact(value)) is valid, (text, value)
