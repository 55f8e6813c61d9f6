#!/usr/bin/env python3
"""Long life: one constraint serving many random-walk sequences in one process (issue 20).

For each of two constraints (a JSON Schema and the C-like Lark grammar,
``tests/data/grammars/c_like.lark``) on the Llama 3 tokenizer, one compile, then ``--walks``
sequences, each a fresh matcher that at every step fills its bitmask, picks a uniformly
random allowed token (seeded, so a run is reproducible) and consumes it, ending at EOS, when
the position accepts and a coin with ``--stop`` says so, or after ``--max-tokens`` tokens.
Every ``--every`` walks it prints one line: walks done, tokens, live parser states, parser
states built so far (released ones included: what a constraint that never releases would
hold), sweeps, lexer states, cached masks, ``Constraint.memory_bytes()``, the process RSS
(``/proc/self/status``) and the seconds since the start. ``--no-sweep`` turns the release of
parser states off (the threshold out of reach), for the comparison. A ``LimitExceeded`` ends the run of that constraint and is
reported, with the walk it happened on.

Invariants

* Nothing is timed per call; the seconds column is wall clock on whatever machine runs it
  (say how loaded it was when quoting it).
* The walks are a function of ``--seed`` and of the masks alone, so two builds that give the
  same masks walk the same sequences.

Usage: ``python benchmarks/bench_long_life.py --walks 100000 --every 5000``
(not part of ``make test``; ``make bench-long-life`` runs the default).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import tokamata  # noqa: E402
from tests.real_tokenizers import llama3  # noqa: E402

#: a JSON Schema with nesting, arrays, enums, numbers and strings (unbounded arrays, so walks
#: can go deep into the parser)
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "cc"]}},
        "children": {"type": "array", "items": {"$ref": "#"}},
        "score": {"type": "number"},
        "kind": {"enum": ["x", "y", None, True]},
    },
    "required": ["name"],
    "additionalProperties": False,
}


def c_like_grammar() -> str:
    with open(os.path.join(ROOT, "tests", "data", "grammars", "c_like.lark"), encoding="utf-8") as f:
        return f.read()


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def random_walk(constraint, rng: random.Random, max_tokens: int, stop: float, eos: set[int]) -> int:
    """One sequence; returns the number of tokens consumed."""
    m = constraint.matcher()
    for n in range(max_tokens):
        allowed = m.allowed_tokens()
        if len(allowed) == 0:
            return n
        if m.is_accepting() and rng.random() < stop:
            return n
        token = int(allowed[rng.randrange(len(allowed))])
        if not m.consume(token):
            raise AssertionError(f"allowed token {token} refused")
        if token in eos:
            return n + 1
    return max_tokens


def run(name: str, constraint, args, eos: set[int]) -> None:
    rng = random.Random(args.seed)
    start = time.perf_counter()
    tokens = 0
    print(f"# {name}")
    print("walks,tokens,live_parser_states,built_parser_states,sweeps,lexer_states,cached_masks,"
          "memory_bytes,rss_mb,seconds")
    core = constraint._core  # the benchmark reads the core's counters
    if args.no_sweep:
        core.set_sweep_threshold(1 << 62)

    def line(walks: int) -> None:
        print(f"{walks},{tokens},{constraint.num_parser_states},{constraint.parser.core.num_built},"
              f"{core.num_sweeps},{constraint.num_lexer_states},{core.num_cached_masks},"
              f"{constraint.memory_bytes()},{rss_mb():.1f},{time.perf_counter() - start:.1f}", flush=True)

    line(0)
    for walk in range(1, args.walks + 1):
        try:
            tokens += random_walk(constraint, rng, args.max_tokens, args.stop, eos)
        except tokamata.LimitExceeded as e:
            print(f"LimitExceeded on walk {walk}: {e}", flush=True)
            line(walk)
            return
        if walk % args.every == 0:
            line(walk)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--walks", type=int, default=100_000)
    p.add_argument("--every", type=int, default=5_000)
    p.add_argument("--max-tokens", type=int, default=48)
    p.add_argument("--stop", type=float, default=0.2, help="chance of stopping where the position accepts")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-sweep", action="store_true", help="never release parser states (comparison)")
    p.add_argument("--max-parser-states", type=int, default=None, help="Limits.max_parser_states")
    p.add_argument("--only", choices=("json_schema", "c_like"), default=None)
    args = p.parse_args()
    vocab = llama3().vocab
    eos = set(int(t) for t in vocab.eos_token_ids)
    print(f"# tokamata {tokamata.__file__}, walks={args.walks}, max_tokens={args.max_tokens}, "
          f"stop={args.stop}, seed={args.seed}, no_sweep={args.no_sweep}, "
          f"max_parser_states={args.max_parser_states}, load average {os.getloadavg()[0]:.1f}")
    limits = tokamata.Limits() if args.max_parser_states is None else tokamata.Limits(
        max_parser_states=args.max_parser_states)
    if args.only in (None, "json_schema"):
        run("json_schema", tokamata.compile_json_schema(SCHEMA, vocab, limits=limits), args, eos)
    if args.only in (None, "c_like"):
        run("c_like", tokamata.compile_grammar(c_like_grammar(), vocab, limits=limits), args, eos)


if __name__ == "__main__":
    main()
