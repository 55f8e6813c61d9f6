"""What a token-budget mask costs next to a plain mask (issue 21 item 3; a benchmark, not a test).

Run: ``.venv/bin/python benchmarks/bench_budget.py [--walks N] [--budget N]``. On Llama 3, for
JSON Schemas and a regex, seeded random walks pick tokens from budget rows
(``fill_bitmask(..., max_tokens=budget - k)``) until EOS. At each step, on the one constraint
(compiled fresh for each schema, so nothing of it is cached at the start):

- ``plain``: the plain ``fill_bitmask`` (first time at that position: it computes the mask);
- ``budget``: then the budget fill at the same position (the mask is cached by then, so this
  is what the budget adds: the profile of the position, every allowed token advanced and
  bounded, and the union of its groups);
- ``again``: both once more at the same position (everything cached).

Prints per case the mean and p95 per step in microseconds and the ratio of the means. Timings
are wall clock on whatever the machine is doing: compare ratios taken in one run.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import tokamata  # noqa: E402
from real_tokenizers import llama3  # noqa: E402

CASES = [
    ("person", "json_schema", {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                                              "email": {"type": "string", "format": "email"}},
                               "required": ["name", "age"]}),
    ("order", "json_schema", {"type": "object", "properties": {
        "id": {"type": "integer"}, "items": {"type": "array", "items": {
            "type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
            "required": ["sku", "qty"]}, "minItems": 1}, "note": {"type": "string"}},
        "required": ["id", "items"], "additionalProperties": False}),
    ("free-json", "json", None),
    ("date-regex", "regex", r"\d{4}-\d{2}-\d{2}( [a-z]+){0,5}"),
]


def compile_case(kind: str, spec, vocab) -> tokamata.Constraint:
    if kind == "json_schema":
        return tokamata.compile_json_schema(json.dumps(spec), vocab)
    if kind == "json":
        return tokamata.compile_json(vocab)
    return tokamata.compile_regex(spec, vocab)


def p95(values: list[float]) -> float:
    return sorted(values)[int(0.95 * (len(values) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--walks", type=int, default=5)
    parser.add_argument("--budget", type=int, default=64)
    args = parser.parse_args()
    vocab = llama3().vocab
    width = (vocab.size + 31) // 32
    bitmask = np.zeros((1, width), dtype=np.int32)
    print(f"Llama 3, budget {args.budget} tokens, {args.walks} walks per case (microseconds per step)")
    print(f"{'case':<12} {'steps':>5} {'plain':>9} {'budget':>9} {'ratio':>7} {'p95 plain':>10} {'p95 budget':>11} "
          f"{'again plain':>12} {'again budget':>13}")
    for name, kind, spec in CASES:
        constraint = compile_case(kind, spec, vocab)
        rng = random.Random(0)
        plain, budget, plain_again, budget_again = [], [], [], []
        for _ in range(args.walks):
            m = constraint.matcher()
            for k in range(args.budget):
                t0 = time.perf_counter()
                m.fill_bitmask(bitmask, 0)
                t1 = time.perf_counter()
                m.fill_bitmask(bitmask, 0, max_tokens=args.budget - k)
                t2 = time.perf_counter()
                m.fill_bitmask(bitmask, 0)
                t3 = time.perf_counter()
                m.fill_bitmask(bitmask, 0, max_tokens=args.budget - k)
                t4 = time.perf_counter()
                plain.append(t1 - t0)
                budget.append(t2 - t1)
                plain_again.append(t3 - t2)
                budget_again.append(t4 - t3)
                ids = np.flatnonzero(np.unpackbits(bitmask[0].view(np.uint8), bitorder="little"))
                assert len(ids), "empty budget row"
                m.consume(int(rng.choice(ids)))
                if m.is_terminated():
                    break
            assert m.is_terminated(), "the walk did not end within its budget"
        us = 1e6
        print(f"{name:<12} {len(plain):>5} {statistics.mean(plain) * us:>9.1f} {statistics.mean(budget) * us:>9.1f} "
              f"{statistics.mean(budget) / statistics.mean(plain):>7.2f} {p95(plain) * us:>10.1f} "
              f"{p95(budget) * us:>11.1f} {statistics.mean(plain_again) * us:>12.1f} "
              f"{statistics.mean(budget_again) * us:>13.1f}")


if __name__ == "__main__":
    main()
