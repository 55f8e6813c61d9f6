"""Where tokamata's grammar time to first mask goes, grammar by grammar, next to llguidance's.

Usage: ``python benchmarks/grammar_ttfm_split.py [--grammars a,b] [--runs 9]``.

One process, Llama 3, the grammars of bench_grammar.py (``grammar_workload.load_case``; JSON
left out). For each grammar, ``--runs`` times, alternating the two engines: tokamata's compile
(``compile_grammar`` / ``compile_gbnf`` after ``clear_caches``, as engines.py times it), then its
first mask (matcher + ``fill_bitmask``), then llguidance's whole TTFM. Every time is this
process's CPU time (``time.process_time``: the wall clock swings several-fold on a shared
machine), the garbage collector off, the best of the runs. Prints compile, first mask, TTFM,
llguidance's TTFM and the ratio (the issue 20 target: at most 1.0). No timing is asserted.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main() -> None:
    from grammar_workload import GRAMMAR_NAMES, load_case

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grammars", default=",".join(g for g in GRAMMAR_NAMES if g != "json"))
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()

    from engines import ENGINES
    from measure import allocate_bitmask, first_matcher_of
    from workload import TokenizerData, llama3_tokenizer_path

    tok = TokenizerData.load(llama3_tokenizer_path())
    tk, ll = ENGINES["tokamata"](), ENGINES["llguidance"]()
    tk.setup(tok)
    ll.setup(tok)
    buf = allocate_bitmask(tok.vocab_size)
    cases = [load_case(g.strip(), 15) for g in args.grammars.split(",") if g.strip()]
    for engine in (tk, ll):  # one-time setup (tables, first compiles) out of the timings
        for case in cases:
            engine.filler(first_matcher_of(engine, engine.compile_grammar(case)), buf)()
    gc.collect()
    gc.disable()
    print(f"{'grammar':16} {'compile':>8} {'first':>8} {'TTFM':>8} {'llg':>8} {'ratio':>6}   (ms, CPU, best of {args.runs})")
    for case in cases:
        compile_s, first_s, total_s, llg_s = [], [], [], []
        for _ in range(args.runs):
            tk.reset_caches()
            t0 = time.process_time()
            compiled = tk.compile_grammar(case)
            t1 = time.process_time()
            tk.filler(first_matcher_of(tk, compiled), buf)()
            t2 = time.process_time()
            compile_s.append(t1 - t0)
            first_s.append(t2 - t1)
            total_s.append(t2 - t0)
            del compiled
            ll.reset_caches()
            t0 = time.process_time()
            ll.filler(first_matcher_of(ll, ll.compile_grammar(case)), buf)()
            llg_s.append(time.process_time() - t0)
        print(f"{case.name:16} {min(compile_s) * 1e3:8.2f} {min(first_s) * 1e3:8.2f} {min(total_s) * 1e3:8.2f} "
              f"{min(llg_s) * 1e3:8.2f} {min(total_s) / min(llg_s):6.2f}", flush=True)
    gc.enable()


if __name__ == "__main__":
    main()
