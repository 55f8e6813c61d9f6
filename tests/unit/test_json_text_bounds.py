"""``text_within_bounds``: a schema text it accepts always passes ``check_document`` (the
compile skips the walk on its word), checked on random JSON documents under random small
limits, and on the hostile shapes that sit right at the bounds."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

import tokamata
from tokamata.errors import LimitExceeded
from tokamata.syntax.json_schema import schema_to_grammar
from tokamata.syntax.json_schema.bounds import check_document, text_within_bounds

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=40)


def _passes(document, limits) -> bool:
    try:
        check_document(document, limits)
    except LimitExceeded:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(JSON, st.integers(1, 12), st.integers(1, 80), st.booleans())
def test_accepted_text_passes_the_walk(document, depth, values, spaced):
    limits = tokamata.Limits(max_json_depth=depth, max_json_values=values)
    text = json.dumps(document, indent=1 if spaced else None)
    if text_within_bounds(text, limits):
        assert _passes(json.loads(text), limits)


@pytest.mark.parametrize("depth", [1, 2, 5, 40])
def test_depth_at_the_bound(depth):
    # depth levels of nesting: exactly at the bound passes both, one more fails the walk and
    # is not vouched for by the text test
    limits = tokamata.Limits(max_json_depth=depth)
    for nesting, ok in ((depth, True), (depth + 1, False)):
        text = '{"a":' * (nesting - 1) + "[]" + "}" * (nesting - 1)
        assert _passes(json.loads(text), limits) is ok
        if not ok:
            assert not text_within_bounds(text, limits)
    with pytest.raises(LimitExceeded) as caught:
        schema_to_grammar('{"not":' * 300 + "{}" + "}" * 300)
    assert caught.value.limit == "max_json_depth"


def test_values_at_the_bound():
    limits = tokamata.Limits(max_json_values=10)
    text = json.dumps(list(range(9)))  # 10 values: the array and its items
    assert _passes(json.loads(text), limits)
    text = json.dumps(list(range(10)))
    assert not _passes(json.loads(text), limits) and not text_within_bounds(text, limits)
