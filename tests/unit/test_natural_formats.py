"""Natural spellings of formats, patterns and string values, built directly, equal the rewrite's.

The expander builds the string keywords (lengths, ``pattern``, ``format``) and string values
(``enum``, ``const``) a second time from ``natural_char`` and records the result as the
natural spellings of the language, so the emitter no longer rewrites it
(tokamata.syntax.json_schema.natural). Checked here against the rewrite itself, the path
every natural-spelling compile took before:

- language level: for every format, a table of patterns (with characters that need
  escaping, non-ASCII, anchors, classes), string values and their combinations with lengths,
  what the emitter reads is the language the rewrite makes of the every-spelling one;
- mask level, on the real Llama 3 vocabulary: the constraint compiled as now and the one
  compiled with the recorded spellings ignored (the rewrite) give the same mask at every step
  of random walks, and accept the same texts (``json.dumps`` spellings of valid values, and
  escaped spellings only the any spelling has).
"""

from __future__ import annotations

import json
import random

import pytest

import real_tokenizers
import tokamata
from tokamata.automata import boolean
from tokamata.automata import derivatives as d
from tokamata.syntax.json_schema import formats as fm
from tokamata.syntax.json_schema.expand import Expander
from tokamata.syntax.json_schema.natural import Naturalizer
from tokamata.syntax.json_schema.refs import Document
from tokamata.syntax.json_schema.report import Options, Report

PATTERNS = [
    "^[a-z\"\\\\/\\n]+$",
    "x\\u0001",
    "^[A-Fa-f\\d]{24}$",
    "^/(([a-zA-Z0-9._~!$&'()*+,;=:@-]|%[0-9a-fA-F]{2})+(/([a-zA-Z0-9._~!$&'()*+,;=:@-]|%[0-9a-fA-F]{2})*)*)?$",
    "^[a-f0-9]{8}-[a-f0-9]{4}-[1-5][a-f0-9]{3}-[89ab][a-f0-9]{3}-[a-f0-9]{12}$",
    "^\\S{2,5}$",
    "^.{0,12}$",
    "[^\"]\"",
    "é+ü",
    "^\\w+@\\w+\\.com$|^\\d{3}$",
    "^[\\u0000-\\u001f\\t]{1,3}$",
    "abc",
    "^\\s*$",
    "😀{2}",
]

SCHEMAS = ([{"type": "string", "format": name} for name in fm.FORMATS]
           + [{"type": "string", "pattern": pattern} for pattern in PATTERNS]
           + [{"type": "string", "format": "date-time", "maxLength": 25},
              {"type": "string", "format": "email", "minLength": 1, "pattern": "^[a-z]"},
              {"type": "string", "pattern": "^[a-z\"]+$", "minLength": 2, "maxLength": 6},
              {"type": "string", "maxLength": 8},
              {"anyOf": [{"format": "date"}, {"format": "time"}, {"pattern": "^\\\\"}]},
              {"allOf": [{"format": "uri"}, {"pattern": "^https:"}]},
              {"type": "string", "not": {"format": "date"}, "maxLength": 10},
              {"type": "object", "propertyNames": {"pattern": "^[a-z\\n]{1,3}$"}, "maxProperties": 2},
              {"enum": ["a\"b", "c\\d", "e/f", "\n", "é", "\u0001", "😀", "", "ab", "abc", "\ud800", 1]},
              {"const": "x\"y\u001f/"},
              {"enum": ["2024-01-01", "x"], "format": "date"},
              {"type": "object", "propertyNames": {"enum": ["a", "b\\"]}, "maxProperties": 1}])


def _ids(schema) -> str:
    return json.dumps(schema, ensure_ascii=False)[:60]


def _string_languages(schema):
    """(what the emitter reads for the schema's strings, the rewrite of its any spelling)."""
    limits = tokamata.Limits()
    expander = Expander(Document(schema), Options(spelling="natural"), limits, Report())
    node = expander.node(expander.conj(()))
    string = node.objects[0].names if node.objects else node.string  # (property names: propertyNames)
    assert string.kind != d.Kind.NOTHING
    return expander.natural.string(string), Naturalizer(limits).string(string)


@pytest.mark.parametrize("schema", SCHEMAS, ids=_ids)
def test_recorded_spellings_are_the_rewrite(schema):
    built, rewritten = _string_languages(schema)
    limits = tokamata.Limits()
    assert boolean.difference(built, rewritten, limits) is d.NOTHING
    assert boolean.difference(rewritten, built, limits) is d.NOTHING


def test_natural_format_contents_are_the_rewrite_of_the_any_ones():
    from tokamata.syntax.json_schema import lexemes as lx

    limits = tokamata.Limits()
    for name in fm.FORMATS:
        natural = lx.string_of(fm.format_content(name, "natural"))
        rewritten = Naturalizer(limits).string(lx.string_of(fm.format_content(name)))
        assert boolean.difference(natural, rewritten, limits) is d.NOTHING, name
        assert boolean.difference(rewritten, natural, limits) is d.NOTHING, name


@pytest.fixture(scope="module")
def tokenizer():
    return real_tokenizers.llama3()


def _rewrite_only(monkeypatch):
    """Ignore the recorded natural spellings: every string language is rewritten, as before."""
    monkeypatch.setattr(Naturalizer, "known", lambda self, string, natural: None)


VALUES = ["2024-02-29", "2023-02-29", "23:59:60Z", "2024-01-01T10:00:00.5+01:00", "P1Y2M", "a@b.co",
          "\"q\\\"x\"@b.c", "ex.com", "10.0.0.1", "::1", "123e4567-e89b-12d3-a456-426614174000",
          "https://x.org/a?b#c", "a b", "/a~1b", "0#", "a\"b", "x\u0001", "é\n", "\\", "aaaaaaaaaaaaaaaaaaaaaaaa",
          "/ab/c%2F", "ab", "\t\t", "😀😀", "éü", "abc", "  ", "{x}", ""]


@pytest.mark.parametrize("schema", SCHEMAS, ids=_ids)
def test_masks_equal_the_rewrites(schema, tokenizer, monkeypatch):
    vocab = tokenizer.vocab
    now = tokamata.compile_json_schema(schema, vocab)
    with monkeypatch.context() as patch:
        _rewrite_only(patch)
        before = tokamata.compile_json_schema(schema, vocab)
    rng = random.Random(json.dumps(schema))
    for _ in range(3):
        walker, follower = now.matcher(), before.matcher()
        for _step in range(40):
            allowed = walker.allowed_tokens()
            assert allowed.tolist() == follower.allowed_tokens().tolist()
            text = [t for t in allowed.tolist() if t not in vocab.eos_token_ids]
            if not text:
                break
            token = rng.choice(text)
            assert walker.consume(token) and follower.consume(token)
        assert walker.is_accepting() == follower.is_accepting()
    for value in VALUES:
        for text in (json.dumps(value, ensure_ascii=False), json.dumps(value)):
            assert _reads(now, tokenizer, text) == _reads(before, tokenizer, text), text


def _reads(constraint, tokenizer, text: str) -> tuple[int, bool]:
    """How many tokens of the encoding of ``text`` the constraint takes, and whether it
    accepts after all of them."""
    m = constraint.matcher()
    tokens = tokenizer.encode(text)
    for k, token in enumerate(tokens):
        if not m.consume(token):
            return k, False
    return len(tokens), m.is_accepting()
