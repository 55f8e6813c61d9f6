"""The one-engine benchmark: the cost of the Earley strategy against the regular one on the
same regexes, and batch fills on one and two threads. tokamata only (the peers' numbers are
in the regex, grammar and JSON Schema benchmarks), Llama 3 tokenizer, one process.

Measured, for each regex of benchmarks/workload.py (seed 000 App. C.4, plus quoted-words*):

* **regex**: ``compile_regex(pattern)``: the regular strategy (one lexer state per position).
* **grammar**: ``start: value`` / ``value: /pattern/``: the same language through the Earley
  strategy (lexer x parser configurations, boundary crossing walks).
* **schema**: ``{"type": "string", "pattern": "^(?:pattern)$"}``: the same pattern inside a
  JSON string (its instance is the JSON encoding of the regex instance).

For each, the instance's canonical tokens are consumed one by one (**consume**, per token,
masks not filled) and filled then consumed (**warm fill**, per step, after a first walk has
built every mask); medians over at least ``--repeats`` walks and 2,000 tokens per path, the
three paths of a case measured walk by walk in rotating order. Targets (issue 16): grammar and
schema within 1.5x of regex on both.

**Threads**: 64 matchers over distinct JSON Schemas (MaskBench sample, or the handwritten
schemas when ../shared/data is absent) decode their valid instances in lockstep; each step
fills all 64 rows with ``tokamata.fill_bitmasks(..., threads=k)``. Cold: fresh compiles after
``clear_caches`` (masks computed during the fills); warm: new matchers on the same constraints.
Target: two threads at least 1.6x faster than one (on the warm pass, the server's steady state;
the cold pass is reported too).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import tokamata  # noqa: E402
from workload import CASES, TokenizerData, encode_instance, llama3_tokenizer_path  # noqa: E402

TARGET_RATIO = 1.5
TARGET_THREADS = 1.6

HANDWRITTEN = [  # used when MaskBench is absent: (schema, instance)
    ({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
      "required": ["name", "age"]}, {"name": "Ada Lovelace", "age": 36}),
    ({"type": "array", "items": {"type": "number"}}, [1.5, 2, 3.25, -4, 1e3]),
    ({"type": "object", "properties": {"id": {"type": "string", "format": "uuid"},
                                       "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}}}},
     {"id": "123e4567-e89b-12d3-a456-426614174000", "tags": ["a", "c"]}),
]


def _lark_regex(pattern: str) -> str:
    return "/" + pattern.replace("/", "\\/") + "/"


def _paths(pattern: str, instance: str, vocab, path: str):
    """(name, compile function, tokens) of the three ways to run one regex."""
    text_tokens = encode_instance(path, instance)
    schema = {"type": "string", "pattern": f"^(?:{pattern})$"}
    schema_tokens = encode_instance(path, json.dumps(instance, ensure_ascii=False))
    return [
        ("regex", lambda: tokamata.compile_regex(pattern, vocab), text_tokens),
        ("grammar", lambda: tokamata.compile_grammar(f"start: value\nvalue: {_lark_regex(pattern)}", vocab),
         text_tokens),
        ("schema", lambda: tokamata.compile_json_schema(schema, vocab), schema_tokens),
    ]


#: token steps per path and measure at least (short instances get more walks)
MIN_STEPS = 2000


def _consume_walk_ns(constraint, tokens) -> float:
    """Mean ns per consumed token over one walk (masks not filled)."""
    m = constraint.matcher()
    consume = m.consume
    t0 = time.perf_counter_ns()
    for t in tokens:
        consume(t)
    dt = time.perf_counter_ns() - t0
    if not m.is_accepting():
        raise SystemExit(f"instance rejected by {constraint!r}")
    return dt / len(tokens)


def _fill_walk_ns(constraint, tokens, buf) -> float:
    """Mean ns per warm fill over one walk (the masks built by an earlier walk)."""
    clock = time.perf_counter_ns
    m = constraint.matcher()
    fill, consume = m.fill_bitmask, m.consume
    total = 0
    for t in tokens:
        t0 = clock()
        fill(buf, 0)
        total += clock() - t0
        consume(t)
    return total / len(tokens)


def bench_paths(vocab, path: str, repeats: int) -> list[dict]:
    """Per case, the three paths are compiled and warmed, then measured walk by walk in
    rotating order (regex, grammar, schema; grammar, schema, regex; ...), so that a slow
    moment of the machine falls on all three alike; medians over at least ``repeats`` walks
    and ``MIN_STEPS`` tokens per path."""
    buf = tokamata.allocate_bitmask(1, vocab.size)
    rows = []
    for case in CASES:
        row = {"case": case.name, "seed": case.seed}
        paths = []
        for name, compile_fn, tokens in _paths(case.pattern, case.instance, vocab, path):
            tokamata.clear_caches(vocab)
            constraint = compile_fn()
            _fill_walk_ns(constraint, tokens, buf)  # builds every mask of the walk
            _consume_walk_ns(constraint, tokens)
            paths.append((name, constraint, tokens))
        walks = max(repeats, max(-(-MIN_STEPS // len(tokens)) for _, _, tokens in paths))
        consume: dict[str, list[float]] = {name: [] for name, _, _ in paths}
        fill: dict[str, list[float]] = {name: [] for name, _, _ in paths}
        for r in range(walks):
            for k in range(len(paths)):
                name, constraint, tokens = paths[(r + k) % len(paths)]
                consume[name].append(_consume_walk_ns(constraint, tokens))
                fill[name].append(_fill_walk_ns(constraint, tokens, buf))
        for name, constraint, tokens in paths:
            row[name] = {"strategy": constraint.strategy, "tokens": len(tokens), "walks": walks,
                         "consume_ns": statistics.median(consume[name]),
                         "fill_ns": statistics.median(fill[name]),
                         "consume_walks_ns": consume[name], "fill_walks_ns": fill[name]}
        rows.append(row)
        print(f"  {case.name}: " + ", ".join(
            f"{n} consume {row[n]['consume_ns']:.0f} ns fill {row[n]['fill_ns']:.0f} ns"
            for n in ("regex", "grammar", "schema")) + f" ({walks} walks each)", flush=True)
    return rows


# --------------------------------------------------------------------------------- threads


def _schema_workload(path: str, count: int):
    """``count`` (schema, instance tokens) pairs that tokamata compiles and accepts."""
    try:
        from schema_workload import NoData, files_available, load_cases, tokenize
        files = files_available()
        if not files:
            raise NoData("no MaskBench files")
        cases, _ = load_cases(files, 0.05, 2, None)
        tokenize(path, cases)
        pairs = [(c.schema, t.tokens) for c in cases for t in c.tests[:1] if t.valid and t.tokens]
        source = "MaskBench sample"
    except Exception as e:  # noqa: BLE001 - the data is optional: fall back, and say so
        print(f"  MaskBench unavailable ({e}); using the handwritten schemas")
        pairs = [(schema, encode_instance(path, json.dumps(instance))) for schema, instance in HANDWRITTEN]
        source = "handwritten schemas"
    return pairs, source


def _lockstep_fill_ns(constraints, token_lists, buf, threads: int) -> tuple[float, int]:
    """Total ns spent in fill_bitmasks while every matcher decodes its instance in lockstep."""
    matchers = [c.matcher() for c in constraints]
    total, steps = 0, 0
    for step in range(max(len(t) for t in token_lists) + 1):
        active = [i for i, t in enumerate(token_lists) if step <= len(t)]
        if not active:
            break
        batch = [matchers[i] for i in active]
        t0 = time.perf_counter_ns()
        tokamata.fill_bitmasks(batch, buf, threads=threads)
        total += time.perf_counter_ns() - t0
        steps += 1
        for i in active:
            if step < len(token_lists[i]):
                matchers[i].consume(token_lists[i][step])
    return total, steps


#: how a lockstep step consumes (``_lockstep_step_ns``)
STEP_MODES = {
    "main": "each matcher's consume on the main thread, then fill_bitmasks (the issue's check, as a server does it today)",
    "batched": "tokamata.consume_tokens(batch, tokens, threads=k), then fill_bitmasks (same order: same threads)",
    "fused": "tokamata.consume_tokens(batch, tokens, bitmask, threads=k): consume and fill in one call",
}


def _lockstep_step_ns(constraints, token_lists, buf, threads: int, mode: str) -> tuple[int, int, int, int]:
    """One lockstep decoding where each step consumes the previous token of every active matcher
    and then fills its row (``mode``: STEP_MODES); returns the ns spent in fill_bitmasks (0 for
    "fused", where the fill is inside the step's one call), the ns of the whole steps (consumes
    and fill), the main thread's CPU ns over the pass (time.thread_time: no time while another
    process holds the core) and the process's context switches over the pass."""
    import resource

    matchers = [c.matcher() for c in constraints]
    clock, cpu = time.perf_counter_ns, time.thread_time_ns
    usage = resource.getrusage(resource.RUSAGE_SELF)
    switches = usage.ru_nvcsw + usage.ru_nivcsw
    fill = whole = 0
    cpu0 = cpu()
    for step in range(max(len(t) for t in token_lists) + 1):
        active = [i for i, t in enumerate(token_lists) if step <= len(t)]
        batch = [matchers[i] for i in active]
        tokens = [token_lists[i][step - 1] if step else -1 for i in active]
        t0 = clock()
        if mode == "fused":
            tokamata.consume_tokens(batch, tokens, buf, threads=threads)
            t1 = t2 = clock()
        else:
            if step and mode == "main":
                for m, t in zip(batch, tokens):
                    m.consume(t)
            elif step:
                tokamata.consume_tokens(batch, tokens, threads=threads)
            t1 = clock()
            tokamata.fill_bitmasks(batch, buf, threads=threads)
            t2 = clock()
        fill += t2 - t1
        whole += t2 - t0
    cpu_ns = cpu() - cpu0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return fill, whole, cpu_ns, usage.ru_nvcsw + usage.ru_nivcsw - switches


def bench_steps(constraints, token_lists, buf, repeats: int) -> dict:
    """Warm lockstep steps in every STEP_MODES mode on 1 and 2 threads (the constraints built
    every mask in a first pass), passes interleaved 1, 2, 2, 1, ... and modes rotating; medians
    over passes of fill ms, step ms, main-thread CPU ms and context switches."""
    for mode in STEP_MODES:
        for threads in (1, 2):
            _lockstep_step_ns(constraints, token_lists, buf, threads, mode)
    runs = {(mode, t): [] for mode in STEP_MODES for t in (1, 2)}
    for r in range(repeats):
        for mode in list(STEP_MODES)[r % 3:] + list(STEP_MODES)[:r % 3]:
            for threads in ((1, 2) if r % 2 == 0 else (2, 1)):
                runs[mode, threads].append(_lockstep_step_ns(constraints, token_lists, buf, threads, mode))
    out = {}
    for (mode, threads), passes in runs.items():
        out.setdefault(mode, {})[threads] = {
            "fill_ms": statistics.median(p[0] for p in passes) / 1e6,
            "step_ms": statistics.median(p[1] for p in passes) / 1e6,
            "cpu_ms": statistics.median(p[2] for p in passes) / 1e6,
            "switches": statistics.median(p[3] for p in passes),
        }
    return out


def print_steps(steps: dict, indent: str = "  ") -> list[str]:
    """The step table (markdown lines), printed too."""
    lines = ["| consume | fill 1 thread | 2 threads | speed-up | step 1 thread | 2 threads | speed-up "
             "| main CPU 1 / 2 | ctx switches 1 / 2 |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for mode, t in steps.items():
        fill = (f"{t[1]['fill_ms']:.2f} ms | {t[2]['fill_ms']:.2f} ms | {t[1]['fill_ms'] / t[2]['fill_ms']:.2f}x"
                if t[2]["fill_ms"] else "(in the step) | | ")
        lines.append(f"| {mode} | {fill} | {t[1]['step_ms']:.2f} ms | {t[2]['step_ms']:.2f} ms | "
                     f"{t[1]['step_ms'] / t[2]['step_ms']:.2f}x | {t[1]['cpu_ms']:.2f} / {t[2]['cpu_ms']:.2f} ms "
                     f"({t[1]['cpu_ms'] / t[2]['cpu_ms']:.2f}x) | {t[1]['switches']:.0f} / {t[2]['switches']:.0f} |")
    for line in lines:
        print(indent + line, flush=True)
    return lines


def thread_workload(vocab, path: str, count: int) -> tuple[list, list[list[int]], str]:
    """(schemas, instance tokens (at most 256 each), source) of ``count`` matchers that compile
    and accept their instance (bench_fill_threads.py measures the same batch)."""
    pairs, source = _schema_workload(path, 4 * count)
    chosen = []
    for schema, tokens in pairs:
        if len(chosen) == count:
            break
        try:
            c = tokamata.compile_json_schema(schema, vocab)
        except tokamata.TokamataError:
            continue
        m = c.matcher()
        if m.consume_many(tokens) == len(tokens) and m.is_accepting():
            chosen.append((schema, tokens[:256]))
    return [s for s, _ in chosen], [t for _, t in chosen], source


def bench_threads(vocab, path: str, count: int, repeats: int) -> dict:
    schemas, token_lists, source = thread_workload(vocab, path, count)
    buf = tokamata.allocate_bitmask(len(schemas), vocab.size)
    result = {"source": source, "matchers": len(schemas),
              "steps": max(len(t) for t in token_lists) + 1}
    for kind in ("cold", "warm"):
        times = {1: [], 2: []}
        for r in range(repeats):
            for threads in ((1, 2) if r % 2 == 0 else (2, 1)):
                tokamata.clear_caches(vocab)
                constraints = [tokamata.compile_json_schema(s, vocab) for s in schemas]
                if kind == "warm":
                    _lockstep_fill_ns(constraints, token_lists, buf, threads)
                total, _ = _lockstep_fill_ns(constraints, token_lists, buf, threads)
                times[threads].append(total)
        result[kind] = {t: statistics.median(v) / 1e6 for t, v in times.items()}
        result[f"{kind}_runs_ms"] = {t: [x / 1e6 for x in v] for t, v in times.items()}
        print(f"  {kind}: 1 thread {result[kind][1]:.2f} ms, 2 threads {result[kind][2]:.2f} ms "
              f"(speed-up {result[kind][1] / result[kind][2]:.2f}x)", flush=True)
    # the same batch, each step consuming then filling, three ways (STEP_MODES)
    print("  steps (warm; consume then fill):", flush=True)
    result["steps"] = bench_steps(constraints, token_lists, buf, repeats)
    print_steps(result["steps"], "    ")
    return result


# --------------------------------------------------------------------------------- report

#: the report's plots (benchmarks/plot.py): metric -> caption
PLOTS = {"consume": "Consume per token, per walk, the three front ends on the same regexes",
         "fill": "Warm fill per step, per walk, the three front ends on the same regexes",
         "threads": "fill_bitmasks over 64 matchers in lockstep, one and two threads (total per run)"}


def raw_metrics(rows: list[dict], threads: dict) -> dict:
    """Per front end and regex: per-walk means of consume and warm fill (ns); per thread count
    and pass: the lockstep totals of every run (ms); for benchmarks/plot.py."""
    import plot

    fronts = ("regex", "grammar", "schema")
    return {
        "consume": plot.metric("consume per token (walk mean)", "ns",
                               {f: {row["case"]: row[f]["consume_walks_ns"] for row in rows} for f in fronts}),
        "fill": plot.metric("warm fill per step (walk mean)", "ns",
                            {f: {row["case"]: row[f]["fill_walks_ns"] for row in rows} for f in fronts}),
        "threads": plot.metric("fill_bitmasks, all steps", "ms",
                               {f"{t} thread{'s' if t > 1 else ''}": {kind: threads[f"{kind}_runs_ms"][t]
                                                                      for kind in ("cold", "warm")} for t in (1, 2)}),
    }



def report(rows: list[dict], threads: dict, repeats: int) -> str:
    import subprocess

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=HERE).stdout.strip()
    except OSError:
        commit = "?"
    lines = ["# One engine: regular vs Earley strategy, and threaded batch fills", "",
             f"Llama 3 tokenizer, tokamata at {commit}, {platform.machine()} with {os.cpu_count()} cores, "
             f"Python {platform.python_version()}; medians over at least {repeats} walks and {MIN_STEPS:,} tokens per path, the paths of a case in rotating order. Written by "
             "`make bench-engine` (`benchmarks/bench_engine.py`; its docstring says what is measured).", "",
             "## Consume and warm fill per token, same regex, three front ends", "",
             "| case | tokens (text / JSON) | consume regex | grammar | schema | fill regex | grammar | schema |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    verdicts = []
    for row in rows:
        r, g, s = row["regex"], row["grammar"], row["schema"]
        lines.append(
            f"| {row['case']} | {r['tokens']} / {s['tokens']} | {r['consume_ns']:.0f} ns | "
            f"{g['consume_ns']:.0f} ns ({g['consume_ns'] / r['consume_ns']:.2f}x) | "
            f"{s['consume_ns']:.0f} ns ({s['consume_ns'] / r['consume_ns']:.2f}x) | {r['fill_ns']:.0f} ns | "
            f"{g['fill_ns']:.0f} ns ({g['fill_ns'] / r['fill_ns']:.2f}x) | "
            f"{s['fill_ns']:.0f} ns ({s['fill_ns'] / r['fill_ns']:.2f}x) |")
        if row["seed"]:
            for front in ("grammar", "schema"):
                for what in ("consume_ns", "fill_ns"):
                    verdicts.append(row[front][what] / row["regex"][what])
    worst = max(verdicts)
    lines += ["", f"Strategies: regex = {rows[0]['regex']['strategy']}, grammar = {rows[0]['grammar']['strategy']}, "
                  f"schema = {rows[0]['schema']['strategy']}.", "",
              f"**Target** (seed cases; `quoted-words*` is reported, not judged): grammar and schema within "
              f"{TARGET_RATIO}x of regex on consume and warm fill: worst ratio {worst:.2f}x: "
              f"**{'PASS' if worst <= TARGET_RATIO else 'FAIL'}**.", "",
              "## fill_bitmasks on one and two threads", "",
              f"{threads['matchers']} matchers over distinct JSON Schemas ({threads['source']}), decoding their valid "
              f"instances in lockstep ({threads['steps']} steps at most); total time in `fill_bitmasks`.", "",
              "| pass | 1 thread | 2 threads | speed-up |", "|---|---:|---:|---:|"]
    for kind in ("cold", "warm"):
        t = threads[kind]
        lines.append(f"| {kind} | {t[1]:.2f} ms | {t[2]:.2f} ms | {t[1] / t[2]:.2f}x |")
    speedup = threads["warm"][1] / threads["warm"][2]
    lines += ["", f"**Target**: two threads at least {TARGET_THREADS}x faster than one (warm pass): {speedup:.2f}x: "
                  f"**{'PASS' if speedup >= TARGET_THREADS else 'FAIL'}**.", ""]
    if "steps" in threads:
        lines += ["### The whole step: consume, then fill", "",
                  "The same batch (warm), each step consuming every active matcher's previous token and then "
                  "filling its row: " + "; ".join(f"**{k}**: {v}" for k, v in STEP_MODES.items()) + ". Medians "
                  "over passes; main CPU is the main thread's CPU time (time.thread_time), ctx switches the "
                  "process's per pass.", ""]
        lines += print_steps(threads["steps"], "") + [""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--matchers", type=int, default=64)
    parser.add_argument("--thread-repeats", type=int, default=11)
    parser.add_argument("--quick", action="store_true", help="2 regexes, few walks and matchers: a smoke test")
    parser.add_argument("--threads-only", action="store_true",
                        help="only the fill_bitmasks thread workload, printed (no report written)")
    parser.add_argument("--write", metavar="PATH")
    args = parser.parse_args(argv)
    if args.quick:
        global MIN_STEPS
        MIN_STEPS = 100
        args.repeats, args.matchers, args.thread_repeats = 2, 8, 2
        CASES[:] = CASES[:2]
    path = llama3_tokenizer_path()
    tok = TokenizerData.load(path)
    vocab = tokamata.Vocabulary.from_tokenizer_json(path, eos_token_ids=[tok.eos_id])
    if args.threads_only:
        print("fill_bitmasks threads:", flush=True)
        bench_threads(vocab, path, args.matchers, args.thread_repeats)
        return 0
    print("consume and fill, three front ends:", flush=True)
    rows = bench_paths(vocab, path, args.repeats)
    print("fill_bitmasks threads:", flush=True)
    threads = bench_threads(vocab, path, args.matchers, args.thread_repeats)
    text = report(rows, threads, args.repeats)
    print(text)
    if args.write:
        import plot

        plot.save_raw(args.write, "engine", "One engine, Llama 3" + (" (--quick smoke run)" if args.quick else ""), raw_metrics(rows, threads), "bench_engine.py")
        text = text.rstrip("\n") + "\n\n" + "\n".join(plot.markdown_links("engine", PLOTS)) + "\n"
        with open(args.write, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
