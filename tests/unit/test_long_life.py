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
  same tokens.
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

import tokamata
from tokamata import Limits
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
    import threading

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

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert c._core.num_sweeps >= 1
    assert c.num_parser_states <= 600
    rng = random.Random(9)
    for tokens in rng.sample(walks, 10):
        m, replay = c.matcher(), fresh.matcher()
        for token in tokens:
            assert np.array_equal(mask_of(m), mask_of(replay))
            assert m.consume(token) and replay.consume(token)
