#!/usr/bin/env python3
"""JSON Schema constraints side by side on MaskBench: tokamata, llguidance, xgrammar.

Every engine compiles the MaskBench schemas (../shared/data/jsonschemabench/maskbench, 11,305
schemas with valid and invalid instances) for the Llama 3 tokenizer, and walks every test
instance token by token. Per engine the script measures

* compile rate: schemas compiled without error (errors counted by kind; a compile plus first
  mask slower than ``--compile-timeout`` counts as a failure, and so does a crash);
* valid instances accepted (every token allowed, accepting at the end) and invalid instances
  refused (some token disallowed, or not accepting at the end), on the compiled schemas;
* passing schemas: compiled, every valid instance accepted and every invalid one refused (a
  schema without tests passes when it compiles), as llguidance's published MaskBench
  baseline counts them (9,489 of 11,306 for llguidance);
* time to first mask (TTFM): schema text -> compiled constraint -> matcher -> first mask,
  a fresh compile (tokamata's caches cleared with ``tokamata.clear_caches(vocab)`` before it);
* mask time: every fill along the valid instances, one pass after the compile (mean, p50, p99);
* soundness (tokamata, ``--walks``): random walks through the masks, judged by ``jsonschema``.

Each engine runs in its own worker process, fed one schema at a time (never two engines at
once), so that a compile that never returns or a crash in native code costs one schema, not
the run: the parent kills a worker past its timeout and starts a new one. The engines take
their turns in a seeded random order per schema: in a fixed order, the engine after xgrammar
always starts with caches that xgrammar's compile evicted (at 524d338, tokamata's TTFM p50
was 1.46 ms right after xgrammar, 1.24 ms in a run without xgrammar, when llguidance's moved
from 1.45 to 1.38 ms). The default run is a
stratified sample (``--sample`` of each file, at least ``--min-per-file``), about 30-40 minutes
on 2 cores; ``--full`` runs every schema. benchmarks/README.md ("JSON Schema benchmark")
describes the method; the Makefile's ``bench-json-schema`` target writes
benchmarks/RESULTS_json_schema.md.
"""

from __future__ import annotations

# Entry point: command line, the workers and their supervision. Reused from next door:
# engines.py (adapters, with compile_schema), measure.py (bitmask buffer), workload.py (the
# tokenizer), schema_workload.py (MaskBench, the sample), schema_report.py (summary, report).

import argparse
import gc
import json
import os
import random
import select
import subprocess
import sys
import tempfile
import time
import zlib
from typing import Any

import numpy as np

import plot

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "tests")

SCHEMA_ENGINES = ("tokamata", "llguidance", "xgrammar")
WARMUP_SCHEMA = '{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}}}'
WARMUP_TEXT = '{"a":1,"b":"x"}'


# ----------------------------------------------------------------------------------------------
# Worker: one engine, one schema at a time (runs as ``bench_json_schema.py --_worker ENGINE``)
# ----------------------------------------------------------------------------------------------


def check_instance(engine, m, tokens: list[int], buf: np.ndarray, timed: bool) -> tuple[bool, int | None, str, list[int]]:
    """Fill, check, consume each token; a final fill and the accepting check. Returns
    (accepted, step refused at, reason, fill times in ns when ``timed``)."""
    fill = engine.filler(m, buf)
    consume = engine.consumer(m)
    clock = time.perf_counter_ns
    ns: list[int] = []
    for k, t in enumerate(tokens):
        t0 = clock()
        fill()
        t1 = clock()
        if timed:
            ns.append(t1 - t0)
        if not (int(buf[0, t >> 5]) >> (t & 31)) & 1:
            return False, k, "token not allowed", ns
        if consume(t) is False:
            return False, k, "consume refused an allowed token", ns
    t0 = clock()
    fill()
    t1 = clock()
    if timed:
        ns.append(t1 - t0)
    if not engine.accepting(m):
        return False, len(tokens), "not accepting at the end", ns
    return True, None, "", ns


def _describe_error(engine_name: str, e: BaseException) -> dict[str, Any]:
    from schema_workload import error_key

    cls = type(e).__name__
    message = str(e)
    feature = getattr(e, "feature", None) or getattr(e, "limit", None)
    tokamata_error = type(e).__module__.startswith("tokamata")
    if engine_name == "tokamata" and not tokamata_error:
        cls = f"unexpected {cls}"  # not from tokamata's error tree: a bug
    return {"ok": False, "error_class": cls, "error_key": error_key(engine_name, cls, message, feature),
            "message": message[:500]}


def serve(engine_name: str, walks: int, walk_steps: int, whitespace: str, property_order: str, keep_caches: bool,
          spelling: str = "any") -> None:
    from engines import ENGINES, Tokamata, Unavailable
    from measure import allocate_bitmask, first_matcher_of
    from workload import TokenizerData, llama3_tokenizer_path

    out = os.fdopen(os.dup(1), "w", encoding="utf-8")  # the protocol channel ...
    os.dup2(2, 1)  # ... and whatever the libraries print goes to stderr
    sys.stdout = sys.stderr

    def send(msg: dict[str, Any]) -> None:
        out.write(json.dumps(msg) + "\n")
        out.flush()

    Tokamata.schema_whitespace = whitespace
    Tokamata.schema_property_order = property_order
    Tokamata.spelling = spelling
    tok = TokenizerData.load(llama3_tokenizer_path())
    engine = ENGINES[engine_name]()
    try:
        t0 = time.perf_counter()
        engine.setup(tok)
        buf = allocate_bitmask(tok.vocab_size)
        from tokenizers import Tokenizer

        warm_tokens = Tokenizer.from_file(tok.path).encode(WARMUP_TEXT, add_special_tokens=False).ids
        ok = check_instance(engine, engine.matcher(engine.compile_schema(WARMUP_SCHEMA)), warm_tokens, buf, False)[0]
        if not ok:
            print(f"[{engine_name}] warning: the warm-up instance was refused", file=sys.stderr)
        setup_s = time.perf_counter() - t0
    except Unavailable as e:
        send({"ready": False, "error": str(e)})
        return
    except Exception as e:  # noqa: BLE001
        send({"ready": False, "error": f"setup failed: {type(e).__name__}: {e}"})
        return
    walker = None
    if walks and engine_name == "tokamata":
        sys.path.insert(0, TESTS)
        import schema_walks

        walker = schema_walks.Walker(engine.vocab)
    gc.collect()
    gc.freeze()
    gc.disable()
    send({"ready": True, "setup_s": setup_s, "versions": engine.versions()})
    served = 0
    for line in sys.stdin:
        req = json.loads(line)
        served += 1
        if served % 25 == 0:
            gc.collect()
        if not keep_caches:
            engine.reset_caches()
        t0 = time.perf_counter()
        try:
            compiled = engine.compile_schema(req["schema"])
            t1 = time.perf_counter()
            m = first_matcher_of(engine, compiled)
            engine.filler(m, buf)()
            t2 = time.perf_counter()
        except Exception as e:  # noqa: BLE001 - the engine refuses the schema
            send({"phase": "compiled", **_describe_error(engine_name, e)})
            continue
        del m
        send({"phase": "compiled", "ok": True, "ttfm_s": t2 - t0, "compile_s": t1 - t0})
        results = []
        for valid, tokens in req["tests"]:
            try:
                accepted, step, reason, ns = check_instance(engine, engine.matcher(compiled), tokens, buf, valid)
            except Exception as e:  # noqa: BLE001 - counts as refusing the instance
                accepted, step, reason, ns = False, None, f"exception: {type(e).__name__}: {e}"[:300], []
            results.append({"accepted": accepted, "step": step, "reason": reason, "fill_ns": ns})
        send({"phase": "tests", "tests": results})
        send({"phase": "walks", **(run_walks(walker, compiled, req, walks, walk_steps) if walker else {})})
        del compiled


def run_walks(walker, compiled, req: dict, walks: int, walk_steps: int) -> dict[str, Any]:
    import schema_walks

    tally: dict[str, int] = {}
    failures = []
    try:
        check = schema_walks.validator(req["schema"])  # (the text: numbers read exactly, as instances are)
    except Exception as e:  # noqa: BLE001 - jsonschema cannot build a validator
        return {"tally": {"no-validator": walks}, "failures": [], "note": f"{type(e).__name__}: {e}"[:200]}
    for k in range(walks):
        seed = zlib.crc32(f"{req['id']}/{k}".encode())
        try:
            w = walker.walk(compiled, seed, max_steps=walk_steps)
        except Exception as e:  # noqa: BLE001 - e.g. consume() refusing an allowed token
            tally["walk-error"] = tally.get("walk-error", 0) + 1
            failures.append({"seed": seed, "verdict": "walk-error", "detail": f"{type(e).__name__}: {e}"[:300]})
            continue
        tally[w.status] = tally.get(w.status, 0) + 1
        if w.status in ("dead-end", "limit"):
            failures.append({"seed": seed, "verdict": w.status, "detail": w.note[:300], "tokens": w.tokens[:300],
                             "text": w.data[:300].decode("utf-8", "replace")})
        if w.status != "eos":
            continue
        verdict, detail = schema_walks.judge(w.data, check)
        tally[verdict] = tally.get(verdict, 0) + 1
        if verdict not in ("valid", "duplicate-key"):
            failures.append({"seed": seed, "verdict": verdict, "detail": detail[:300], "tokens": w.tokens[:300],
                             "text": w.data[:400].decode("utf-8", "replace")})
    return {"tally": tally, "failures": failures}


# ----------------------------------------------------------------------------------------------
# Supervisor: one worker process per engine, timeouts, restarts
# ----------------------------------------------------------------------------------------------


class WorkerDied(Exception):
    pass


class Worker:
    def __init__(self, name: str, args: argparse.Namespace, log_dir: str):
        self.name, self.args, self.log_dir = name, args, log_dir
        self.proc: subprocess.Popen | None = None
        self.pending = b""
        self.restarts = 0
        self.ready: dict[str, Any] = {}

    def start(self) -> None:
        cmd = [sys.executable, os.path.abspath(__file__), "--_worker", self.name, "--walks", str(self.args.walks),
               "--walk-steps", str(self.args.walk_steps), "--tokamata-whitespace", self.args.tokamata_whitespace,
               "--tokamata-property-order", self.args.tokamata_property_order,
               "--tokamata-spelling", self.args.tokamata_spelling] + (["--keep-caches"] if self.args.keep_caches else [])
        self.log = open(os.path.join(self.log_dir, f"{self.name}.log"), "ab")
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env)
        self.pending = b""

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        try:
            self.ready = self._read(timeout)
        except (TimeoutError, WorkerDied) as e:
            self.ready = {"ready": False, "error": f"worker did not start: {e}"}
        return self.ready

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.kill()
        self.restarts += 1
        self.start()
        ready = self.wait_ready(self.args.start_timeout)
        if not ready.get("ready"):
            raise WorkerDied(f"{self.name} worker could not be restarted: {ready.get('error')}")

    def _tail(self) -> str:
        try:
            with open(os.path.join(self.log_dir, f"{self.name}.log"), "rb") as f:
                f.seek(max(0, os.path.getsize(f.name) - 400))
                lines = f.read().decode("utf-8", "replace").strip().splitlines()
            return lines[-1] if lines else ""
        except OSError:
            return ""

    def _read(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer within {timeout:g} s")
            r, _, _ = select.select([fd], [], [], left)
            if r:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    code = self.proc.wait()
                    raise WorkerDied(f"worker exited with code {code} ({self._tail()[:200]})")
                self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def ask(self, case) -> dict[str, Any]:
        """The engine's result for one schema; kills and restarts the worker on a timeout or a
        crash (the schema then counts as failed for this engine)."""
        req = {"id": case.id, "schema": case.schema_text, "tests": [(t.valid, t.tokens) for t in case.tests]}
        a = self.args
        res: dict[str, Any] = {"status": "ok"}
        phase = "compile"
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
            msg = self._read(a.compile_timeout)
            if not msg.get("ok"):
                res.update(msg, status="error")
                return res
            res.update(ttfm_s=msg["ttfm_s"], compile_s=msg["compile_s"])
            phase = "tests"
            res["tests"] = self._read(a.run_timeout)["tests"]
            phase = "walks"
            walks = self._read(a.run_timeout)
            if walks.get("tally"):
                res["walks"] = walks
            return res
        except (TimeoutError, WorkerDied, BrokenPipeError) as e:
            kind = "timeout" if isinstance(e, TimeoutError) else "crash"
            if phase == "walks":
                res["walks"] = {"tally": {f"walks {kind}": 1}, "failures": [], "note": str(e)}
            else:
                res.update(status=f"{kind} ({phase})", error_class=kind, error_key=f"{kind} during {phase}",
                           message=str(e))
            self.restart()
            return res


#: the report's plots (benchmarks/plot.py): metric -> caption
PLOTS = {"ttfm": "Time to first mask over the schemas every engine compiled (ECDF)",
         "mask": "Mask fill per step over the valid instances every engine accepted (ECDF)"}


def raw_metrics(cases, results: dict[str, dict[str, dict[str, Any]]]) -> dict:
    """TTFM (ms) over the schemas every engine compiled and fills (us) over the valid instances
    every engine accepted, per engine (one series each), for benchmarks/plot.py."""
    engines = list(results)
    ttfm: dict[str, list[float]] = {e: [] for e in engines}
    fills: dict[str, list[float]] = {e: [] for e in engines}
    for c in cases:
        rs = [results[e].get(c.id) for e in engines]
        if not all(r and r["status"] == "ok" for r in rs):
            continue
        for e, r in zip(engines, rs):
            ttfm[e].append(r["ttfm_s"] * 1e3)
        for k, t in enumerate(c.tests):
            tests = [r.get("tests", []) for r in rs]
            if t.valid and all(k < len(x) and x[k]["accepted"] for x in tests):
                for e, x in zip(engines, tests):
                    fills[e] += [ns / 1e3 for ns in x[k]["fill_ns"]]
    return {"ttfm": plot.metric("time to first mask", "ms", {e: {"MaskBench": v} for e, v in ttfm.items()}),
            "mask": plot.metric("mask fill", "us", {e: {"MaskBench": v} for e, v in fills.items()})}


# ----------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", metavar="PATH", help="write the Markdown report here (e.g. benchmarks/RESULTS_json_schema.md)")
    ap.add_argument("--save-raw", metavar="PATH", help="also save every per-schema result as JSON (for analysis)")
    ap.add_argument("--engines", default=",".join(SCHEMA_ENGINES), help=f"comma-separated subset of {','.join(SCHEMA_ENGINES)}")
    ap.add_argument("--files", default="", help="comma-separated MaskBench files (splits), default all")
    ap.add_argument("--sample", type=float, default=0.09, help="fraction of each file's schemas (default 0.09)")
    ap.add_argument("--min-per-file", type=int, default=15, help="at least this many schemas per file (default 15)")
    ap.add_argument("--full", action="store_true", help="every schema (11,305; several hours, most of it xgrammar)")
    ap.add_argument("--limit", type=int, default=None, help="at most N schemas per file (after sampling)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    ap.add_argument("--walks", type=int, default=2, help="tokamata random walks per compiled schema (default 2)")
    ap.add_argument("--walk-steps", type=int, default=400, help="step cap of a random walk (default 400)")
    ap.add_argument("--tokamata-whitespace", default="compact", help='tokamata whitespace mode: "compact" (default) or "flexible"')
    ap.add_argument("--tokamata-property-order", default="schema", help='tokamata property_order: "schema" (default) or "any"')
    ap.add_argument("--tokamata-spelling", default="any",
                    help='tokamata spelling: "any" (default: every RFC 8259 spelling, as the instances are written) '
                         'or "natural" (valid instances spelled otherwise, 2.0 or 1e-05, are then refused)')
    ap.add_argument("--keep-caches", action="store_true",
                    help="do not clear tokamata's caches before each compile (a server's steady state; TTFM is then not a fresh compile)")
    ap.add_argument("--compile-timeout", type=float, default=10.0, help="seconds for compile + first mask (default 10)")
    ap.add_argument("--run-timeout", type=float, default=120.0, help="seconds for a schema's instances, and again for its walks (default 120)")
    ap.add_argument("--start-timeout", type=float, default=300.0, help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="3 schemas per file, 1 walk: a smoke test of a few minutes")
    ap.add_argument("--_worker", metavar="ENGINE", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args._worker:
        serve(args._worker, args.walks, args.walk_steps, args.tokamata_whitespace, args.tokamata_property_order,
              args.keep_caches, args.tokamata_spelling)
        return 0

    import schema_report
    from schema_workload import NoData, files_available, load_cases, published_llguidance, tokenize
    from workload import TokenizerData, llama3_tokenizer_path

    if args.quick:
        args.limit = min(args.limit or 3, 3)
        args.walks = min(args.walks, 1)
    if args.full:
        args.sample = 1.0
    names = [n.strip() for n in args.engines.split(",") if n.strip()]
    for n in names:
        if n not in SCHEMA_ENGINES:
            ap.error(f"unknown engine {n!r}; choose from {', '.join(SCHEMA_ENGINES)}")
    try:
        available = files_available()
    except NoData as e:
        print(f"skipped: {e}", file=sys.stderr)
        return 1
    files = [f.strip() for f in args.files.split(",") if f.strip()] or available
    for f in files:
        if f not in available:
            ap.error(f"unknown file {f!r}; choose from {', '.join(available)}")

    t_start = time.perf_counter()
    load = schema_report.machine_info()["load"]
    revision = schema_report.git_revision()
    tok = TokenizerData.load(llama3_tokenizer_path())
    cases, infos = load_cases(files, args.sample, args.min_per_file, args.limit, args.seed)
    tokenize(tok.path, cases)
    print(f"{len(cases)} schemas, {sum(len(c.tests) for c in cases)} instances from {len(files)} files", file=sys.stderr)

    log_dir = tempfile.mkdtemp(prefix="bench_json_schema_")
    workers: dict[str, Worker] = {}
    skipped: dict[str, str] = {}
    for n in names:
        workers[n] = Worker(n, args, log_dir)
        workers[n].start()
    for n in names:
        ready = workers[n].wait_ready(args.start_timeout)
        if not ready.get("ready"):
            skipped[n] = ready.get("error", "?")
            print(f"[{n}] skipped: {skipped[n]}", file=sys.stderr)
            workers.pop(n).kill()
        else:
            print(f"[{n}] ready in {ready['setup_s']:.1f} s ({ready['versions']})", file=sys.stderr)
    print(f"worker logs in {log_dir}", file=sys.stderr)

    results: dict[str, dict[str, dict[str, Any]]] = {n: {} for n in workers}
    spent = {n: 0.0 for n in workers}
    for i, c in enumerate(cases):
        turns = list(workers.items())
        random.Random(f"{args.seed}/turns/{c.id}").shuffle(turns)  # (see the module docstring)
        for n, w in turns:
            t0 = time.perf_counter()
            try:
                results[n][c.id] = w.ask(c)
            except WorkerDied as e:
                skipped[n] = str(e)
                print(f"[{n}] giving up: {e}", file=sys.stderr)
                workers.pop(n).kill()
                continue
            spent[n] += time.perf_counter() - t0
            r = results[n][c.id]
            if r["status"] != "ok" and not r["status"].startswith("error"):
                print(f"[{n}] {c.id}: {r['status']}: {r.get('message', '')[:120]}", file=sys.stderr)
        if (i + 1) % 50 == 0 or i + 1 == len(cases):
            elapsed = time.perf_counter() - t_start
            eta = elapsed / (i + 1) * (len(cases) - i - 1)
            per = ", ".join(f"{n} {spent[n]:.0f} s" for n in spent)
            print(f"{i + 1}/{len(cases)} schemas, {elapsed:.0f} s elapsed, ~{eta:.0f} s left ({per})", file=sys.stderr)
    for w in workers.values():
        w.kill()

    run = schema_report.Run(cases, infos, results, published_llguidance(), list(results), skipped,
                            {n: w.ready for n, w in workers.items()}, {n: w.restarts for n, w in workers.items()},
                            args, load, time.perf_counter() - t_start, revision)
    s = schema_report.summarize(run)
    schema_report.print_console(run, s)
    if args.save_raw:
        with open(args.save_raw, "w", encoding="utf-8") as f:
            json.dump({"results": results, "cases": [{"id": c.id, "file": c.file, "tests": [t.valid for t in c.tests]} for c in cases]}, f)
    if args.write:
        text = schema_report.render(run, s)
        plot.save_raw(args.write, "json_schema", "MaskBench sample, Llama 3" + (" (--quick smoke run)" if args.quick else ""), raw_metrics(cases, results),
                      "bench_json_schema.py")
        with open(args.write, "w", encoding="utf-8") as f:
            f.write(text.rstrip("\n") + "\n\n" + "\n".join(plot.markdown_links("json_schema", PLOTS)))
        print(f"wrote {args.write}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
