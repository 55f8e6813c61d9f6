"""Natural JSON spelling (``spelling="natural"``, the default of compile_json, compile_json_schema
and ``%json``): one spelling per value, checked on the real Llama 3 tokenizer.

- Every value of a table row, in natural spelling (tests/natural_json.py: ``json.dumps(value,
  ensure_ascii=False)`` for strings, keys and every number ``json.dumps`` already writes in
  shortest plain decimal; the test asserts which ones), is accepted token by token: each token
  of its ``tokenizers`` encoding is in the mask, and the matcher accepts at the end.
- Other RFC 8259 spellings of allowed values (``22.0``, ``2.50``, ``-0``, ``1E2``, ``\\u0065``,
  ``\\/``, upper-case hex, escaped quotes as ``\\u0022``) are refused under natural spelling and
  accepted under ``spelling="any"``.
- The shape-keeping rewrite of string languages (tokamata.syntax.json_schema.natural) equals
  the intersection with the natural strings, and keeps what the slices' text-depth analysis
  proves.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import tokamata
from natural_json import is_natural_float, natural_dumps, natural_number
from real_tokenizers import llama3

CONTROLS = "".join(chr(c) for c in range(0x20))
STRINGS = [CONTROLS, '"', "\\", "/", "a\"b\\c/d", "é", "😀", "中文", "\u2028\u2029", "\x7f", "\ufeff", "",
           "tab\there\nnew", "ÿ\"\\\n\x01\x1f"]

# (schema, values): every value valid, each accepted in natural spelling
TABLE = [
    ({"type": "integer"}, [0, 22, -7, 10 ** 20, -(10 ** 30) + 1]),
    ({"type": "integer", "minimum": -5, "maximum": 300}, [-5, 0, 22, 300]),
    ({"type": "integer", "exclusiveMinimum": 0, "multipleOf": 3}, [3, 30, 3 * 10 ** 12]),
    ({"type": "number"}, [0, 2.5, -0.125, 0.1, 1234.5678, 1e-7, 2.0, 1e16, -3, 1.5e300]),
    ({"type": "number", "minimum": 0.5, "exclusiveMaximum": 10}, [0.5, 0.75, 9.99, 1, 9.999999]),
    ({"type": "number", "multipleOf": 0.25, "maximum": 100}, [0.25, -1.75, 3, 100, -1000.5]),
    ({"type": "number", "not": {"multipleOf": 2}}, [1, 2.5, -3, 0.001]),
    ({"enum": [1.5, 2.0, 100, -0.0, "a\"b", "x/y", "é\n", None, True]}, [1.5, 2.0, 100, 0, "a\"b", "x/y", "é\n",
                                                                         None, True]),
    ({"const": 1e2}, [100]),
    ({"type": "string"}, STRINGS),
    ({"type": "string", "minLength": 2, "maxLength": 3}, ["é😀", "\n\"\\", "\x01\x02", "ab/"]),
    ({"type": "string", "pattern": "^[a-z\"\\\\/\\n]+$"}, ["ab", "a\"b", "a\\b", "a/b", "a\nb"]),
    ({"type": "string", "format": "date"}, ["2024-02-29", "1999-12-31"]),
    ({"type": "string", "format": "email"}, ["a/b@example.com", "\"q\\\"uoted\"@x.org"]),
    ({"type": "object", "properties": {"a\"b": {"type": "integer"}, "tab\tkey": {"type": "string"},
                                       "é/": {"type": "boolean"}, "ctl\x1f": {"type": "null"}},
      "additionalProperties": {"type": "number"}},
     [{"a\"b": 1, "tab\tkey": "x", "é/": True, "ctl\x1f": None, "new\nkey": 2.5, "/": 0, "\\": -1, "😀": 0.5},
      {"\u0065": 22}, {}]),
    ({"type": "object", "propertyNames": {"pattern": "^[a-z\\n\"]+$"}, "additionalProperties": {"type": "integer"}},
     [{"a\nb": 1, "q\"": 2}]),
    ({"type": "object", "patternProperties": {"^x": {"type": "string"}}, "additionalProperties": False},
     [{"x\\": "\"", "x/": "/"}]),
    ({"type": "array", "items": {"enum": ["a\"", "b\\", "c/"]}, "uniqueItems": True}, [["a\"", "b\\", "c/"]]),
    ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "number"}], "items": {"type": "string"}},
     [[1, 2.0, "x"], [-4, 0.5]]),
]

# (schema or None for compile_json, text): a valid JSON text of an allowed value in a spelling
# other than the natural one; refused under natural spelling, accepted under "any"
OTHER_SPELLINGS = [
    ({"type": "integer"}, "22.0"),
    ({"type": "integer"}, "-0"),
    ({"type": "integer", "minimum": 0}, "7.00"),
    ({"type": "number"}, "2.50"),
    ({"type": "number"}, "1E2"),
    ({"type": "number"}, "1e2"),
    ({"type": "number"}, "-0.0"),
    ({"type": "number"}, "0.0"),
    ({"type": "number", "maximum": 10}, "2.50"),
    ({"enum": [2.5, "e"]}, "2.500"),
    ({"enum": [2.5, "e"]}, '"\\u0065"'),
    ({"type": "string"}, '"\\u0065"'),
    ({"type": "string"}, '"\\/"'),
    ({"type": "string"}, '"\\u000a"'),
    ({"type": "string"}, '"\\u0022"'),
    ({"type": "string"}, '"\\u005c"'),
    ({"type": "string"}, '"\\u00e9"'),
    ({"type": "string"}, '"\\u001F"'),
    ({"type": "string"}, '"\\ud83d\\ude00"'),
    ({"type": "string", "maxLength": 2}, '"\\u0061b"'),
    ({"type": "string", "pattern": "^a"}, '"\\u0061"'),
    ({"type": "string", "format": "date"}, '"\\u0032024-02-29"'),
    ({"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}, '{"ag\\u0065":22}'),
    ({"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}, '{"age":22.0}'),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, '{"\\/":1}'),
    ({"type": "object", "propertyNames": {"maxLength": 3}}, '{"\\u0061":1}'),
    (None, "22.0"),
    (None, "1E2"),
    (None, "-0"),
    (None, '"\\u0065"'),
    (None, '"\\/"'),
    (None, '{"ag\\u0065":1}'),
    (None, '["\\u000A"]'),
]


@pytest.fixture(scope="module")
def tokenizer():
    return llama3()


def accepted(constraint, tokenizer, text: str) -> bool:
    """Every token of the encoding of ``text`` is in the mask at its step, and the matcher
    accepts at the end."""
    vocab = tokenizer.vocab
    bitmask = tokamata.allocate_bitmask(1, vocab.size)
    m = constraint.matcher()
    for token in tokenizer.encode(text):
        m.fill_bitmask(bitmask)
        if not (bitmask[0, token >> 5] >> (token & 31)) & 1:
            return False
        assert m.consume(token)
    return m.is_accepting()


def test_the_oracle_spells_as_json_dumps_where_it_can():
    for value in (0, -7, 10 ** 20, 2.5, -0.125, 0.1, 1234.5678, 1.5e-3):
        assert natural_number(value) == json.dumps(value) and (not isinstance(value, float) or is_natural_float(value))
    for value, text in ((2.0, "2"), (1e16, "10000000000000000"), (1e-7, "0.0000001"), (-0.0, "0"), (1e2, "100")):
        assert natural_number(value) == text and not is_natural_float(value)
    assert natural_number(1.5e300) == "15" + "0" * 299
    for text in STRINGS:
        assert natural_dumps(text) == json.dumps(text, ensure_ascii=False)
    assert json.dumps(CONTROLS) == '"' + "".join(
        {8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}.get(c, f"\\u{c:04x}") for c in range(0x20)) + '"'


@pytest.mark.parametrize("schema, values", TABLE, ids=[json.dumps(r[0])[:50] for r in TABLE])
def test_natural_spellings_are_accepted(tokenizer, schema, values):
    from schema_walks import judge, validator

    check = validator(schema)
    constraint = tokamata.compile_json_schema(schema, tokenizer.vocab)
    for value in values:
        text = natural_dumps(value)
        assert judge(text.encode(), check)[0] == "valid", f"table wrong: {text}"
        assert accepted(constraint, tokenizer, text), (schema, text)


@pytest.mark.parametrize("whitespace", ["flexible", "pretty"])
def test_natural_spelling_with_whitespace(tokenizer, whitespace):
    schema = TABLE[14][0]
    value = TABLE[14][1][0]
    constraint = tokamata.compile_json_schema(schema, tokenizer.vocab, whitespace=whitespace)
    if whitespace == "flexible":
        text = natural_dumps(value, separators=(", ", ": "))
    else:  # (json.dumps's indented layout; only floats differ from natural, and 2.5, 0.5 do not)
        text = json.dumps(value, indent=2, ensure_ascii=False)
    assert accepted(constraint, tokenizer, text), text


def test_any_json_value(tokenizer):
    constraint = tokamata.compile_json(tokenizer.vocab)
    for value in [STRINGS, {"k\"": [1, 2.5, -0.125, None, True, {"\n": {}}]}, 1e16, 2.0, "😀", {s: s for s in STRINGS}]:
        assert accepted(constraint, tokenizer, natural_dumps(value)), natural_dumps(value)
    flexible = tokamata.compile_json(tokenizer.vocab, whitespace="flexible")
    assert accepted(flexible, tokenizer, natural_dumps({"a": [1, "b"]}, separators=(", ", ": ")))


@pytest.mark.parametrize("schema, text", OTHER_SPELLINGS, ids=[f"{json.dumps(s)[:30]}-{t}" for s, t in OTHER_SPELLINGS])
def test_other_spellings_only_under_any(tokenizer, schema, text):
    from schema_walks import judge, validator

    vocab = tokenizer.vocab
    if schema is None:
        natural, every = tokamata.compile_json(vocab), tokamata.compile_json(vocab, spelling="any")
    else:
        assert judge(text.encode(), validator(schema))[0] == "valid", f"table wrong: {text}"
        natural = tokamata.compile_json_schema(schema, vocab)
        every = tokamata.compile_json_schema(schema, vocab, spelling="any")
    assert not accepted(natural, tokenizer, text), text
    assert accepted(every, tokenizer, text), text


def test_mask_after_an_integer_offers_no_fraction(tokenizer):
    # a weak model's derailment: "age":22 then ".000000..." until max_tokens
    vocab = tokenizer.vocab
    schema = {"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}
    m = tokamata.compile_json_schema(schema, vocab).matcher()
    for token in tokenizer.encode('{"age":22'):
        assert m.consume(token)
    allowed = m.allowed_tokens().tolist()
    assert allowed, "nothing allowed after 22"
    for token in allowed:
        piece = vocab.token_bytes[token] or b""
        assert not piece.startswith((b".", b"e", b"E")), piece
    dot = tokenizer.encode(".")[0]
    assert dot not in allowed
    m = tokamata.compile_json_schema(schema, vocab, spelling="any").matcher()
    for token in tokenizer.encode('{"age":22'):
        assert m.consume(token)
    assert dot in m.allowed_tokens().tolist()


def test_inside_a_key_no_escape_but_the_needed_ones(tokenizer):
    vocab = tokenizer.vocab
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    m = tokamata.compile_json_schema(schema, vocab).matcher()
    assert m.consume(tokenizer.encode("{")[0]) and m.consume(tokenizer.encode('"')[0])
    backslash = tokenizer.encode("\\")[0]
    assert m.consume(backslash)
    pieces = sorted({(vocab.token_bytes[t] or b"")[:1] for t in m.allowed_tokens().tolist()} - {b""})
    assert pieces == sorted(bytes([c]) for c in b'"\\bfnrtu'), pieces


def test_report_and_description(tokenizer):
    vocab = tokenizer.vocab
    natural = tokamata.compile_json_schema({"type": "integer", "maximum": 3}, vocab)
    assert natural.report() == ["spelling at /: " + _natural_report()]
    every = tokamata.compile_json_schema({"type": "integer", "maximum": 3}, vocab, spelling="any")
    assert [line.split(" at ")[0] for line in every.report()] == ["number-notation"]
    assert tokamata.compile_json(vocab).report() == ["spelling at /: " + _natural_report()]
    assert tokamata.compile_json(vocab, spelling="any").report() == []
    assert "spelling='natural'" in repr(tokamata.compile_json(vocab))
    assert "spelling='any'" in repr(tokamata.compile_json(vocab, spelling="any"))


def _natural_report() -> str:
    from tokamata.syntax.json_spelling import NATURAL_REPORT

    return NATURAL_REPORT


@pytest.mark.parametrize("bad", ["Natural", "ANY", "rfc", "", None, 1, True, ("any",)])
def test_unknown_spelling_is_invalid_argument(tokenizer, bad):
    vocab = tokenizer.vocab
    for compile_call in (lambda: tokamata.compile_json(vocab, spelling=bad),
                         lambda: tokamata.compile_json_schema({"type": "integer"}, vocab, spelling=bad)):
        with pytest.raises(tokamata.InvalidArgument, match="spelling must be 'natural' or 'any'"):
            compile_call()


def test_json_in_grammars(tokenizer):
    vocab = tokenizer.vocab
    natural = tokamata.compile_grammar('start: "n=" %json {"type": "object", "additionalProperties": '
                                       '{"type": "integer"}}', vocab)
    named = tokamata.compile_grammar('start: "n=" %json natural {"type": "object", "additionalProperties": '
                                     '{"type": "integer"}}', vocab)
    every = tokamata.compile_grammar('start: "n=" %json any\n  {"type": "object", "additionalProperties": '
                                     '{"type": "integer"}}', vocab)
    for text, natural_ok in (('n={"a\\"":1}', True), ('n={"a":1.0}', False), ('n={"\\u0061":1}', False),
                             ('n={"\\/":-0}', False), ('n={}', True)):
        assert accepted(natural, tokenizer, text) is natural_ok, text
        assert accepted(named, tokenizer, text) is natural_ok, text
        assert accepted(every, tokenizer, text), text
    with pytest.raises(tokamata.InvalidSyntax, match="natural or any") as info:
        tokamata.compile_grammar('start: "x" %json rfc {"type": "integer"}', vocab)
    assert info.value.span == (17, 20) and info.value.column == 18


def test_json_in_grammars_reports_its_spelling(tokenizer):
    """The report of a grammar holds its %json schemas' approximations, each naming where
    the %json is (natural spelling is reported; `any` is exact and reports nothing)."""
    natural = tokamata.compile_grammar('start: "n=" %json {"type": "integer"}\n  | "m=" %json any {"type": "integer"}',
                                       tokenizer.vocab)
    assert len(natural.report()) == 1, natural.report()
    assert natural.report()[0].startswith("spelling at /: natural")
    assert natural.report()[0].endswith("(the %json at line 1, column 13)")
    assert tokamata.compile_grammar('start: "n=" %json any {"type": "integer"}', tokenizer.vocab).report() == []


# -- the shape-keeping rewrite --------------------------------------------------------------
def _string_languages():
    """String languages as the schema compiler builds them (every spelling)."""
    from tokamata.syntax.json_schema import lexemes as lx
    from tokamata.syntax.json_schema.formats import format_content
    from tokamata.syntax.json_schema.strings import length_content, pattern_content

    limits = tokamata.Limits()
    return [
        lx.ANY_STRING,
        lx.string_of(length_content(0, 6)),
        lx.string_of(length_content(2, None)),
        lx.string_of(pattern_content("^[a-z\"\\\\/\\n]+$", "pattern", "", limits)),
        lx.string_of(pattern_content("x\\u0001", "pattern", "", limits)),
        lx.string_of(format_content("date")),
        lx.string_literal("a\"b\\c/d\n\x01é😀" * 3),
        lx.string_literals(["a\"", "a\\", "a/", "b", "\n\n\n", "", "é"]),
        lx.string_literal_then("key\"", lx.literal(":")),
    ]


def test_natural_rewrite_equals_the_intersection():
    from tokamata.automata import boolean
    from tokamata.automata import derivatives as d
    from tokamata.syntax.json_schema.natural import Naturalizer
    from tokamata.syntax.json_spelling import NATURAL_STRING
    from tokamata.syntax.json_schema import lexemes as lx

    limits = tokamata.Limits()
    rewrite = Naturalizer(limits)
    for language in _string_languages():
        natural = rewrite.string(language)
        expected = boolean.intersection(language, NATURAL_STRING, limits=limits)
        if language is lx.string_literal_then("key\"", lx.literal(":")):
            expected = boolean.intersection(language, d.concat(NATURAL_STRING, lx.literal(":")), limits=limits)
        assert boolean.difference(natural, expected, limits) is d.NOTHING, d.describe(language)[:200]
        assert boolean.difference(expected, natural, limits) is d.NOTHING, d.describe(language)[:200]
        assert natural is not d.NOTHING and natural.kind != d.Kind.AND


def test_natural_rewrite_keeps_text_depth():
    from tokamata.automata import derivatives as d
    from tokamata.slices import UNLIMITED, text_depth
    from tokamata.syntax.json_schema.natural import Naturalizer

    rewrite = Naturalizer(tokamata.Limits())
    languages = _string_languages()
    for language, depth in ((languages[0], UNLIMITED), (languages[1], 6), (languages[2], UNLIMITED)):
        after_quote = d.derivative(rewrite.string(language), ord('"'))
        assert text_depth(after_quote) == depth == text_depth(d.derivative(language, ord('"')))


def test_natural_literals_of_values():
    from tokamata.automata import derivatives as d
    from tokamata.syntax.json_spelling import natural_literal, natural_number as library_number

    for text in STRINGS:
        node = natural_literal(text)
        for byte in json.dumps(text, ensure_ascii=False).encode():
            node = d.derivative(node, byte)
        assert node.nullable
    assert natural_literal("\ud800") is d.NOTHING  # a lone surrogate has no natural spelling
    for value in (0, -0.0, 2.0, 2.5, 1e16, 1e-7, 10 ** 30, -1.25e-3):
        assert library_number(value) == natural_number(value)
    assert np.all([library_number(v) == natural_number(v) for v in (0.1, 1e300, 5e-324)])
