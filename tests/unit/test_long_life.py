"""Long life (issue 20): a constraint that serves many sequences releases the parser states no
live matcher can reach, so ``Limits.max_parser_states`` bounds the states alive at once, not
the states a constraint ever built.

The checks are structural (state counts, sweeps, masks), never timings:

- random walks over a JSON Schema and the C-like grammar with a ``max_parser_states`` far
  below what the walks build in total end without ``LimitExceeded``, with the live count
  within the limit after every walk (and the walks did build more than the limit);
- masks along the same walks equal those of a constraint with default limits (no sweep);
- matchers alive across sweeps (kept at every step, copies, rolled back) keep their masks:
  each one is compared with a fresh matcher of a constraint that never swept, replaying the
  same tokens;
- every cache keyed by a parser handle is dropped with it (handles are reused): with a sweep
  at the end of every call (``ConstraintCore.set_sweep_threshold(0)``), token-budget rows and
  ``budget_needed``, canonical masks (``canonical=True``) and speculative-draft rows along
  seeded walks equal those of a fresh constraint replaying the same tokens; two sequences
  built so that the second one's position reuses the first one's handles with another
  future get their own budget bound and canonical mask (a cache kept across the sweep would
  serve the first one's);
- four threads walk (masks, budgets, drafts) while sweeps run between their calls.
"""

from __future__ import annotations

import os
import random
import threading

import numpy as np
import pytest

import tokamata
from tokamata import Limits
from tokamata.bitmask import unpack_bitmask
from real_tokenizers import gpt2

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: recursive through "children", so walks keep reaching parser states not seen before
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 6},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
        "children": {"type": "array", "items": {"$ref": "#"}},
        "n": {"type": "integer"},
    },
    "required": ["name"],
    "additionalProperties": False,
}



def run_in_threads(work, n: int) -> None:
    """work(0) ... work(n - 1), each on its own thread, all at once; returns when all end."""
    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

def c_like() -> str:
    with open(os.path.join(ROOT, "tests", "data", "grammars", "c_like.lark"), encoding="utf-8") as f:
        return f.read()


def compile_case(name: str, limits: Limits | None = None) -> tokamata.Constraint:
    vocab = gpt2().vocab
    if name == "json_schema":
        return tokamata.compile_json_schema(SCHEMA, vocab, limits=limits)
    return tokamata.compile_grammar(c_like(), vocab, limits=limits)


#: (constraint, max_parser_states, walks): the limit is far below the states the walks build
CASES = [("json_schema", 40, 300), ("c_like", 600, 150)]
MAX_TOKENS = 24


def mask_of(m: tokamata.Matcher) -> np.ndarray:
    return m.allowed_tokens()


def walk(m: tokamata.Matcher, rng: random.Random, max_tokens: int = MAX_TOKENS, reference=None) -> list[int]:
    """A random walk from ``m``; with ``reference``, a matcher of another constraint that must
    give the same masks at every step."""
    tokens = []
    for _ in range(max_tokens):
        allowed = mask_of(m)
        if reference is not None:
            assert np.array_equal(allowed, mask_of(reference)), f"masks differ after {tokens}"
        if len(allowed) == 0 or (m.is_accepting() and rng.random() < 0.25):
            break
        token = int(allowed[rng.randrange(len(allowed))])
        assert m.consume(token)
        if reference is not None:
            assert reference.consume(token)
        tokens.append(token)
        if m.is_terminated():
            break
    return tokens


@pytest.mark.parametrize("name,limit,walks", CASES)
def test_walks_stay_within_a_low_parser_state_limit(name, limit, walks):
    c = compile_case(name, Limits(max_parser_states=limit))
    rng = random.Random(1)
    for _ in range(walks):
        walk(c.matcher(), rng)  # no LimitExceeded
        assert c.num_parser_states <= limit
    assert c.parser.core.num_built > limit  # without releasing, the limit would have been hit
    assert c._core.num_sweeps >= 1
    assert c.parser.core.num_handles <= limit + 1  # handles are reused: the table stays bounded


@pytest.mark.parametrize("name,limit,walks", CASES)
def test_masks_after_sweeps_equal_a_fresh_constraint(name, limit, walks):
    swept = compile_case(name, Limits(max_parser_states=limit))
    fresh = compile_case(name)
    rng = random.Random(2)
    for _ in range(walks // 3):
        walk(swept.matcher(), rng, reference=fresh.matcher())
    assert swept._core.num_sweeps >= 1
    assert fresh._core.num_sweeps == 0


@pytest.mark.parametrize("name", ["json_schema", "c_like"])
def test_matchers_alive_across_sweeps_keep_working(name):
    c = compile_case(name)
    fresh = compile_case(name)
    rng = random.Random(3)
    kept: list[tuple[tokamata.Matcher, list[int]]] = []
    for _ in range(12):
        m = c.matcher()
        tokens = walk(m, rng)
        kept.append((m, tokens))
        kept.append((m.copy(), tokens))
        if tokens:  # a copy rolled back to the middle of its walk
            back = m.copy()
            k = rng.randrange(len(tokens) + 1)
            back.rollback(len(tokens) - k)
            kept.append((back, tokens[:k]))
        # a walk whose matcher is dropped: its states go at the next sweep, as do the
        # states the crossing walks of every mask built and no position holds
        walk(c.matcher(), rng)
        c._core.sweep()
    assert c._core.num_sweeps == 12
    assert c.parser.core.num_built > c.num_parser_states  # states were released
    for m, tokens in kept:
        replay = fresh.matcher()
        assert replay.consume_many(tokens) == len(tokens)
        assert np.array_equal(mask_of(m), mask_of(replay))
        if m.is_terminated():
            continue
        # rolling back across the sweeps, then walking on
        back = min(len(tokens), 3)
        m.rollback(back)
        replay.rollback(back)
        assert np.array_equal(mask_of(m), mask_of(replay))
        walk(m, rng, reference=replay)


def test_sweep_keeps_what_live_matchers_hold():
    c = compile_case("c_like")
    m = c.matcher()
    assert m.consume_many(gpt2().encode("int f(int a) { return (a + 1) * (a - 2); }")) > 0
    before = c.num_parser_states
    c._core.sweep()
    after_holding = c.num_parser_states
    assert 0 < after_holding <= before
    del m
    assert c._core.num_matchers == 0
    c._core.sweep()
    assert c.num_parser_states == 1  # only the start state is left
    m = c.matcher()  # and it is served as before
    assert m.consume_many(gpt2().encode("int x = 1;")) > 0


def test_sweeps_while_other_threads_walk():
    """Threads walking one constraint with a low limit: sweeps run between their calls (never
    inside one), and every walk's masks equal a replay on a constraint that never swept."""

    c = compile_case("c_like", Limits(max_parser_states=600))
    fresh = compile_case("c_like")
    walks: list[list[int]] = []
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(25):
                m = c.matcher()
                tokens = walk(m, rng)
                kept = m.copy()
                walks.append(tokens)
                assert kept.num_consumed == len(tokens) or kept.is_terminated()
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    run_in_threads(work, 4)
    assert not errors, errors
    assert c._core.num_sweeps >= 1
    assert c.num_parser_states <= 600
    rng = random.Random(9)
    for tokens in rng.sample(walks, 10):
        m, replay = c.matcher(), fresh.matcher()
        for token in tokens:
            assert np.array_equal(mask_of(m), mask_of(replay))
            assert m.consume(token) and replay.consume(token)


# ---------------------------------------------------------------- caches keyed by handles

#: after "x," and after "y," the positions are alike (the same allowed terminal, the same lexer
#: start state) but the parser sets differ; with the first walk's states released, the second
#: walk's set reuses the first one's handle
TWIN = 'start: "x" "," "1" "a" | "y" "," "1" "2" "3" "4" "5" "6" "7" "8"'


def rows_under(m: tokamata.Matcher, budgets: list[int]) -> np.ndarray:
    bitmask = tokamata.allocate_bitmask(len(budgets), m.constraint.vocab_size)
    for i, n in enumerate(budgets):
        m.fill_bitmask(bitmask, i, max_tokens=n)
    return bitmask


def twin_walks(canonical: bool, question) -> list:
    """``question(matcher)`` after "x," then after "y," on one constraint, each walk's matcher
    dropped and swept before the next; with the positions, to check the handles were reused."""
    c = tokamata.compile_grammar(TWIN, gpt2().vocab, canonical=canonical)
    out = []
    for text in ("x,", "y,"):
        tokens = gpt2().encode(text)
        m = c.matcher()
        assert m.consume_many(tokens) == len(tokens)
        out.append((m._core.position(), question(m)))
        del m
        c._core.sweep()
    assert out[0][0] == out[1][0]  # the same handles, other sets
    return [answer for _, answer in out]


def test_budget_bounds_of_released_handles_are_dropped():
    after_x, after_y = twin_walks(False, lambda m: (m.budget_needed(), rows_under(m, [3, 4, 20])))
    fresh = tokamata.compile_grammar(TWIN, gpt2().vocab).matcher()
    tokens = gpt2().encode("y,")
    assert fresh.consume_many(tokens) == len(tokens)
    assert after_y[0] == fresh.budget_needed() > after_x[0]
    assert np.array_equal(after_y[1], rows_under(fresh, [3, 4, 20]))


def test_canonical_masks_of_released_handles_are_dropped():
    after_x, after_y = twin_walks(True, lambda m: m.allowed_tokens())
    tok = gpt2()
    # the tokenizer's own first token of each rest ("1" before "a"; digits merge before "2")
    assert after_x.tolist() == tok.encode("x,1a")[2:3]
    assert after_y.tolist() == tok.encode("y,12345678")[2:3] != after_x.tolist()


def swept_every_call(c: tokamata.Constraint) -> tokamata.Constraint:
    c._core.set_sweep_threshold(0)
    return c


BUDGETS = [1, 2, 3, 5, 8, 30]


@pytest.mark.parametrize("name", ["json_schema", "c_like"])
def test_budgets_across_sweeps_equal_a_fresh_constraint(name):
    c = swept_every_call(compile_case(name))
    rng = random.Random(5)
    checked = 0
    for _ in range(5):
        m, tokens = c.matcher(), []
        for _ in range(14):
            replay = compile_case(name).matcher()
            assert replay.consume_many(tokens) == len(tokens)
            assert m.budget_needed() == replay.budget_needed()
            assert np.array_equal(rows_under(m, BUDGETS), rows_under(replay, BUDGETS))
            checked += 1
            allowed = mask_of(m)
            if len(allowed) == 0 or m.is_terminated():
                break
            token = int(allowed[rng.randrange(len(allowed))])
            assert m.consume(token)
            tokens.append(token)
    assert checked > 30
    assert c._core.num_sweeps > checked
    assert c.parser.core.num_built > 10 * c.num_parser_states


def test_canonical_masks_across_sweeps_equal_a_fresh_constraint():
    def compile_it() -> tokamata.Constraint:
        return tokamata.compile_json_schema(SCHEMA, gpt2().vocab, canonical=True)

    c = swept_every_call(compile_it())
    rng = random.Random(4)
    consumed = 0
    for _ in range(2):
        m, tokens = c.matcher(), []
        for _ in range(10):
            replay = compile_it().matcher()
            assert replay.consume_many(tokens) == len(tokens)
            allowed = mask_of(m)
            assert np.array_equal(allowed, mask_of(replay)), f"canonical masks differ after {tokens}"
            if len(allowed) == 0 or m.is_terminated():
                break
            token = int(allowed[rng.randrange(len(allowed))])
            assert m.consume(token)
            consumed += 1
            tokens.append(token)
    # every consume swept (the native filter's own searches do not call the matcher; the
    # Python filter's consume and roll back on it, and sweep more)
    assert consumed > 5 and c._core.num_sweeps >= consumed


@pytest.mark.parametrize("name", ["json_schema", "c_like"])
def test_drafts_across_sweeps_equal_a_fresh_constraint(name):
    c = swept_every_call(compile_case(name))
    reference = compile_case(name)
    rng = random.Random(6)
    for _ in range(6):
        tokens = walk(reference.matcher(), rng)  # a draft the language accepts...
        draft = tokens + [int(rng.randrange(c.vocab_size))]  # ...then most likely a refused token
        for k in (0, len(tokens) // 2):
            m, replay = c.matcher(), reference.matcher()
            assert m.consume_many(tokens[:k]) == k and replay.consume_many(tokens[:k]) == k
            before = mask_of(m)
            rows = tokamata.allocate_bitmask(len(draft) + 1, c.vocab_size)
            expected = tokamata.allocate_bitmask(len(draft) + 1, c.vocab_size)
            written = m.fill_bitmask_draft(draft[k:], rows)
            assert written == replay.fill_bitmask_draft(draft[k:], expected)
            assert np.array_equal(rows[:written], expected[:written])
            assert m.validate_tokens(draft[k:]) == replay.validate_tokens(draft[k:])
            assert m.num_consumed == k and np.array_equal(mask_of(m), before)  # unchanged
    assert c._core.num_sweeps > 50


def test_threads_walk_fill_budgets_and_drafts_while_sweeps_run():
    """Four threads on one constraint that sweeps at the end of every call: masks and draft
    rows recorded along each walk equal a replay on a constraint that never swept afterwards,
    and every budget row is within the mask, non-empty from ``budget_needed()`` on."""

    c = swept_every_call(compile_case("c_like"))
    records: list[tuple[list[int], list[np.ndarray], np.ndarray]] = []
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(4):
                m, tokens, masks = c.matcher(), [], []
                for _ in range(MAX_TOKENS):
                    allowed = mask_of(m)
                    masks.append(allowed)
                    if len(allowed) == 0 or m.is_terminated():
                        break
                    need = m.budget_needed()
                    for n, row in zip(BUDGETS, rows_under(m, BUDGETS)):
                        within = unpack_bitmask(row[None], c.vocab_size)[0]
                        assert set(np.flatnonzero(within)) <= set(allowed.tolist())
                        assert within.any() or n < need
                    token = int(allowed[rng.randrange(len(allowed))])
                    assert m.consume(token)
                    tokens.append(token)
                draft_rows = tokamata.allocate_bitmask(len(tokens) + 1, c.vocab_size)
                written = c.matcher().fill_bitmask_draft(tokens, draft_rows)
                assert written == len(tokens) + 1 or c.matcher().validate_tokens(tokens) < len(tokens)
                records.append((tokens, masks, draft_rows[:written]))
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    run_in_threads(work, 4)
    assert not errors, errors
    assert c._core.num_sweeps > 100
    fresh = compile_case("c_like")
    for tokens, masks, draft_rows in records:
        replay = fresh.matcher()
        expected = tokamata.allocate_bitmask(len(tokens) + 1, c.vocab_size)
        assert replay.fill_bitmask_draft(tokens, expected) == len(draft_rows)
        assert np.array_equal(draft_rows, expected[:len(draft_rows)])
        for i, mask in enumerate(masks):
            assert np.array_equal(mask, mask_of(replay)), f"masks differ after {tokens[:i]}"
            if i < len(tokens):
                assert replay.consume(tokens[i])
