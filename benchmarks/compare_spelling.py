"""Natural vs any JSON spelling: time to first mask and mask time on a few MaskBench schemas.

Usage: ``python benchmarks/compare_spelling.py [--repeats 3]``. For each schema (a fixed list of
MaskBench ids across the files and keywords; ../shared/data must be present) and each
spelling, interleaved in a shuffled order per repeat: TTFM is schema text -> compiled
constraint -> matcher -> first mask with tokamata's caches cleared before; mask time is every
``fill_bitmask`` along the schema's valid instances spelled naturally (tests/natural_json.py:
text both spellings accept), once right after that compile (cold: lexer states and rows built
on the way) and once more (warm). Each number is the least over ``--repeats`` (per compile, per
fill): the machine is shared, and the least is what the code costs. Llama 3 tokenizer. Prints per-schema medians and the median of the per-schema ratio natural/any. No
timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

SCHEMAS = ("BFCL_simple_266", "BFCL_parallel_multiple_45", "Github_easy---o21458", "Github_hard---o9794",
           "Github_hard---o60297", "Github_medium---o74443", "Github_medium---o1", "Github_trivial---o34208",
           "Glaiveai2K---generate_invoice_bb1762cc", "Glaiveai2K---calculate_area_f2cda1a3", "JME_98", "JME_19",
           "Kubernetes---kb_845_Normalized", "MCPspec---JSONRPCMessage", "MCPspec---ClientRequest",
           "Snowplow---sp_289_Normalized", "WashingtonPost---wp_102_Normalized", "Handwritten---allone4",
           "JsonSchemaStore---packer")


def _record(schema_id: str) -> dict:
    from schema_workload import MASKBENCH_DIR

    split = schema_id.split("---")[0] if "---" in schema_id else schema_id.split("_")[0]
    prefix = '{"id":' + json.dumps(schema_id) + ","
    with open(os.path.join(MASKBENCH_DIR, split + ".jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.startswith(prefix):
                return json.loads(line)
    raise LookupError(schema_id)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    import numpy as np
    from tokenizers import Tokenizer

    import tokamata
    from natural_json import natural_dumps
    from tokamata import trie as _trie
    from workload import llama3_tokenizer_path

    path = llama3_tokenizer_path()
    vocab = tokamata.Vocabulary.from_tokenizer_json(path, eos_token_ids=[128009])
    encoder = Tokenizer.from_file(path)
    buf = np.zeros((1, (vocab.size + 31) // 32), dtype=np.int32)
    spellings = ("any", "natural")
    rows = []
    for schema_id in SCHEMAS:
        record = _record(schema_id)
        text = json.dumps(record["schema"], ensure_ascii=False)
        instances = [encoder.encode(natural_dumps(t["data"]), add_special_tokens=False).ids
                     for t in record["tests"] if t["valid"]]
        ttfm = {s: [] for s in spellings}
        masks = {s: {"cold": [], "warm": []} for s in spellings}  # per repeat: the time of every fill
        accepted = {s: 0 for s in spellings}
        order = list(spellings)
        for repeat in range(args.repeats):
            random.Random(f"{schema_id}/{repeat}").shuffle(order)
            for spelling in order:
                tokamata.clear_caches(vocab)
                _trie.shared_rows(vocab)
                t0 = time.perf_counter()
                constraint = tokamata.compile_json_schema(text, vocab, spelling=spelling)
                constraint.matcher().fill_bitmask(buf, 0)
                ttfm[spelling].append(time.perf_counter() - t0)
                for phase in ("cold", "warm"):
                    fills = []
                    for tokens in instances:
                        m = constraint.matcher()
                        ok = True
                        for token in tokens:
                            t0 = time.perf_counter()
                            m.fill_bitmask(buf, 0)
                            fills.append(time.perf_counter() - t0)
                            if not m.consume(token):
                                ok = False
                                break
                        accepted[spelling] += repeat == 0 and phase == "cold" and ok and m.is_accepting()
                    masks[spelling][phase].append(fills)
        row = {"id": schema_id, "instances": len(instances)}
        for s in spellings:
            # the least of the repeats, per compile and per fill: what the code costs, with the
            # moments the machine was busy elsewhere left out (the machine is shared)
            per_fill = {p: [min(times) for times in zip(*masks[s][p])] for p in ("cold", "warm")}
            row[s] = {"ttfm_ms": min(ttfm[s]) * 1e3, "accepted": accepted[s], "fills": len(per_fill["cold"]),
                      **{f"{p}_mean_us": statistics.mean(per_fill[p]) * 1e6 if per_fill[p] else float("nan")
                         for p in ("cold", "warm")}}
        rows.append(row)
        a, n = row["any"], row["natural"]
        print(f"{schema_id:45} inst {len(instances):2}  TTFM any {a['ttfm_ms']:7.2f} natural {n['ttfm_ms']:7.2f} ms  "
              f"mask cold {a['cold_mean_us']:7.1f} / {n['cold_mean_us']:7.1f}  warm {a['warm_mean_us']:6.1f} / "
              f"{n['warm_mean_us']:6.1f} us  accepted {a['accepted']}/{n['accepted']}", flush=True)

    def ratio(key: str) -> float:
        return statistics.median(r["natural"][key] / r["any"][key] for r in rows if r["any"][key] > 0)

    print(f"median natural/any: TTFM {ratio('ttfm_ms'):.3f}, cold mask {ratio('cold_mean_us'):.3f}, "
          f"warm mask {ratio('warm_mean_us'):.3f}")
    for s in spellings:
        print(f"{s:8} TTFM median {statistics.median(r[s]['ttfm_ms'] for r in rows):.2f} ms, "
              f"mean {statistics.mean(r[s]['ttfm_ms'] for r in rows):.2f} ms; cold mask mean of means "
              f"{statistics.mean(r[s]['cold_mean_us'] for r in rows if r[s]['fills']):.1f} us, warm "
              f"{statistics.mean(r[s]['warm_mean_us'] for r in rows if r[s]['fills']):.1f} us")


if __name__ == "__main__":
    main()
