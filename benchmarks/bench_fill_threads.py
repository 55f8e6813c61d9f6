"""fill_bitmasks on one and two threads, measurable on a loaded machine too.

Two batches of 64 matchers decode their instances in lockstep (each step fills every active
matcher's row with one ``tokamata.fill_bitmasks(batch, buf, threads=k)`` call, then each
consumes its next token), as in ``bench_engine.py --threads-only``:

* **schema**: 64 JSON Schema matchers (MaskBench sample, else the handwritten schemas), the
  grammar strategy; the issue-16 target (two threads >= 1.6x faster than one, warm pass).
* **regex**: 64 regex matchers (the regexes of workload.py, cycled), the regular strategy:
  the same batch machinery without the grammar's costs.

Each pass is warm (a first pass on the same constraints built every mask; new matchers then
decode again). Passes alternate 1, 2, 2, 1, ... threads. Reported, per batch and thread count:
``median pass``: the median over passes of the wall time spent in ``fill_bitmasks``;
``per-step min``: the sum over steps of each step's fastest call over all passes (robust to
moments when another process held a core: a step's minimum is a moment when it did not);
``ideal``: the workload's own bound (the sum of the active matchers over the sum of their
halves rounded up, over the steps: a batch of 3 takes two fills' time on two threads);
``serial``: the wall time per pass of ``fill_bitmasks`` on empty batches (Python wrapper +
binding, one per step), which two threads cannot shorten.

A second measurement, beside the first (which stays the issue's check as written): the same
batches with each step consuming every active matcher's previous token and then filling its row,
three ways (``bench_engine.STEP_MODES``): ``main`` (consume on the main thread, matcher by
matcher, then ``fill_bitmasks``: the first measurement's order), ``batched``
(``tokamata.consume_tokens(batch, tokens, threads=k)`` then ``fill_bitmasks``: consume and fill
of a matcher on the same pool thread) and ``fused`` (``consume_tokens`` with the bitmask: one
call per step). Reported per mode: the fill calls alone and the whole steps (median pass, 1 and
2 threads), the main thread's CPU time (``time.thread_time``: it does not count time another
process held the core; the caller spins while a worker runs an item it claimed, so on two
threads it is the step's critical path) and the process's context switches per pass.

Process CPU time is not reported: Linux accounts another running thread's CPU time at
scheduler ticks (4 ms here), far coarser than a 20 us call, and the pool's worker spins
between calls by design (worker_pool.hpp), so CPU(2 threads) / CPU(1 thread) measures neither
contention nor speed-up. ``--rt`` (root only) runs the measured passes under SCHED_FIFO
priority 1, so this process's two threads run ahead of other users' (CFS) work on a loaded
machine (the kernel still keeps 5% of each second for the others; a run takes ~1 minute).

    .venv/bin/python benchmarks/bench_fill_threads.py               # idle machine
    .venv/bin/python benchmarks/bench_fill_threads.py --rt          # loaded machine, as root
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import tokamata  # noqa: E402
from bench_engine import STEP_MODES, bench_steps, print_steps, thread_workload  # noqa: E402
from workload import CASES, TokenizerData, encode_instance, llama3_tokenizer_path  # noqa: E402


@contextlib.contextmanager
def realtime(enabled: bool):
    """SCHED_FIFO for the calling thread (and the threads it starts) while inside, if enabled."""
    if not enabled:
        yield
        return
    before = os.sched_getscheduler(0), os.sched_getparam(0)
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    try:
        yield
    finally:
        os.sched_setscheduler(0, before[0], before[1])


def lockstep_pass(constraints, token_lists, buf, threads: int, empty: bool = False) -> list[int]:
    """Wall ns of each step's fill_bitmasks call over one lockstep decoding of every instance
    (``empty``: the same calls on empty batches, the part no thread count shortens)."""
    matchers = [c.matcher() for c in constraints]
    times = []
    clock = time.perf_counter_ns
    for step in range(max(len(t) for t in token_lists) + 1):
        active = [i for i, t in enumerate(token_lists) if step <= len(t)]
        batch = [] if empty else [matchers[i] for i in active]
        t0 = clock()
        tokamata.fill_bitmasks(batch, buf, threads=threads)
        times.append(clock() - t0)
        for i in active:
            if step < len(token_lists[i]):
                matchers[i].consume(token_lists[i][step])
    return times


def ideal_speedup(token_lists) -> float:
    steps = max(len(t) for t in token_lists) + 1
    active = [sum(1 for t in token_lists if s <= len(t)) for s in range(steps)]
    return sum(active) / sum((n + 1) // 2 for n in active)


def measure(name: str, constraints, token_lists, buf, repeats: int, rt: bool) -> dict:
    # (the pool's worker inherits the policy of the thread that starts it: the first threads=2
    # fill, here under SCHED_FIFO when rt)
    runs: dict[int, list[list[int]]] = {1: [], 2: []}
    with realtime(rt):
        for threads in (1, 2):
            lockstep_pass(constraints, token_lists, buf, threads)  # builds every mask; starts the pool
        for r in range(repeats):
            for threads in ((1, 2) if r % 2 == 0 else (2, 1)):
                runs[threads].append(lockstep_pass(constraints, token_lists, buf, threads))
        serial = statistics.median(sum(lockstep_pass(constraints, token_lists, buf, 1, empty=True))
                                   for _ in range(repeats)) / 1e6
    median = {t: statistics.median(sum(p) for p in v) / 1e6 for t, v in runs.items()}
    floor = {t: sum(min(step) for step in zip(*v)) / 1e6 for t, v in runs.items()}
    result = {"median_ms": median, "step_min_ms": floor, "speedup": median[1] / median[2],
              "step_min_speedup": floor[1] / floor[2], "serial_ms": serial,
              "ideal": ideal_speedup(token_lists), "steps": max(len(t) for t in token_lists) + 1,
              "matchers": len(constraints)}
    print(f"  {name}: {len(constraints)} matchers, {result['steps']} steps, ideal {result['ideal']:.2f}x, "
          f"serial {serial:.3f} ms/pass\n"
          f"    median pass: 1 thread {median[1]:.3f} ms, 2 threads {median[2]:.3f} ms, "
          f"speed-up {result['speedup']:.2f}x\n"
          f"    per-step min: 1 thread {floor[1]:.3f} ms, 2 threads {floor[2]:.3f} ms, "
          f"speed-up {result['step_min_speedup']:.2f}x", flush=True)
    return result


def measure_steps(name: str, constraints, token_lists, buf, repeats: int, rt: bool) -> dict:
    with realtime(rt):
        steps = bench_steps(constraints, token_lists, buf, repeats)
    print(f"  {name}, whole steps (consume then fill: {', '.join(STEP_MODES)}):", flush=True)
    print_steps(steps, "    ")
    return steps


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matchers", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--rt", action="store_true", help="measured passes under SCHED_FIFO (root; loaded machines)")
    parser.add_argument("--only", choices=("schema", "regex"))
    args = parser.parse_args(argv)
    path = llama3_tokenizer_path()
    tok = TokenizerData.load(path)
    vocab = tokamata.Vocabulary.from_tokenizer_json(path, eos_token_ids=[tok.eos_id])
    buf = tokamata.allocate_bitmask(args.matchers, vocab.size)
    print(f"fill_bitmasks, 1 vs 2 threads ({'SCHED_FIFO' if args.rt else 'normal priority'}, "
          f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs):", flush=True)
    if args.only != "regex":
        schemas, token_lists, _ = thread_workload(vocab, path, args.matchers)
        constraints = [tokamata.compile_json_schema(s, vocab) for s in schemas]
        measure("schema", constraints, token_lists, buf, args.repeats, args.rt)
        measure_steps("schema", constraints, token_lists, buf, args.repeats, args.rt)
    if args.only != "schema":
        cases = [CASES[i % len(CASES)] for i in range(args.matchers)]
        constraints = [tokamata.compile_regex(c.pattern, vocab) for c in cases]
        token_lists = [encode_instance(path, c.instance)[:256] for c in cases]
        measure("regex", constraints, token_lists, buf, args.repeats, args.rt)
        measure_steps("regex", constraints, token_lists, buf, args.repeats, args.rt)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
