"""Threads: one constraint per front end (regex, Lark, GBNF, JSON, JSON Schema) over the real
Llama 3 vocabulary, shared by 8 threads that run a fixed set of seeded random walks while
another thread calls ``tokamata.clear_caches`` (with and without the vocabulary) over and
over; every mask must equal the one a single-threaded replay of the same walk saw
(issue 17, threads).

A walk is seeded by its index: at each step it fills its bitmask row (the mask compared, as
a digest), picks one allowed token with its RNG and consumes it; now and then it rolls back
one to three tokens, or goes on with a copy of its matcher. The walks are the same in both
runs as long as the masks are, so the first differing mask names the walk and the step.

Invariants: no crash, no deadlock (every thread ends within :data:`TIMEOUT` seconds), no
exception, no differing mask. The figures (threads, walks, masks compared, seconds) are
printed (``pytest -s``); no timing is asserted.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import real_tokenizers
import tokamata
from grammar_samples import grammar_text

THREADS = 8
WALKS_PER_CONSTRAINT = 16
STEPS = 24
TIMEOUT = 300.0

GBNF = r"""
root   ::= expr
expr   ::= term ( ws ( "+" | "-" ) ws term )*
term   ::= factor ( ws ( "*" | "/" ) ws factor )*
factor ::= number | "(" ws expr ws ")" | "-" factor
number ::= [0-9]+ ( "." [0-9]+ )?
ws     ::= " "*
"""
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "age": {"type": "integer", "minimum": 0},
                                           "tags": {"type": "array", "items": {"enum": ["a", "b", 3]}}},
          "required": ["name"]}


def _constraints(vocab: tokamata.Vocabulary) -> dict[str, tokamata.Constraint]:
    return {
        "regex": tokamata.compile_regex(r"(\w+ ){1,8}\d{2,4}-[a-f0-9]+(\.\w+)*", vocab),
        "lark": tokamata.compile_grammar(grammar_text("json"), vocab),
        "gbnf": tokamata.compile_gbnf(GBNF, vocab),
        "json": tokamata.compile_json(vocab, whitespace="flexible"),
        "json_schema": tokamata.compile_json_schema(SCHEMA, vocab, whitespace="flexible"),
    }


def walk(constraint: tokamata.Constraint, seed: int) -> list[bytes]:
    """The digests of the masks one seeded walk sees (one per step)."""
    rng = random.Random(seed)
    m = constraint.matcher()
    bitmask = tokamata.allocate_bitmask(1, constraint.vocab_size)
    digests = []
    for _ in range(STEPS):
        m.fill_bitmask(bitmask, 0)
        digests.append(hashlib.blake2b(bitmask.tobytes(), digest_size=16).digest())
        if m.is_terminated():
            break
        roll = rng.random()
        if roll < 0.1 and m.num_consumed:
            m.rollback(rng.randint(1, min(3, m.num_consumed)))
            continue
        if roll < 0.2:
            m = m.copy()
        allowed = m.allowed_tokens()
        if len(allowed) == 0:
            break
        token = int(allowed[rng.randrange(len(allowed))])
        assert m.consume(token), f"walk {seed}: allowed token {token} refused"
    return digests


def test_eight_threads_agree_with_one(capsys) -> None:
    vocab = real_tokenizers.llama3().vocab
    constraints = _constraints(vocab)
    walks = [(name, i) for name in constraints for i in range(WALKS_PER_CONSTRAINT)]
    started = time.perf_counter()
    expected = {(name, i): walk(constraints[name], i) for name, i in walks}
    single = time.perf_counter() - started

    tokamata.clear_caches(vocab)
    done = threading.Event()
    clears = 0

    def clear_forever() -> None:
        nonlocal clears
        while not done.is_set():
            tokamata.clear_caches(vocab) if clears % 2 else tokamata.clear_caches()
            clears += 1
            time.sleep(0.002)

    clearer = threading.Thread(target=clear_forever, daemon=True)
    clearer.start()
    started = time.perf_counter()
    pool = ThreadPoolExecutor(THREADS)
    try:
        futures = {key: pool.submit(walk, constraints[key[0]], key[1]) for key in random.Random(0).sample(walks, len(walks))}
        got = {key: future.result(timeout=max(1.0, TIMEOUT - (time.perf_counter() - started)))
               for key, future in futures.items()}
    finally:
        done.set()
        pool.shutdown(wait=False, cancel_futures=True)
    threaded = time.perf_counter() - started
    clearer.join(timeout=10)
    assert not clearer.is_alive(), "clear_caches did not return"

    compared = 0
    for key in walks:
        for step, (a, b) in enumerate(zip(expected[key], got[key])):
            assert a == b, f"walk {key}: the mask at step {step} differs from the single-threaded replay"
            compared += 1
        assert len(expected[key]) == len(got[key]), f"walk {key}: {len(got[key])} steps, replay {len(expected[key])}"
    with capsys.disabled():
        print(f"\nthread stress: {THREADS} threads, {len(walks)} walks over {len(constraints)} constraints, "
              f"{compared} masks compared, {clears} concurrent clear_caches; single-threaded {single:.1f} s, "
              f"threaded {threaded:.1f} s")
    assert compared > len(walks)


def test_walks_are_deterministic() -> None:
    """(the comparison means something only if a walk replays: same seed, same masks)"""
    vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_token_ids=[3])
    c = tokamata.compile_regex("(a|b)*", vocab)
    assert walk(c, 5) == walk(c, 5) and np.unique([len(walk(c, s)) for s in range(5)]).size >= 1


pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
