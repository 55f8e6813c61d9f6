"""Where tokamata's JSON Schema time to first mask goes, schema by schema, next to llguidance's.

Usage: ``python benchmarks/ttfm_split.py [--fraction 0.03] [--repeat 3] [--band 60 95]
[--spelling any] [--save PATH] [--ids PATH] [--load PATH]``.

One process, Llama 3. For every schema of the MaskBench sample (``schema_workload.load_cases``,
as in bench_json_schema.py) it times, in CPU seconds (``time.process_time``), the best of
``--repeat`` tries (the garbage collector off, as in bench_json_schema.py's workers) of: tokamata's compile (``compile_json_schema``, caches cleared first), its
first mask (matcher + ``fill_bitmask``), and llguidance's TTFM (``LLMatcher`` + first fill, as
engines.py times it). The two engines alternate per try. Prints the distribution of the ratio
tokamata / llguidance (mean, p50, p90, p99, max of each engine and the per-schema ratio), and
for the schemas between the ``--band`` percentiles of the ratio, how their tokamata time
splits into compile and first mask. ``--ids`` writes those schemas' ids (file/id, one a line)
for a profiler to replay; ``--save`` writes every row as JSON. No timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q / 100 * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fraction", type=float, default=0.03)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--band", type=float, nargs=2, default=(60.0, 95.0))
    ap.add_argument("--spelling", default="any", help='tokamata spelling (default "any", as bench_json_schema.py)')
    ap.add_argument("--save")
    ap.add_argument("--ids")
    ap.add_argument("--no-llguidance", action="store_true", help="tokamata only (ratios from --load)")
    ap.add_argument("--load", help="take llguidance's times from an earlier --save")
    args = ap.parse_args()

    import llguidance
    import llguidance.numpy as lln
    import numpy as np

    import tokamata
    from schema_workload import files_available, load_cases
    from tokamata import trie as _trie
    from workload import llama3_tokenizer_path

    path = llama3_tokenizer_path()
    vocab = tokamata.Vocabulary.from_tokenizer_json(path, eos_token_ids=[128009])
    with open(path, encoding="utf-8") as f:
        lltok = llguidance.LLTokenizer(f.read(), n_vocab=vocab.size, eos_token=128009)
    cases, _ = load_cases(files_available(), args.fraction, 15, None)
    buf = np.zeros((1, (vocab.size + 31) // 32), dtype=np.int32)
    llbuf = lln.allocate_token_bitmask(1, vocab.size)
    earlier = {}
    if args.load:
        with open(args.load) as f:
            earlier = {r["id"]: r["llg"] for r in json.load(f)}

    def tok_once(text: str) -> tuple[float, float]:
        tokamata.clear_caches(vocab)
        _trie.shared_rows(vocab)
        t0 = time.process_time()
        c = tokamata.compile_json_schema(text, vocab, whitespace="compact", property_order="schema",
                                         spelling=args.spelling)
        t1 = time.process_time()
        m = c.matcher()
        m.fill_bitmask(buf, 0)
        return t1 - t0, time.process_time() - t1

    def llg_once(text: str) -> float:
        t0 = time.process_time()
        m = llguidance.LLMatcher(lltok, llguidance.LLMatcher.grammar_from_json_schema(text), log_level=1)
        if m.is_error():
            raise RuntimeError(m.get_error())
        lln.fill_next_token_bitmask(m, llbuf, 0)
        return time.process_time() - t0

    gc.collect()  # the collector as bench_json_schema.py's workers run it: off, and a full
    gc.freeze()  # collection every 25 schemas, outside the timed windows
    gc.disable()
    rows = []
    for n, case in enumerate(cases):
        if n % 25 == 0:
            gc.collect()
        key = case.file + "/" + case.id
        best_c = best_m = best_l = float("inf")
        try:
            for _ in range(args.repeat):
                c, m = tok_once(case.schema_text)
                if c + m < best_c + best_m:
                    best_c, best_m = c, m
                if not args.no_llguidance and key not in earlier:
                    best_l = min(best_l, llg_once(case.schema_text))
        except Exception:  # either engine refuses the schema: not part of the ratio
            continue
        llg = earlier.get(key, best_l)
        if llg == float("inf"):
            continue
        rows.append({"id": key, "compile": best_c, "first": best_m, "llg": llg})
    if args.save:
        with open(args.save, "w") as f:
            json.dump(rows, f)

    tot = [r["compile"] + r["first"] for r in rows]
    llg = [r["llg"] for r in rows]
    print(f"{len(rows)} schemas (both engines compile), CPU ms, best of {args.repeat}")
    for name, xs in (("tokamata", tot), ("llguidance", llg)):
        print(f"  {name:10} mean {1e3 * statistics.mean(xs):7.2f}  p50 {1e3 * pct(xs, 50):7.2f}  "
              f"p90 {1e3 * pct(xs, 90):7.2f}  p99 {1e3 * pct(xs, 99):7.2f}  max {1e3 * max(xs):7.2f}")
    print(f"  ratio of    mean {statistics.mean(tot) / statistics.mean(llg):.2f}x  "
          f"p50 {pct(tot, 50) / pct(llg, 50):.2f}x  p90 {pct(tot, 90) / pct(llg, 90):.2f}x  "
          f"p99 {pct(tot, 99) / pct(llg, 99):.2f}x  max {max(tot) / max(llg):.2f}x")
    for r in rows:
        r["ratio"] = (r["compile"] + r["first"]) / r["llg"]
    rows.sort(key=lambda r: r["ratio"])
    lo, hi = (int(b / 100 * len(rows)) for b in args.band)
    band = rows[lo:hi]
    c = sum(r["compile"] for r in band)
    m = sum(r["first"] for r in band)
    ll = sum(r["llg"] for r in band)
    print(f"per-schema ratio p50 {rows[len(rows) // 2]['ratio']:.2f}x; band p{args.band[0]:g}-p{args.band[1]:g} "
          f"({len(band)} schemas): compile {1e3 * c:.1f} ms, first mask {1e3 * m:.1f} ms, llguidance {1e3 * ll:.1f} ms")
    for r in rows[-8:]:
        print(f"  {r['ratio']:6.2f}x  compile {1e3 * r['compile']:7.2f}  first {1e3 * r['first']:7.2f}  "
              f"llg {1e3 * r['llg']:6.2f}  {r['id']}")
    if args.ids:
        with open(args.ids, "w") as f:
            f.write("".join(r["id"] + "\n" for r in band))


if __name__ == "__main__":
    main()
