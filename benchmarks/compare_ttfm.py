"""Time to first mask of two tokamata builds on the same MaskBench schemas, interleaved.

Usage: ``python benchmarks/compare_ttfm.py PYTHON_A PYTHON_B [--fraction 0.09] [--grammar-only]
[--spelling any|natural] [--spelling-a S] [--spelling-b S] [--save PATH] [--cpu] [--repeats R]``, where each PYTHON is
the interpreter of an environment with one build installed (e.g. a git worktree's
``.venv/bin/python`` at another commit). ``--spelling-a``/``--spelling-b`` give each build its
own spelling (they override ``--spelling``): one build against itself, ``any`` as A and
``natural`` as B, measures what natural spelling costs.

Both builds run in their own worker process, started once. Each schema of the sample
(``schema_workload.load_cases``, as in bench_json_schema.py) goes to both workers, in a
shuffled order per schema, so that a slow moment of the machine falls on both alike; each
worker clears tokamata's caches before every compile. Prints the median, mean, p90 and p99
of each build and the median of the per-schema ratio B/A (the number to read: it cancels
what the schemas cost). ``--grammar-only`` times ``schema_to_grammar`` alone (the front end,
without the constraint and the first mask). ``--cpu`` times with each worker's CPU time
(``time.process_time``) instead of the wall clock: on a loaded machine a compile that waits
for a core counts that wait on the wall clock. ``--repeats R`` compiles each schema R times
per build (alternating, in a shuffled order each time) and keeps each build's fastest: one
timing per schema makes the per-schema ratios noisy on a shared machine. No timing is
asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))

WORKER = r'''
import gc, json, sys, time
sys.path.insert(0, sys.argv[1])
from schema_workload import load_cases, files_available
from workload import llama3_tokenizer_path
import numpy as np, tokamata
from tokamata import trie as _trie
vocab = tokamata.Vocabulary.from_tokenizer_json(llama3_tokenizer_path(), eos_token_ids=[128009])
cases, _ = load_cases(files_available(), float(sys.argv[2]), 15, None)
grammar_only = sys.argv[3] == "1"
clock = time.process_time if sys.argv[4] == "1" else time.perf_counter
import inspect, os
# --spelling: passed to builds whose compile_json_schema has the option (older builds have one spelling)
spelling = ({"spelling": os.environ["TOKAMATA_COMPARE_SPELLING"]}
            if os.environ.get("TOKAMATA_COMPARE_SPELLING")
            and "spelling" in inspect.signature(tokamata.compile_json_schema).parameters else {})
buf = np.zeros((1, (vocab.size + 31) // 32), dtype=np.int32)
print(json.dumps([c.file + "/" + c.id for c in cases]), flush=True)
for served, line in enumerate(sys.stdin):
    case = cases[int(line)]
    if served % 25 == 0:
        gc.collect()
    tokamata.clear_caches(vocab)
    _trie.shared_rows(vocab)
    t0 = clock()
    try:
        if grammar_only:
            from tokamata.syntax.json_schema import schema_to_grammar
            schema_to_grammar(case.schema_text, None, whitespace="compact", property_order="schema")
        else:
            m = tokamata.compile_json_schema(case.schema_text, vocab, whitespace="compact",
                                             property_order="schema", **spelling).matcher()
            m.fill_bitmask(buf, 0)
        seconds = clock() - t0
    except tokamata.TokamataError:
        seconds = None
    print(json.dumps(seconds), flush=True)
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("python_a")
    ap.add_argument("python_b")
    ap.add_argument("--fraction", type=float, default=0.09, help="fraction of each MaskBench file (default 0.09)")
    ap.add_argument("--grammar-only", action="store_true", help="time schema_to_grammar alone")
    ap.add_argument("--spelling", default=None,
                    help="JSON spelling for builds that have the option (natural, any; default: each build's default)")
    ap.add_argument("--spelling-a", default=None, help="JSON spelling of build A (overrides --spelling)")
    ap.add_argument("--spelling-b", default=None, help="JSON spelling of build B (overrides --spelling)")
    ap.add_argument("--save", metavar="PATH", help="save per-schema seconds (A, B) as JSON")
    ap.add_argument("--cpu", action="store_true", help="CPU time of each worker instead of the wall clock")
    ap.add_argument("--repeats", type=int, default=1,
                    help="compile each schema this many times per build (interleaved) and keep the fastest")
    args = ap.parse_args()
    command = ["-c", WORKER, HERE, str(args.fraction), "1" if args.grammar_only else "0", "1" if args.cpu else "0"]
    spellings = (args.spelling_a or args.spelling or "", args.spelling_b or args.spelling or "")
    workers = [subprocess.Popen([python] + command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                env=dict(os.environ, TOKAMATA_COMPARE_SPELLING=spelling))
               for python, spelling in zip((args.python_a, args.python_b), spellings)]
    names = [json.loads(w.stdout.readline()) for w in workers]
    if names[0] != names[1]:
        raise SystemExit("the two workers drew different samples")
    rng = random.Random(1)
    results: dict[str, list] = {}
    for index, name in enumerate(names[0]):
        seconds: list = [None, None]
        for repeat in range(args.repeats):
            order = [0, 1]
            rng.shuffle(order)
            for k in order:
                workers[k].stdin.write(f"{index}\n")
                workers[k].stdin.flush()
                taken = json.loads(workers[k].stdout.readline())
                if repeat == 0 or (taken is not None and seconds[k] is not None):
                    seconds[k] = taken if repeat == 0 else min(seconds[k], taken)
        results[name] = seconds
    for w in workers:
        w.stdin.close()
        w.wait()
    if args.save:
        with open(args.save, "w") as f:
            json.dump(results, f)
    both = [v for v in results.values() if v[0] and v[1]]
    for k, label in ((0, "A"), (1, "B")):
        times = sorted(v[k] for v in both)
        print(f"{label}: median {statistics.median(times) * 1e3:.3f} ms, mean {statistics.mean(times) * 1e3:.3f}, "
              f"p90 {times[int(0.9 * len(times))] * 1e3:.2f}, p99 {times[int(0.99 * len(times))] * 1e3:.1f}, "
              f"max {times[-1] * 1e3:.1f} "
              f"({len(times)} schemas both compiled)")
    ratios = sorted(v[1] / v[0] for v in both)
    print(f"per-schema ratio B/A: median {statistics.median(ratios):.3f} "
          f"(quartiles {ratios[len(ratios) // 4]:.3f}, {ratios[3 * len(ratios) // 4]:.3f})")


if __name__ == "__main__":
    main()
