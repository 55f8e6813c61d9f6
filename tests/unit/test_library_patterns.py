"""Patterns the library writes (``strings.declare_library_pattern``: compile_type's ISO 8601
and UUID patterns) are built once per process, across ``clear_caches``: their contents must be
the language a fresh build of the same pattern gives, and the masks of a type with dates and
times must equal those of the same schema whose patterns are spelled differently (so never
declared), on a real tokenizer.
"""

from __future__ import annotations

import dataclasses
import datetime
import random
import uuid
from typing import Optional

import pytest

import real_tokenizers
import tokamata
from tokamata.automata import boolean
from tokamata.automata import derivatives as d
from tokamata.syntax.json_schema import formats as fm
from tokamata.syntax.json_schema import strings as st
from tokamata.syntax.types import describe, to_schema
from tokamata.syntax.types.scalars import ISO_PATTERNS


def _undeclared(kind: str) -> str:
    """The schema pattern of ``kind`` spelled so that it is no declared text (same language)."""
    return f"^(?:{ISO_PATTERNS[kind]})$"


def _declared(kind: str) -> str:
    return f"^{ISO_PATTERNS[kind]}$"


def _same(a: d.Expr, b: d.Expr) -> bool:
    limits = tokamata.Limits()
    return boolean.difference(a, b, limits) is d.NOTHING and boolean.difference(b, a, limits) is d.NOTHING


@pytest.mark.parametrize("kind", sorted(ISO_PATTERNS))
def test_declared_contents_are_the_fresh_build(kind):
    to_schema(describe(datetime.date, tokamata.Limits()))  # (importing the schema module declares them)
    chars = [fm.SPELLINGS[s] for s in ("any", "natural")]
    limits = tokamata.Limits()
    first = st.pattern_contents(_declared(kind), "pattern", None, limits, chars)
    tokamata.clear_caches()
    again = st.pattern_contents(_declared(kind), "pattern", None, limits, chars)
    assert all(a is b for a, b in zip(first, again))  # kept across clear_caches
    fresh = st.pattern_contents(_undeclared(kind), "pattern", None, limits, chars)
    for built, reference in zip(again, fresh):
        assert _same(built, reference)


def test_undeclared_patterns_are_built_per_call():
    limits = tokamata.Limits()
    a = st.pattern_content("^[a-c]{3}x$", "pattern", None, limits)
    tokamata.clear_caches()
    b = st.pattern_content("^[a-c]{3}x$", "pattern", None, limits)
    assert a is not b and _same(a, b)


@dataclasses.dataclass
class Event:
    title: str
    start: datetime.datetime
    day: datetime.date
    at: Optional[datetime.time]
    id: uuid.UUID


def _respelled(schema):
    """``schema`` with each declared ISO pattern spelled the undeclared way."""
    if isinstance(schema, dict):
        out = {k: _respelled(v) for k, v in schema.items()}
        for kind in ISO_PATTERNS:
            if out.get("pattern") == _declared(kind):
                out["pattern"] = _undeclared(kind)
        return out
    if isinstance(schema, list):
        return [_respelled(v) for v in schema]
    return schema


@pytest.fixture(scope="module")
def tokenizer():
    return real_tokenizers.llama3()


def test_type_masks_equal_the_undeclared_schema(tokenizer):
    vocab = tokenizer.vocab
    schema = to_schema(describe(Event, tokamata.Limits()))
    respelled = _respelled(schema)
    assert respelled != schema
    text = tokamata.dumps(Event("x", datetime.datetime(2024, 2, 29, 23, 59, 59, 123456, datetime.timezone.utc),
                                datetime.date(2000, 2, 29), datetime.time(7, 5), uuid.UUID(int=0xABCDEF)), Event)
    for warm in (False, True):  # cold, then with the declared contents kept from the first compile
        tokamata.clear_caches(vocab)
        ours = tokamata.compile_type(Event, vocab)
        reference = tokamata.compile_json_schema(respelled, vocab)
        rng = random.Random(7)
        walks = [tokenizer.encode(text)] + ([None] if warm else [])
        for walk in walks:
            a, b = ours.matcher(), reference.matcher()
            for step in range(len(walk) + 1 if walk is not None else 30):
                allowed = a.allowed_tokens().tolist()
                assert allowed == b.allowed_tokens().tolist()
                if walk is not None:
                    if step == len(walk):
                        assert a.is_accepting() and b.is_accepting()
                        break
                    token = walk[step]
                else:
                    choices = [t for t in allowed if t not in vocab.eos_token_ids]
                    if not choices:
                        break
                    token = rng.choice(choices)
                assert a.consume(token) and b.consume(token)
