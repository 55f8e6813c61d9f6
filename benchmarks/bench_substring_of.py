"""SUBSTRING_OF compile time and size for growing texts (issue 19; a benchmark, not a test).

Run: ``.venv/bin/python benchmarks/bench_substring_of.py``. For texts of 1k, 10k and 100k
characters (random words, some non-ASCII), prints the time of ``compile_regex`` on
``(?P<SUBSTRING_OF>text)`` plus the first mask on Llama 3 when available (else a byte
vocabulary), the suffix automaton's states (built in Python after the timing), the Python
expression nodes the lowering built and the native arena's growth (nodes plus automaton
states, ``ExprArena.footprint``).
"""

from __future__ import annotations

import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import tokamata  # noqa: E402
from tokamata.automata import derivatives as d  # noqa: E402
from tokamata.automata import native, substrings  # noqa: E402


def _text(n: int, rng: random.Random) -> str:
    words = ["the", "model", "generates", "text", "über", "naïve", "café", "日本", "token", "a"]
    out = []
    while sum(map(len, out)) < n:
        out.append(rng.choice(words))
    return " ".join(out)[:n]


def main() -> None:
    try:
        from real_tokenizers import llama3
        vocab, name = llama3().vocab, "Llama 3"
    except Exception:  # pragma: no cover - the package is missing
        vocab = tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])
        name = "bytes"
    rng = random.Random(0)
    tokamata.compile_regex("warm|up", vocab).matcher().allowed_tokens()  # (the vocabulary's first use)
    print(f"vocabulary: {name}")
    print(f"{'chars':>8} {'bytes':>8} {'SAM states':>10} {'nodes':>8} {'arena':>8} {'compile s':>10} "
          f"{'first mask s':>12}")
    for n in (1_000, 10_000, 100_000):
        text = _text(n, rng)
        before = sum(len(t) for t in d._tables)
        arena_before = native.bridge().arena.footprint
        start = time.perf_counter()
        constraint = tokamata.compile_regex("(?P<SUBSTRING_OF>" + re.escape(text) + ")", vocab,
                                            tokamata.Limits(max_pattern_length=10**7, max_regex_nodes=10**7))
        compiled = time.perf_counter()
        constraint.matcher().allowed_tokens()
        done = time.perf_counter()
        nodes = sum(len(t) for t in d._tables) - before
        arena = native.bridge().arena.footprint - arena_before
        states = substrings.automaton(text).num_states
        print(f"{n:>8} {len(text.encode()):>8} {states:>10} {nodes:>8} {arena:>8} {compiled - start:>10.3f} "
              f"{done - compiled:>12.3f}")


if __name__ == "__main__":
    main()
