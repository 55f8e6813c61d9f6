"""Measurement: timing, memory and correctness of one engine on one regex.

Holds time to first mask, the fill/consume walk along an instance, the per-(engine, regex)
``run_case``, the warm-vs-cold mask re-check, the memory subprocess (``memory_child``, run as
``bench_regex.py --_memory-child ENGINE CASE``), and the cross-engine mask comparison with its
Python ``regex`` oracle.

Invariants

* Only library calls are inside timed regions; copies of masks and checks happen outside them.
* A walk over an instance of n tokens fills n + 1 masks (the last one is where EOS is chosen)
  and consumes n tokens.
* A failing engine never aborts the run: its exceptions and wrong masks become
  ``CaseResult.errors`` (or a memory error string).
* Memory is measured in a fresh subprocess of the entry point per (engine, regex), from
  ``/proc/self`` (Linux); the parent never measures its own RSS.
"""

from __future__ import annotations

import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engines import ENGINES, Engine
from workload import (
    CASES,
    TRIVIAL_INSTANCE,
    TRIVIAL_PATTERN,
    Case,
    TokenizerData,
    encode_instance,
    llama3_tokenizer_path,
    xgrammar_dialect,
)

#: the script that ``measure_memory`` spawns with ``--_memory-child``
ENTRY_POINT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_regex.py")


def allocate_bitmask(vocab_size: int) -> np.ndarray:
    return np.zeros((1, (vocab_size + 31) // 32), dtype=np.int32)


def allowed_ids(buf: np.ndarray, vocab_size: int) -> np.ndarray:
    bits = np.unpackbits(buf[0].view(np.uint8), bitorder="little")
    return np.flatnonzero(bits[:vocab_size]).astype(np.int32)


def first_matcher_of(engine: Engine, compiled: Any) -> Any:
    f = getattr(engine, "first_matcher", None)
    return f(compiled) if f else engine.matcher(compiled)


def time_to_first_mask(engine: Engine, pattern: str, buf: np.ndarray, fresh: bool = True) -> float:
    """Seconds from the (translated) regex string to the first filled mask, fresh compile."""
    if fresh:
        engine.reset_caches()
    t0 = time.perf_counter()
    c = engine.compile(pattern)
    m = first_matcher_of(engine, c)
    engine.filler(m, buf)()
    dt = time.perf_counter() - t0
    del m, c
    return dt


@dataclass
class Walk:
    fill_ns: list[int] = field(default_factory=list)
    consume_ns: list[int] = field(default_factory=list)
    masks: list[np.ndarray] = field(default_factory=list)  # copies, only when kept
    errors: list[str] = field(default_factory=list)


def walk(engine: Engine, m: Any, tokens: list[int], buf: np.ndarray, keep_masks: bool) -> Walk:
    """Fill, then consume, for each token of the instance; one final fill after the last token
    (the step at which EOS is chosen). Only the library calls are timed."""
    w = Walk()
    fill = engine.filler(m, buf)
    consume = engine.consumer(m)
    clock = time.perf_counter_ns
    for k, t in enumerate(tokens):
        t0 = clock()
        fill()
        t1 = clock()
        w.fill_ns.append(t1 - t0)
        if keep_masks:
            w.masks.append(buf.copy())
        word = int(buf[0, t >> 5])
        if not (word >> (t & 31)) & 1:
            w.errors.append(f"step {k}: instance token {t} not allowed")
        t0 = clock()
        ok = consume(t)
        t1 = clock()
        w.consume_ns.append(t1 - t0)
        if ok is False:
            w.errors.append(f"step {k}: consume({t}) returned False")
            return w
    t0 = clock()
    fill()
    w.fill_ns.append(clock() - t0)
    if keep_masks:
        w.masks.append(buf.copy())
    if not engine.accepting(m):
        w.errors.append("not accepting after the whole instance")
    return w


@dataclass
class CaseResult:
    ttfm_s: list[float] = field(default_factory=list)
    cold: Walk | None = None
    warm_fill_ns: list[int] = field(default_factory=list)
    warm_consume_ns: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    memory: dict[str, float] | None = None
    note: str | None = None
    first_request_ms: float = math.nan  # compile + matcher + cold walk (fills and consumes only)
    ttfm_cached_s: list[float] = field(default_factory=list)  # repeat compiles, caches not reset


SLOW_FILL_NS = 2_000_000  # a cold walk averaging more than 2 ms per mask ...
SLOW_REPEATS = 3  # ... gets this many warm walks, to keep the full run within minutes


def run_case(engine: Engine, case: Case, tokens: list[int], vocab_size: int, ttfm_runs: int, repeats: int) -> CaseResult:
    r = CaseResult()
    pattern = engine.translate(case.pattern)
    buf = allocate_bitmask(vocab_size)
    try:
        gc.collect()
        gc.disable()
        for _ in range(ttfm_runs):
            r.ttfm_s.append(time_to_first_mask(engine, pattern, buf))
        if engine.has_caches:  # the same regex again, the engine's caches left warm
            r.ttfm_cached_s = [time_to_first_mask(engine, pattern, buf, fresh=False) for _ in range(ttfm_runs)]
        engine.reset_caches()
        t0 = time.perf_counter_ns()
        compiled = engine.compile(pattern)
        m = engine.matcher(compiled)
        t1 = time.perf_counter_ns()
        r.cold = walk(engine, m, tokens, buf, keep_masks=True)
        r.first_request_ms = (t1 - t0 + sum(r.cold.fill_ns) + sum(r.cold.consume_ns)) / 1e6
        r.errors += [f"cold walk: {e}" for e in r.cold.errors]
        if r.cold.fill_ns and statistics.fmean(r.cold.fill_ns) > SLOW_FILL_NS and repeats > SLOW_REPEATS:
            repeats = SLOW_REPEATS
            r.note = f"warm walks capped at {SLOW_REPEATS}: cold masks took {statistics.fmean(r.cold.fill_ns) / 1e6:.1f} ms on average"
        for rep in range(repeats):
            w = walk(engine, engine.matcher(compiled), tokens, buf, keep_masks=False)
            r.warm_fill_ns += w.fill_ns
            r.warm_consume_ns += w.consume_ns
            if w.errors:
                r.errors += [f"warm walk {rep}: {e}" for e in w.errors[:3]]
                break
    except Exception as e:  # noqa: BLE001 - a failing engine becomes a failure row
        r.errors.append(f"exception: {type(e).__name__}: {e}")
    finally:
        gc.enable()
    return r


def recheck_masks(engine: Engine, case: Case, tokens: list[int], vocab_size: int, cold: Walk) -> list[str]:
    """A warm walk must produce the same masks as the cold walk."""
    buf = allocate_bitmask(vocab_size)
    try:
        engine.reset_caches()
        compiled = engine.compile(engine.translate(case.pattern))
        walk(engine, engine.matcher(compiled), tokens, buf, keep_masks=False)
        w = walk(engine, engine.matcher(compiled), tokens, buf, keep_masks=True)
    except Exception as e:  # noqa: BLE001
        return [f"exception in mask re-check: {e}"]
    return [f"step {k}: warm mask differs from cold mask" for k, (a, b) in enumerate(zip(cold.masks, w.masks)) if not np.array_equal(a, b)]


# ----------------------------------------------------------------------------------------------
# Memory (one subprocess per engine and regex)
# ----------------------------------------------------------------------------------------------


def _proc_status_kb() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM")):
                k, v = line.split(":")
                out[k] = int(v.split()[0])
    return out


def _trim() -> None:
    """Return freed heap to the OS so that RSS readings are not inflated by earlier frees."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
        return True
    except OSError:
        return False


def memory_child(engine_name: str, case_name: str, repeats: int) -> dict[str, Any]:
    tok = TokenizerData.load(llama3_tokenizer_path())
    case = next(c for c in CASES if c.name == case_name)
    tokens = encode_instance(tok.path, case.instance)
    engine = ENGINES[engine_name]()
    _trim()
    s0 = _proc_status_kb()
    engine.setup(tok)
    buf = allocate_bitmask(tok.vocab_size)
    c = engine.compile(engine.translate(TRIVIAL_PATTERN))
    walk(engine, first_matcher_of(engine, c), encode_instance(tok.path, TRIVIAL_INSTANCE), buf, keep_masks=False)
    del c
    _trim()
    s1 = _proc_status_kb()
    resettable = _reset_peak()

    def compile_and_walk() -> dict[str, float]:
        engine.reset_caches()
        _trim()
        if resettable:
            _reset_peak()
        before = _proc_status_kb()
        compiled = engine.compile(engine.translate(case.pattern))
        w = walk(engine, engine.matcher(compiled), tokens, buf, keep_masks=False)
        for _ in range(repeats):
            w = walk(engine, engine.matcher(compiled), tokens, buf, keep_masks=False)
        after = _proc_status_kb()
        del compiled
        return {
            "peak_mb": (after["VmHWM"] - before["VmRSS"]) / 1024 if resettable else float("nan"),
            "retained_mb": (after["VmRSS"] - before["VmRSS"]) / 1024,
            "ok": not w.errors,
        }

    # The first compile in the process may pay for process-wide lazy tables (e.g. Unicode
    # classes) that the trivial warm-up did not touch; the second one is the steady state.
    first = compile_and_walk()
    second = compile_and_walk()
    return {
        "setup_mb": (s1["VmRSS"] - s0["VmRSS"]) / 1024,
        "first_peak_mb": first["peak_mb"],
        "first_retained_mb": first["retained_mb"],
        "peak_mb": second["peak_mb"],
        "retained_mb": second["retained_mb"],
        "ok": first["ok"] and second["ok"],
    }


def measure_memory(engine_name: str, case_name: str, repeats: int, timeout: float) -> dict[str, Any] | str:
    cmd = [sys.executable, ENTRY_POINT, "--_memory-child", engine_name, case_name, "--repeats", str(repeats)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f} s"
    if p.returncode != 0:
        return (p.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(p.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------------------------
# Cross-engine comparison
# ----------------------------------------------------------------------------------------------


class Oracle:
    """Is ``prefix + token`` a prefix of some string of the language? (Python ``regex``,
    partial matching, with ``\\d``/``\\s`` spelled out as Python's ``re`` defines them)."""

    def __init__(self, case: Case, tok: TokenizerData, tokens: list[int]):
        try:
            import regex
        except ImportError:
            self.rx = None
            return
        self.rx = regex.compile(xgrammar_dialect(case.pattern))
        self.tok = tok
        self.tokens = tokens

    def verdict(self, step: int, tid: int) -> str:
        if self.rx is None:
            return "?"
        prefix = b"".join(self.tok.token_bytes[t] for t in self.tokens[:step])
        if tid in self.tok.special:
            if tid == self.tok.eos_id:
                ok = self.rx.fullmatch(prefix.decode("utf-8")) is not None
                return "EOS valid" if ok else "EOS invalid"
            return "special token: invalid"
        data = prefix + self.tok.token_bytes[tid]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            if e.start >= len(data) - 3 and e.reason == "unexpected end of data":
                head = data[: e.start].decode("utf-8")
                tail = data[e.start :]
                # does some character starting with these bytes continue a viable prefix?
                lead = tail[0]
                n = 2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else 4
                lo = int.from_bytes(tail + b"\x80" * (n - len(tail)), "big")
                hi = int.from_bytes(tail + b"\xbf" * (n - len(tail)), "big")
                for cand in range(lo, hi + 1):
                    try:
                        ch = cand.to_bytes(n, "big").decode("utf-8")
                    except UnicodeDecodeError:
                        continue
                    if self.rx.fullmatch(head + ch, partial=True):
                        return "valid (partial UTF-8)"
                return "invalid (partial UTF-8)"
            return "invalid UTF-8"
        return "valid" if self.rx.fullmatch(text, partial=True) else "invalid"


@dataclass
class Disagreement:
    case: str
    step: int
    engine: str
    only_engine: list[int]  # allowed by engine, not by the reference
    only_ref: list[int]  # allowed by the reference, not by engine


def compare(results: dict[str, dict[str, CaseResult]], tokens: dict[str, list[int]], vocab_size: int, ref: str) -> tuple[dict, list[Disagreement]]:
    """Allowed-token counts per step and engine, and differences to ``ref``."""
    counts: dict[str, dict[str, list[int]]] = {}
    dis: list[Disagreement] = []
    for case in CASES:
        per = {e: r[case.name] for e, r in results.items() if case.name in r and r[case.name].cold}
        counts[case.name] = {e: [len(allowed_ids(m, vocab_size)) for m in r.cold.masks] for e, r in per.items()}
        if ref not in per:
            continue
        ref_masks = per[ref].cold.masks
        for e, r in per.items():
            if e == ref:
                continue
            for k, (a, b) in enumerate(zip(r.cold.masks, ref_masks)):
                if np.array_equal(a, b):
                    continue
                ea, eb = set(allowed_ids(a, vocab_size).tolist()), set(allowed_ids(b, vocab_size).tolist())
                dis.append(Disagreement(case.name, k, e, sorted(ea - eb), sorted(eb - ea)))
    return counts, dis
