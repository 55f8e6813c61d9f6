#!/usr/bin/env python3
"""Grammar constraints side by side: tokamata, llguidance, xgrammar.

All engines run in one process on the Llama 3 tokenizer with three grammars: generic JSON,
arithmetic expressions and a C-like language (sources and instances: grammar_workload.py).
For each grammar and engine the script measures

* time to first mask (TTFM): grammar text -> compiled constraint -> matcher -> first bitmask
  filled, a fresh compile every run (tokamata's caches cleared with ``tokamata.clear_caches``),
  median over runs;
* mask time along real instances: after one fresh compile, a *cold* pass (every instance once,
  a fresh matcher each), then ``--repeats`` *warm* passes; at every step of every instance the
  mask is filled (timed), the instance's next token must be allowed (a disallowed token is a
  correctness failure), then it is consumed (timed separately); mean / p50 / p99 per fill;
* peak memory: RSS growth of compile + one pass, one subprocess per (engine, grammar);
* agreement: the share of steps where an engine's mask equals llguidance's, and the mean number
  of allowed tokens per step (the engines' languages differ in small, documented ways).

See benchmarks/README.md ("Grammar benchmark") for the method and its limits. The Makefile's
``bench-grammar`` target runs ``bench_grammar.py --write benchmarks/RESULTS_grammar.md``.
"""

from __future__ import annotations

# Entry point: command line, order of the run, measurement of a grammar. Reused from next door:
# engines.py (adapters, with compile_grammar), measure.py (bitmask buffer, walk, memory
# helpers), report.py (formatting, machine information); grammar_report.py renders the report.

import argparse
import gc
import hashlib
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import grammar_report
import plot
import report
from engines import ENGINES, Engine, Tokamata, Unavailable
from grammar_workload import GRAMMAR_NAMES, TRIVIAL, GrammarCase, NoData, load_case, tokenize
from measure import _proc_status_kb, _reset_peak, _trim, allocate_bitmask, allowed_ids, first_matcher_of, walk
from workload import TokenizerData, llama3_tokenizer_path

GRAMMAR_ENGINES = ("tokamata", "llguidance", "xgrammar")

SLOW_FILL_NS = 2_000_000  # a cold pass averaging more than 2 ms per mask ...
SLOW_REPEATS = 1  # ... gets this many warm passes, to keep the run within minutes


@dataclass
class GrammarResult:
    ttfm_s: list[float] = field(default_factory=list)
    compile_s: float = float("nan")  # the compile before the cold pass (compile + matcher)
    cold_fill_ns: list[int] = field(default_factory=list)
    cold_consume_ns: list[int] = field(default_factory=list)
    warm_fill_ns: list[int] = field(default_factory=list)
    warm_consume_ns: list[int] = field(default_factory=list)
    warm_passes: int = 0
    steps: int = 0  # fills checked in the cold pass
    disallowed: int = 0  # cold pass: steps whose instance token was not allowed
    failed_instances: list[int] = field(default_factory=list)  # cold pass, any error
    errors: list[str] = field(default_factory=list)
    # per instance, per step of the cold pass: (allowed count, mask digest); for agreement
    masks: list[list[tuple[int, bytes]]] = field(default_factory=list)
    memory: dict[str, Any] | str | None = None
    note: str | None = None


def time_to_first_mask(engine: Engine, case: GrammarCase, buf: np.ndarray, fresh: bool = True,
                       clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds from the grammar text to the first mask filled, by ``clock`` (the wall clock, or
    ``time.process_time`` for ``--cpu``: this process's CPU time, steadier on a shared machine)."""
    if fresh:
        engine.reset_caches()
    t0 = clock()
    c = engine.compile_grammar(case)
    m = first_matcher_of(engine, c)
    engine.filler(m, buf)()
    dt = clock() - t0
    del m, c
    return dt


def _digest(buf: np.ndarray, vocab_size: int) -> tuple[int, bytes]:
    return len(allowed_ids(buf, vocab_size)), hashlib.blake2b(buf.tobytes(), digest_size=16).digest()


def run_pass(engine: Engine, compiled: Any, case: GrammarCase, buf: np.ndarray, r: GrammarResult, cold: bool, vocab_size: int) -> None:
    """Every instance once, a fresh matcher each; fills and consumes appended to r."""
    for i, toks in enumerate(case.tokens):
        w = walk(engine, engine.matcher(compiled), toks, buf, keep_masks=cold)
        if cold:
            r.cold_fill_ns += w.fill_ns
            r.cold_consume_ns += w.consume_ns
            r.steps += len(w.fill_ns)
            r.masks.append([_digest(m, vocab_size) for m in w.masks])
            w.masks.clear()
            if w.errors:
                r.failed_instances.append(i)
                r.disallowed += sum("not allowed" in e for e in w.errors)
                r.errors += [f"instance {i}: {e}" for e in w.errors[:3]]
        else:
            r.warm_fill_ns += w.fill_ns
            r.warm_consume_ns += w.consume_ns


def run_grammar(engine: Engine, case: GrammarCase, vocab_size: int, ttfm_runs: int, repeats: int,
                clock: Callable[[], float] = time.perf_counter) -> GrammarResult:
    r = GrammarResult()
    buf = allocate_bitmask(vocab_size)
    try:
        gc.collect()
        gc.disable()
        for _ in range(ttfm_runs):
            r.ttfm_s.append(time_to_first_mask(engine, case, buf, clock=clock))
        engine.reset_caches()
        t0 = time.perf_counter()
        compiled = engine.compile_grammar(case)
        r.compile_s = time.perf_counter() - t0
        run_pass(engine, compiled, case, buf, r, True, vocab_size)
        if r.cold_fill_ns and statistics.fmean(r.cold_fill_ns) > SLOW_FILL_NS and repeats > SLOW_REPEATS:
            r.note = f"warm passes capped at {SLOW_REPEATS}: cold masks took {statistics.fmean(r.cold_fill_ns) / 1e6:.1f} ms on average"
            repeats = SLOW_REPEATS
        for _ in range(repeats):
            run_pass(engine, compiled, case, buf, r, False, vocab_size)
            r.warm_passes += 1
    except Exception as e:  # noqa: BLE001 - a failing engine becomes a failure row
        r.errors.append(f"exception: {type(e).__name__}: {e}")
    finally:
        gc.enable()
    return r


# ----------------------------------------------------------------------------------------------
# Memory: one subprocess per (engine, grammar)
# ----------------------------------------------------------------------------------------------


def memory_child(engine_name: str, grammar: str, json_count: int) -> dict[str, Any]:
    tok = TokenizerData.load(llama3_tokenizer_path())
    case = load_case(grammar, json_count)
    tokenize(tok.path, [case, TRIVIAL])
    engine = ENGINES[engine_name]()
    _trim()
    s0 = _proc_status_kb()
    engine.setup(tok)
    buf = allocate_bitmask(tok.vocab_size)
    c = engine.compile_grammar(TRIVIAL)
    walk(engine, first_matcher_of(engine, c), TRIVIAL.tokens[0], buf, keep_masks=False)
    del c
    _trim()
    s1 = _proc_status_kb()
    resettable = _reset_peak()

    def compile_and_pass() -> dict[str, float]:
        engine.reset_caches()
        _trim()
        if resettable:
            _reset_peak()
        before = _proc_status_kb()
        compiled = engine.compile_grammar(case)
        ok = True
        for toks in case.tokens:
            ok &= not walk(engine, engine.matcher(compiled), toks, buf, keep_masks=False).errors
        after = _proc_status_kb()
        del compiled
        return {
            "peak_mb": (after["VmHWM"] - before["VmRSS"]) / 1024 if resettable else float("nan"),
            "retained_mb": (after["VmRSS"] - before["VmRSS"]) / 1024,
            "ok": ok,
        }

    first = compile_and_pass()
    second = compile_and_pass()
    return {
        "setup_mb": (s1["VmRSS"] - s0["VmRSS"]) / 1024,
        "first_peak_mb": first["peak_mb"],
        "first_retained_mb": first["retained_mb"],
        "peak_mb": second["peak_mb"],
        "retained_mb": second["retained_mb"],
        "ok": first["ok"] and second["ok"],
    }


def measure_memory(engine_name: str, grammar: str, json_count: int, timeout: float) -> dict[str, Any] | str:
    cmd = [sys.executable, __file__, "--_memory-child", engine_name, grammar, "--json-instances", str(json_count),
           "--json-whitespace", Tokamata.json_whitespace]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f} s"
    if p.returncode != 0:
        return (p.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(p.stdout.strip().splitlines()[-1])


#: the report's plots (benchmarks/plot.py): metric -> caption
PLOTS = {"ttfm": "Time to first mask per grammar (fresh compiles)", "mask": "Warm mask fill per step",
         "mask_cold": "Mask fill per step, cold pass (first pass after the compile)"}


def raw_metrics(results: dict[str, dict[str, GrammarResult]]) -> dict:
    """Per engine and grammar: TTFM runs (ms), warm and cold-pass fills (us), for benchmarks/plot.py."""
    def of(get, scale):
        return {e: {g: [x * scale for x in get(r)] for g, r in rs.items()} for e, rs in results.items()}
    return {"ttfm": plot.metric("time to first mask", "ms", of(lambda r: r.ttfm_s, 1e3)),
            "mask": plot.metric("warm mask fill", "us", of(lambda r: r.warm_fill_ns, 1e-3)),
            "mask_cold": plot.metric("cold-pass mask fill", "us", of(lambda r: r.cold_fill_ns, 1e-3))}


# ----------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", metavar="PATH", help="write the Markdown report here (e.g. benchmarks/RESULTS_grammar.md)")
    ap.add_argument("--engines", default=",".join(GRAMMAR_ENGINES), help=f"comma-separated subset of {','.join(GRAMMAR_ENGINES)}")
    ap.add_argument("--grammars", default=",".join(GRAMMAR_NAMES), help=f"comma-separated subset of {','.join(GRAMMAR_NAMES)}")
    ap.add_argument("--json-instances", type=int, default=50, help="JSONSchemaBench instances for the json grammar (default 50)")
    ap.add_argument("--json-whitespace", default="compact", help='tokamata.compile_json whitespace: "compact" (default) or "flexible"')
    ap.add_argument("--repeats", type=int, default=3, help="warm passes over all instances (default 3)")
    ap.add_argument("--ttfm-runs", type=int, default=10, help="fresh compiles timed per grammar (default 10)")
    ap.add_argument("--cpu", action="store_true", help="time TTFM in this process's CPU time (time.process_time) "
                    "instead of the wall clock: steadier on a loaded machine (mask fills stay wall-clock)")
    ap.add_argument("--quick", action="store_true", help="few repetitions and instances, for a smoke test")
    ap.add_argument("--skip-memory", action="store_true", help="skip the per-subprocess memory measurement")
    ap.add_argument("--memory-timeout", type=float, default=300.0)
    ap.add_argument("--_memory-child", nargs=2, metavar=("ENGINE", "GRAMMAR"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    Tokamata.json_whitespace = args.json_whitespace
    if args._memory_child:
        e, g = args._memory_child
        print(json.dumps(memory_child(e, g, args.json_instances)))
        return 0

    if args.quick:
        args.repeats, args.ttfm_runs, args.json_instances = min(args.repeats, 1), min(args.ttfm_runs, 3), min(args.json_instances, 15)
    names = [n.strip() for n in args.engines.split(",") if n.strip()]
    for n in names:
        if n not in GRAMMAR_ENGINES:
            ap.error(f"unknown engine {n!r}; choose from {', '.join(GRAMMAR_ENGINES)}")
    grammars = [g.strip() for g in args.grammars.split(",") if g.strip()]
    for g in grammars:
        if g not in GRAMMAR_NAMES:
            ap.error(f"unknown grammar {g!r}; choose from {', '.join(GRAMMAR_NAMES)}")

    t_start = time.perf_counter()
    load = report.machine_info()["load"]
    tok = TokenizerData.load(llama3_tokenizer_path())
    cases: list[GrammarCase] = []
    skipped_cases: dict[str, str] = {}
    for g in grammars:
        try:
            cases.append(load_case(g, args.json_instances))
        except NoData as ex:
            skipped_cases[g] = str(ex)
            print(f"[{g}] skipped: {ex}", file=sys.stderr)
    tokenize(tok.path, cases + [TRIVIAL])

    engines: dict[str, Engine] = {}
    setup_s: dict[str, float] = {}
    skipped: dict[str, str] = {}
    versions: dict[str, dict[str, str]] = {}
    for n in names:
        e = ENGINES[n]()
        t0 = time.perf_counter()
        try:
            e.setup(tok)
            buf = allocate_bitmask(tok.vocab_size)  # warm-up on a trivial grammar
            w = walk(e, first_matcher_of(e, e.compile_grammar(TRIVIAL)), TRIVIAL.tokens[0], buf, keep_masks=False)
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

    results: dict[str, dict[str, GrammarResult]] = {n: {} for n in engines}
    for c in cases:
        for n, e in engines.items():
            t0 = time.perf_counter()
            r = run_grammar(e, c, tok.vocab_size, args.ttfm_runs, args.repeats,
                            time.process_time if args.cpu else time.perf_counter)
            results[n][c.name] = r
            status = "ok" if not r.errors else f"{len(r.errors)} error(s): {r.errors[0]}"
            if r.note:
                status += f" ({r.note})"
            print(f"[{n}] {c.name}: {time.perf_counter() - t0:.1f} s, {status}", file=sys.stderr)

    if not args.skip_memory:
        for c in cases:
            for n in engines:
                results[n][c.name].memory = measure_memory(n, c.name, args.json_instances, args.memory_timeout)
                print(f"[{n}] {c.name}: memory {results[n][c.name].memory}", file=sys.stderr)

    s = grammar_report.summarize(results, cases)
    grammar_report.print_console(s, cases, list(engines))
    for name, verdict, detail in grammar_report.targets(s, cases, list(engines)):
        print(f"{verdict:<6} {name}: {detail}")
    if args.write:
        text = grammar_report.render(results, s, cases, tok, list(engines), versions, setup_s, skipped, skipped_cases, args,
                                     load, time.perf_counter() - t_start)
        plot.save_raw(args.write, "grammar", "Grammars, Llama 3" + (" (--quick smoke run)" if args.quick else ""), raw_metrics(results), "bench_grammar.py")
        text = text.rstrip("\n") + "\n\n" + "\n".join(plot.markdown_links("grammar", PLOTS))
        with open(args.write, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {args.write}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
