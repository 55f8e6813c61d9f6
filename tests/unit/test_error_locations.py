"""Where an error is, as data: a table of (front end, input, error class, attributes).

Every row compiles its input through the public API and asserts every location attribute of
the error exactly (``text``, ``span``, ``line``, ``column``, ``pointer``; ``keyword`` for
:class:`~tokamata.Unsupported`): those a row does not name must be ``None``. Then: the
rendered message shows each of them while ``message`` names none (the place is rendered in
one place, the base class), and every error pickles with its attributes.
"""

from __future__ import annotations

import pickle

import pytest

import tokamata

VOCAB = tokamata.Vocabulary.from_token_bytes([b"a", b"b", b"x", None, None], eos_token_ids=[3],
                                             special_tokens={"<|eot|>": 4})
DRAFT4 = "http://json-schema.org/draft-04/schema#"
DRAFT2020 = "https://json-schema.org/draft/2020-12/schema"
REMOTE = "https://example.com/s.json"

#: how each front end is driven
COMPILE = {
    "regex": lambda text: tokamata.compile_regex(text, VOCAB),
    "lark": lambda text: tokamata.compile_grammar(text, VOCAB),
    "gbnf": lambda text: tokamata.compile_gbnf(text, VOCAB),
    "schema": lambda schema: tokamata.compile_json_schema(schema, VOCAB),
    "%json": lambda text: tokamata.compile_grammar(text, VOCAB),  # a schema inside a Lark grammar
}

#: ``text`` is the row's input itself
INPUT = object()

LOCATION = ("text", "span", "line", "column", "pointer")

ROWS = [
    # -- regexes: span into the pattern
    ("regex", "(a", tokamata.InvalidSyntax, dict(text=INPUT, span=(0, 1))),
    ("regex", r"ab\q", tokamata.InvalidSyntax, dict(text=INPUT, span=(2, 3))),
    ("regex", r"(a)\1", tokamata.Unsupported, dict(keyword="backreference", text=INPUT, span=(3, 5))),
    ("regex", "a(?=b)", tokamata.Unsupported, dict(keyword="lookaround", text=INPUT, span=(1, 6))),
    ("regex", r"[^\x00-\U0010ffff]", tokamata.InvalidSyntax, dict(text=INPUT, span=(0, 18))),
    # -- Lark: line, column and span in the grammar, on line 1 and later lines
    ("lark", 'start: "a" | b', tokamata.InvalidSyntax, dict(text=INPUT, span=(13, 14), line=1, column=14)),
    ("lark", 'start: "a"\n%foo', tokamata.InvalidSyntax, dict(text=INPUT, span=(11, 15), line=2, column=1)),
    ("lark", 'start: "a"\n  | <|nope|>', tokamata.InvalidSyntax,
     dict(text=INPUT, span=(15, 23), line=2, column=5)),
    ("lark", 'start: _sep{"a"}', tokamata.Unsupported,
     dict(keyword="rule templates", text=INPUT, span=(11, 12), line=1, column=12)),
    ("lark", 'start: "a"\n%declare X', tokamata.Unsupported,
     dict(keyword="%declare", text=INPUT, span=(11, 19), line=2, column=1)),
    ("lark", "start: /(a)\\1/", tokamata.Unsupported,
     dict(keyword="backreference", text=INPUT, span=(11, 13), line=1, column=12)),
    # (found by the grammar IR's check, from the rule's origin)
    ("lark", 'start: "a" | b\nb: b "x"', tokamata.InvalidSyntax,
     dict(text=INPUT, span=(18, 19), line=2, column=4)),
    # -- GBNF
    ("gbnf", 'root ::= "abc', tokamata.InvalidSyntax, dict(text=INPUT, span=(9, 10), line=1, column=10)),
    ("gbnf", 'root ::= "a"\nx ::= "b" "\\', tokamata.InvalidSyntax,
     dict(text=INPUT, span=(24, 25), line=2, column=12)),
    ("gbnf", "root ::= !<[4]>", tokamata.Unsupported,
     dict(keyword="negated token", text=INPUT, span=(9, 15), line=1, column=10)),
    ("gbnf", 'root ::= "a" | b\nb ::= b "x"', tokamata.InvalidSyntax,
     dict(text=INPUT, span=(23, 24), line=2, column=7)),
    ("gbnf", 'start ::= "a"', tokamata.InvalidSyntax, dict(text=INPUT)),  # no root rule: no place to point at
    # -- JSON Schema: SchemaError pointers at several depths
    ("schema", {"type": "strange"}, tokamata.SchemaError, dict(pointer="/type")),
    ("schema", {"$defs": {"a": {"minLength": -1}}, "$ref": "#/$defs/a"}, tokamata.SchemaError,
     dict(pointer="/$defs/a/minLength")),
    ("schema", {"properties": {"a": {"items": {"enum": 3}}}}, tokamata.SchemaError,
     dict(pointer="/properties/a/items/enum")),
    ("schema", {"allOf": [{}, {"multipleOf": 0}]}, tokamata.SchemaError, dict(pointer="/allOf/1/multipleOf")),
    ("schema", {"items": {"$ref": "#/$defs/missing"}}, tokamata.SchemaError, dict(pointer="/items/$ref")),
    ("schema", {"dependentRequired": {"a": ["b", 3]}}, tokamata.SchemaError,
     dict(pointer="/dependentRequired/a/1")),
    ("schema", {"type": "integer", "minimum": 5, "maximum": 4}, tokamata.SchemaError, dict(pointer="")),
    ("schema", '{"type": nope}', tokamata.SchemaError, dict(text=INPUT, span=(9, 10))),  # not JSON: where it stops
    # -- JSON Schema: Unsupported keywords
    ("schema", {"properties": {"a/b": {"type": "array", "uniqueItems": True}}}, tokamata.Unsupported,
     dict(keyword="uniqueItems", pointer="/properties/a~1b")),
    ("schema", {"items": {"$ref": REMOTE}}, tokamata.Unsupported, dict(keyword="$ref", pointer="/items/$ref")),
    ("schema", {"properties": {"a": {"format": "no-such-format"}}}, tokamata.Unsupported,
     dict(keyword="format", pointer="/properties/a")),
    ("schema", {"$schema": DRAFT2020, "$defs": {"e": {"$schema": DRAFT4, "type": "integer"}}, "$ref": "#/$defs/e"},
     tokamata.Unsupported, dict(keyword="$schema", pointer="/$defs/e")),
    ("schema", {"not": {"prefixItems": [{}], "items": {"type": "string"}}}, tokamata.Unsupported,
     dict(keyword="not", pointer="")),
    # -- JSON Schema patterns: the pattern's pointer and the span inside the pattern
    ("schema", {"properties": {"a": {"pattern": "x(a)\\1"}}}, tokamata.Unsupported,
     dict(keyword="pattern", pointer="/properties/a/pattern", text="x(a)\\1", span=(4, 6))),
    ("schema", {"pattern": "^a|b(?<=c)$"}, tokamata.Unsupported,
     dict(keyword="pattern", pointer="/pattern", text="^a|b(?<=c)$", span=(4, 10))),
    ("schema", {"pattern": "[\\d\\S\\p{L}]"}, tokamata.Unsupported,
     dict(keyword="pattern", pointer="/pattern", text="[\\d\\S\\p{L}]", span=(5, 7))),
    ("schema", {"patternProperties": {"(a)\\1": {}}}, tokamata.Unsupported,
     dict(keyword="patternProperties", pointer="/patternProperties/(a)\\1", text="(a)\\1", span=(3, 5))),
    ("schema", {"pattern": "ab(c"}, tokamata.SchemaError, dict(pointer="/pattern", text="ab(c", span=(2, 3))),
    ("schema", {"pattern": "a\\qb"}, tokamata.SchemaError, dict(pointer="/pattern", text="a\\qb", span=(1, 3))),
    # -- %json in a Lark grammar: the pointer inside the schema and the place of the %json
    ("%json", 'start: %json {"type": "strin"}', tokamata.SchemaError,
     dict(pointer="/type", text=INPUT, span=(7, 30), line=1, column=8)),
    ("%json", 'start: "a"\n  | %json {"properties": {"x": {"$ref": "' + REMOTE + '"}}}', tokamata.Unsupported,
     dict(keyword="$ref", pointer="/properties/x/$ref", text=INPUT, span=(15, 82), line=2, column=5)),
]


def _raised(kind: str, source: object, error: type) -> tokamata.TokamataError:
    with pytest.raises(error) as info:
        COMPILE[kind](source)
    assert type(info.value) is error
    return info.value


def _row_id(row: tuple) -> str:
    return f"{row[0]}:{str(row[1])[:40]}"


@pytest.mark.parametrize("kind,source,error,expected", ROWS, ids=[_row_id(row) for row in ROWS])
def test_the_error_says_where_as_data(kind: str, source: object, error: type, expected: dict) -> None:
    found = _raised(kind, source, error)
    want = {name: None for name in LOCATION}
    want.update({name: source if value is INPUT else value for name, value in expected.items()})
    got = {name: getattr(found, name) for name in want}
    assert got == want, str(found)
    if error is tokamata.Unsupported:
        assert "keyword" in expected, "an Unsupported row names its keyword"
        assert found.feature == found.keyword  # the older name


@pytest.mark.parametrize("kind,source,error,expected", ROWS, ids=[_row_id(row) for row in ROWS])
def test_the_message_renders_the_place_from_the_attributes(kind: str, source: object, error: type,
                                                           expected: dict) -> None:
    found = _raised(kind, source, error)
    rendered = str(found)
    if found.pointer is not None:
        at = f" at {found.pointer or '/'}"
        assert at in rendered and at not in found.message
        rendered = rendered.replace(at, "", 1)
    assert rendered.startswith(found.message)  # the message, then the place
    if found.line is not None:
        place = f"line {found.line}, column {found.column}"
        assert place in rendered and place not in found.message
        assert ("in %json at " + place in rendered) == (found.pointer is not None)
    if found.span is not None:
        start, end = found.span
        assert f" at {start}..{end} (" in rendered
        assert f"{start}..{end}" not in found.message
    if (found.pointer, found.line, found.span) == (None, None, None):
        assert rendered == found.message


@pytest.mark.parametrize("kind,source,error,expected", ROWS, ids=[_row_id(row) for row in ROWS])
def test_errors_pickle_with_their_attributes(kind: str, source: object, error: type, expected: dict) -> None:
    found = _raised(kind, source, error)
    copy = pickle.loads(pickle.dumps(found))
    assert type(copy) is type(found)
    assert vars(copy) == vars(found) and copy.args == found.args and str(copy) == str(found)


def test_limit_exceeded_pickles_with_limit_value_and_bound() -> None:
    with pytest.raises(tokamata.LimitExceeded) as info:
        tokamata.compile_regex("abcdef", VOCAB, limits=tokamata.Limits(max_pattern_length=3))
    copy = pickle.loads(pickle.dumps(info.value))
    assert type(copy) is tokamata.LimitExceeded
    assert (copy.limit, copy.value, copy.bound) == ("max_pattern_length", 6, 3)
    assert {name: getattr(copy, name) for name in LOCATION} == dict.fromkeys(LOCATION)
    assert str(copy) == str(info.value) and "max_pattern_length" in str(copy)


def test_invalid_argument_is_a_value_error_and_pickles() -> None:
    error = tokamata.InvalidArgument("token id 9 is out of range")
    copy = pickle.loads(pickle.dumps(error))
    assert isinstance(copy, ValueError) and type(copy) is tokamata.InvalidArgument
    assert copy.message == "token id 9 is out of range" == str(copy)
