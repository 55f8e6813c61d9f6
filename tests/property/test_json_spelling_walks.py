"""Natural JSON spelling, property-based, on the real Llama 3 tokenizer.

- Completeness: random JSON values valid for a few schemas (hypothesis strategies written for
  each schema), in natural spelling (tests/natural_json.py), are accepted token by token by
  ``compile_json_schema`` (and any JSON value by ``compile_json``).
- Soundness and uniqueness: random walks through the natural masks (tests/schema_walks.py)
  end in JSON that ``json.loads`` reads and ``jsonschema`` validates, and that reads back (numbers
  as exact decimals) and re-serializes naturally to the very same text: no value has a second
  spelling in the language.
"""

from __future__ import annotations

import functools
import json
import zlib
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import real_tokenizers
import tokamata
from natural_json import natural_dumps
from schema_walks import Walker, judge, validator

PERSON = {"type": "object",
          "properties": {"name": {"type": "string", "maxLength": 12},
                         "age": {"type": "integer", "minimum": 0, "maximum": 150},
                         "score": {"type": "number", "minimum": -1000, "maximum": 1000},
                         "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                         "ok": {"type": "boolean"}},
          "required": ["name", "age"],
          "additionalProperties": {"type": ["number", "string", "null"]}}
HALVES = {"type": "number", "minimum": -5.5, "exclusiveMaximum": 1000000, "multipleOf": 0.5}
KEYS = {"type": "object", "patternProperties": {"^[a-z\"\\\\/\\n]{1,4}$": {"type": "integer"}},
        "propertyNames": {"maxLength": 4}, "additionalProperties": False}
ENUM = {"type": "array", "items": {"enum": ["a\"b", "c\\d", "e/f", "\n", "é", 2.5, 100, 0]}, "maxItems": 4}

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)


def _person():
    declared = PERSON["properties"]
    optional = {"score": st.floats(-1000, 1000, allow_nan=False) | st.integers(-1000, 1000),
                "tags": st.lists(TEXT, max_size=3), "ok": st.booleans()}
    extra = st.dictionaries(TEXT.filter(lambda k: k not in declared),
                            FLOATS | st.integers() | TEXT | st.none(), max_size=3)

    @st.composite
    def build(draw):
        value = {"name": draw(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)),
                 "age": draw(st.integers(0, 150))}
        for name in ("score", "tags", "ok"):
            if draw(st.booleans()):
                value[name] = draw(optional[name])
        ordered = {name: value[name] for name in declared if name in value}  # schema order, then extras
        ordered.update(draw(extra))
        return ordered

    return build()


STRATEGIES = {
    "person": (PERSON, _person()),
    "halves": (HALVES, st.integers(-11, 1999999).map(lambda k: k / 2)),
    "keys": (KEYS, st.dictionaries(st.text(alphabet='abz"\\/\n', min_size=1, max_size=4), st.integers(), max_size=4)),
    "enum": (ENUM, st.lists(st.sampled_from(ENUM["items"]["enum"]), max_size=4)),
}


@functools.lru_cache(maxsize=None)
def _constraint(name: str) -> tokamata.Constraint:
    vocab = real_tokenizers.llama3().vocab
    if name == "json":
        return tokamata.compile_json(vocab)
    return tokamata.compile_json_schema(STRATEGIES[name][0], vocab)


def _accepted(constraint, text: str) -> bool:
    tokenizer = real_tokenizers.llama3()
    m = constraint.matcher()
    for token in tokenizer.encode(text):
        if token not in set(m.allowed_tokens().tolist()):
            return False
        assert m.consume(token)
    return m.is_accepting()


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_valid_values_in_natural_spelling_are_accepted(name):
    schema, values = STRATEGIES[name]
    check = validator(schema)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(values)
    def run(value):
        text = natural_dumps(value)
        assert judge(text.encode(), check)[0] == "valid", f"strategy wrong: {text}"
        assert _accepted(_constraint(name), text), text

    run()


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | FLOATS | TEXT,
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                           max_leaves=10)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON_VALUES)
def test_any_json_value_in_natural_spelling_is_accepted(value):
    assert _accepted(_constraint("json"), natural_dumps(value))


class _Duplicate(Exception):
    pass


def _pairs(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


@pytest.mark.parametrize("name", sorted(STRATEGIES) + ["json"])
def test_walks_spell_naturally(name):
    walker = Walker(real_tokenizers.llama3().vocab)
    check = validator(STRATEGIES[name][0] if name != "json" else {})
    judged = 0
    for k in range(16):
        seed = zlib.crc32(f"spelling/{name}/{k}".encode())
        walk = walker.walk(_constraint(name), seed)
        assert walk.status in ("eos", "cut"), (seed, walk.status, walk.data, walk.note)
        if walk.status != "eos":
            continue
        verdict, detail = judge(walk.data, check)
        if verdict == "duplicate-key":  # (keys are not unique: nothing to re-serialize)
            continue
        assert verdict == "valid", (seed, verdict, detail, walk.data)
        text = walk.data.decode("utf-8")
        try:
            value = json.loads(text, parse_float=Decimal, object_pairs_hook=_pairs)
        except _Duplicate:
            continue
        assert natural_dumps(value) == text, (seed, text)
        judged += 1
    assert judged >= 4, f"only {judged} walks judged"
