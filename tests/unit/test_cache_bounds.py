"""The process caches are bounded by bytes (tokamata.caches.CacheBounds): compiling many distinct
constraints one after another keeps the sized caches (interned expressions, the native arena)
within ``process_bytes`` plus what one compile adds, the per-vocabulary row cache within
``shared_rows_bytes``, and constraints compiled before an eviction keep giving the masks a fresh
compile gives. Sizes are the caches' own byte estimates (no RSS, no timing)."""

from __future__ import annotations

import json

import pytest

import tokamata
from tokamata.caches import enforce_cache_bounds
from tokamata.trie import shared_rows

from real_tokenizers import llama3

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"]


def distinct_schema(i: int) -> dict:
    """A JSON Schema no other ``i`` gives: its own keys, pattern, enum and bounds."""
    a, b = WORDS[i % len(WORDS)], WORDS[(i // len(WORDS)) % len(WORDS)]
    return {"type": "object",
            "properties": {f"{a}_{i}": {"type": "string", "pattern": f"^{b}[0-9]{{{1 + i % 5}}}-[a-f]+$"},
                           f"{b}_count_{i}": {"type": "integer", "minimum": i, "maximum": 10 * i + 99},
                           "kind": {"enum": [f"{a}-{i}", f"{b}-{i + 1}", i]}},
            "required": [f"{a}_{i}", "kind"]}


def instance(i: int) -> str:
    a, b = WORDS[i % len(WORDS)], WORDS[(i // len(WORDS)) % len(WORDS)]
    return json.dumps({f"{a}_{i}": f"{b}{'7' * (1 + i % 5)}-beef", "kind": f"{a}-{i}"}, separators=(",", ":"))


def walk(constraint, tokens, buf) -> list[bytes]:
    """The masks along ``tokens`` (every token must be allowed)."""
    m, masks = constraint.matcher(), []
    for t in tokens:
        m.fill_bitmask(buf, 0)
        masks.append(buf.tobytes())
        assert (int(buf[0, t >> 5]) >> (t & 31)) & 1, f"token {t} refused"
        assert m.consume(t)
    m.fill_bitmask(buf, 0)
    masks.append(buf.tobytes())
    assert m.is_accepting()
    return masks


@pytest.fixture
def bounds():
    old = tokamata.cache_bounds()
    yield
    tokamata.set_cache_bounds(old)
    tokamata.clear_caches()


def test_distinct_schemas_keep_the_process_caches_under_the_bound(bounds):
    tok = llama3()
    vocab = tok.vocab
    buf = tokamata.allocate_bitmask(1, vocab.size)
    bound = 2 ** 20  # (the workload adds about 6 MB: several times the bound)
    tokamata.set_cache_bounds(process_bytes=bound)
    tokamata.clear_caches()
    enforce_cache_bounds()
    first = tokamata.compile_json_schema(distinct_schema(0), vocab)
    first_tokens = tok.encode(instance(0))
    first_masks = walk(first, first_tokens, buf)
    added = []  # what each compile and walk added to the sized caches
    highest = 0
    for i in range(1, 121):
        before = sum(tokamata.cache_bytes().values())
        constraint = tokamata.compile_json_schema(distinct_schema(i), vocab)
        walk(constraint, tok.encode(instance(i)), buf)
        after = sum(tokamata.cache_bytes().values())
        added.append(max(0, after - min(before, bound)))
        highest = max(highest, after)
        del constraint
    # the caches would have grown past the bound several times over without eviction ...
    assert sum(added) > 3 * bound, f"the workload added only {sum(added):,} bytes: it does not test the bound"
    # ... and stayed within it plus what one compile adds
    assert highest <= bound + max(added), f"{highest:,} bytes held, bound {bound:,}, one compile adds {max(added):,}"
    enforce_cache_bounds()
    assert sum(tokamata.cache_bytes().values()) <= bound
    # a constraint compiled before the evictions gives the masks a fresh compile gives
    assert walk(first, first_tokens, buf) == first_masks
    assert walk(tokamata.compile_json_schema(distinct_schema(0), vocab), first_tokens, buf) == first_masks


def test_sized_caches_report_bytes_and_clear_caches_drops_them(bounds):
    tok = llama3()
    tokamata.compile_grammar('start: "(" WORD ")"\nWORD: /[a-z]+/', tok.vocab).matcher().allowed_tokens()
    sizes = tokamata.cache_bytes()
    assert set(sizes) == {"interned expressions", "native expression arena (kept while small)"}
    assert all(n > 0 for n in sizes.values()), sizes
    tokamata.set_cache_bounds(process_bytes=0)
    enforce_cache_bounds()  # everything sized is evicted, the arena whatever its footprint
    after = tokamata.cache_bytes()
    assert after["interned expressions"] < sizes["interned expressions"]
    assert after["native expression arena (kept while small)"] == 0


def distinct_regex(i: int) -> str:
    """A regex no other ``i`` gives (a regular constraint: its lexer rows are always computed
    and published; a grammar's first mask of a lexer state is one plain walk without rows)."""
    a, b = WORDS[i % len(WORDS)], WORDS[(i // len(WORDS)) % len(WORDS)]
    return f"{a}-{i}: {b}[0-9]{{{1 + i % 5}}}-[a-f]+"


def regex_instance(i: int) -> str:
    a, b = WORDS[i % len(WORDS)], WORDS[(i // len(WORDS)) % len(WORDS)]
    return f"{a}-{i}: {b}{'7' * (1 + i % 5)}-beef"


def test_shared_rows_hold_at_most_their_byte_bound(bounds):
    tok = llama3()
    vocab = tok.vocab
    row_bytes = ((vocab.size + 31) // 32) * 4
    tokamata.set_cache_bounds(shared_rows_bytes=8 * row_bytes)
    tokamata.clear_caches(vocab)  # the row cache is remade with the new bound
    buf = tokamata.allocate_bitmask(1, vocab.size)
    for i in range(12):
        walk(tokamata.compile_regex(distinct_regex(i), vocab), tok.encode(regex_instance(i)), buf)
    assert 0 < shared_rows(vocab).size <= 8


def test_a_full_row_cache_makes_room_from_dropped_constraints(bounds):
    """Rows of constraints that were dropped are evicted for new ones (a long-lived server keeps
    sharing the rows of the constraints it serves now, not of the first ones it saw); the masks
    stay those of a fresh process's compile."""
    tok = llama3()
    vocab = tok.vocab
    row_bytes = ((vocab.size + 31) // 32) * 4
    tokamata.set_cache_bounds(shared_rows_bytes=4 * row_bytes)
    tokamata.clear_caches(vocab)
    buf = tokamata.allocate_bitmask(1, vocab.size)
    for i in range(6):  # each compiled, walked, dropped
        walk(tokamata.compile_regex(distinct_regex(i), vocab), tok.encode(regex_instance(i)), buf)
    assert shared_rows(vocab).size == 4 and shared_rows(vocab).evictions > 0
    late = [walk(tokamata.compile_regex(distinct_regex(i), vocab), tok.encode(regex_instance(i)), buf)
            for i in (17, 29)]
    tokamata.set_cache_bounds(shared_rows_bytes=16 * 2 ** 20)
    tokamata.clear_caches()
    assert late == [walk(tokamata.compile_regex(distinct_regex(i), vocab), tok.encode(regex_instance(i)), buf)
                    for i in (17, 29)]


@pytest.mark.parametrize("fields", [{"process_bytes": -1}, {"shared_rows_bytes": 1.5}, {"process_bytes": True}])
def test_bad_bounds_are_refused(fields):
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.set_cache_bounds(**fields)


def test_masks_of_distinct_schemas_are_unchanged_by_eviction(bounds):
    """The same schemas walked with the default bound and with a bound that evicts at every
    compile give the same masks."""
    tok = llama3()
    buf = tokamata.allocate_bitmask(1, tok.vocab.size)
    cases = [(distinct_schema(i), tok.encode(instance(i))) for i in range(0, 40, 7)]
    tokamata.clear_caches()
    expected = [walk(tokamata.compile_json_schema(s, tok.vocab), t, buf) for s, t in cases]
    tokamata.set_cache_bounds(process_bytes=0)
    got = [walk(tokamata.compile_json_schema(s, tok.vocab), t, buf) for s, t in cases]
    assert got == expected
