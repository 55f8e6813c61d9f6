"""tokamata.ConstraintCache: one compile per key under concurrency (the others wait), the same
object for equal keys, byte-bounded LRU eviction over Constraint.memory_bytes(), errors cached
when the key alone decides them, and masks equal to a direct compile. Llama 3 vocabulary."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import tokamata
import tokamata.compile as front_doors
from real_tokenizers import llama3

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}, "required": ["n"]}


@pytest.fixture(scope="module")
def tok():
    return llama3()


def test_one_compile_per_key_under_concurrency(tok, monkeypatch):
    cache = tokamata.ConstraintCache(tok.vocab, max_bytes=1 << 30)
    calls = []
    gate = threading.Event()
    real = front_doors.build

    def slow_build(recipe, vocab):  # counts compiles and holds the first one until all asked
        calls.append(recipe)
        gate.wait(10)
        return real(recipe, vocab)

    monkeypatch.setattr("tokamata.constraint_cache.build", slow_build)
    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(cache.get, "json_schema", SCHEMA) for _ in range(16)]
        while cache.hits + cache.misses < 16:
            threading.Event().wait(0.01)
        gate.set()
        got = [f.result() for f in futures]
    assert len(calls) == 1 and cache.misses == 1 and cache.hits == 15
    assert all(c is got[0] for c in got)
    direct = tokamata.compile_json_schema(SCHEMA, tok.vocab).matcher()
    cached = got[0].matcher()
    for t in tok.encode('{"n":42}'):
        assert cached.allowed_tokens().tolist() == direct.allowed_tokens().tolist()
        assert cached.consume(t) and direct.consume(t)


def test_keys_fill_in_defaults_and_keep_schema_key_order(tok):
    cache = tokamata.ConstraintCache(tok.vocab)
    assert cache.get("regex", "[ab]+") is cache.get("regex", "[ab]+", limits=None, characters=None)
    assert cache.get("json") is not cache.get("json", whitespace="flexible")
    reordered = {"required": ["n"], "properties": SCHEMA["properties"], "type": "object"}
    assert cache.get("json_schema", SCHEMA) is not cache.get("json_schema", reordered)
    assert len(cache) == 5
    with pytest.raises(tokamata.InvalidArgument, match="unknown option"):
        cache.get("regex", "a", whitespace="compact")
    with pytest.raises(tokamata.InvalidArgument, match="kind"):
        cache.get("lark", "start: 'a'")


def test_bounded_by_estimated_bytes_least_recently_used_first(tok):
    one = tokamata.compile_regex("x[0-9]+", tok.vocab)
    one.matcher().allowed_tokens()
    size = one.memory_bytes()
    cache = tokamata.ConstraintCache(tok.vocab, max_bytes=3 * size)
    patterns = [f"{c}[0-9]+" for c in "abcdef"]
    for p in patterns:
        cache.get("regex", p).matcher().allowed_tokens()
    assert cache.num_bytes <= 3 * size and cache.evictions >= 2
    assert cache.get("regex", patterns[-1]) is not None and cache.hits == 1  # the newest stayed
    tiny = tokamata.ConstraintCache(tok.vocab, max_bytes=10)
    assert tiny.get("regex", "a") is not None and len(tiny) == 0  # larger than the budget: not kept


def test_errors_are_cached_when_the_key_decides_them(tok, monkeypatch):
    cache = tokamata.ConstraintCache(tok.vocab)
    for _ in range(3):
        with pytest.raises(tokamata.InvalidSyntax) as info:
            cache.get("regex", "a(")
        assert info.value.span == (1, 2)
    assert cache.misses == 1 and cache.hits == 2
    timed_out = tokamata.LimitExceeded("max_compile_seconds", 11.0, 10.0)

    def fail(recipe, vocab):
        raise timed_out

    monkeypatch.setattr("tokamata.constraint_cache.build", fail)
    for _ in range(2):
        with pytest.raises(tokamata.LimitExceeded):
            cache.get("regex", "b+")
    assert cache.misses == 3  # not cached: compiled (and failed) each time
