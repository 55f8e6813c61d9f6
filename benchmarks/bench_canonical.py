"""Canonical masks (``canonical=True``) against plain masks and llguidance, Llama 3.

For each case (regexes, a small JSON Schema, a MaskBench schema, a Lark grammar) it runs seeded
random walks through the canonical masks; at every step it times ``fill_bitmask`` of a
canonical matcher and of a plain matcher at the same tokens (one process, interleaved, so the
ratio holds on a loaded machine). Mask mean and p99 include the cold masks of the first walks,
as the other benchmarks do. TTFM: compile + first mask, fresh caches, median of 5, canonical
tokamata vs llguidance's matcher construction + first mask.

Targets (issue 18): canonical mean <= 1.5x plain and below llguidance's mean; canonical TTFM
<= 1.5x llguidance's. Writes benchmarks/RESULTS_canonical.md (``--out`` to change).

    python benchmarks/bench_canonical.py [--walks 20] [--steps 40] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from workload import llama3_tokenizer_path  # noqa: E402

import tokamata  # noqa: E402
from tokamata import trie as _trie  # noqa: E402

MASKBENCH = os.path.join(HERE, "..", "..", "shared", "data", "jsonschemabench", "maskbench", "Github_easy.jsonl")
SMALL_SCHEMA = {"type": "object", "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 99999},
                                                 "tag": {"type": "string", "pattern": "^[a-c ]{0,6}$"}},
                "required": ["id", "tag"], "additionalProperties": False}
LARK = ('start: expr\nexpr: NUMBER | expr OP expr | "(" expr ")" | NAME "(" expr ")"\n'
        'OP: " + " | " * " | " - " | "/"\nNUMBER: /[0-9]{1,6}(\\.[0-9]{1,3})?/\nNAME: /[a-z]{1,8}/')


#: the MaskBench record used (Github_easy's second): an open region inside unbounded text (free
#: strings, extra properties) makes the exact liveness search expensive; walks over such
#: schemas may still end in LimitExceeded (max_canonical_search), which the mean leaves out
MASKBENCH_ID = "Github_easy---o10009"


def maskbench_schema() -> dict:
    with open(MASKBENCH, encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record["id"] == MASKBENCH_ID:
                return record["schema"]
    raise LookupError(MASKBENCH_ID)


def cases() -> list[tuple[str, str, object]]:
    out = [("regex", "boolean", r"boolean: ((true)|(false))"),
           ("regex", "[a-z ]{0,12}\\.", r"[a-z ]{0,12}\."),
           ("json_schema", "small schema", SMALL_SCHEMA),
           ("lark", "expression grammar", LARK)]
    if os.path.exists(MASKBENCH):
        out.insert(3, ("json_schema", "MaskBench Github_easy o10009", maskbench_schema()))
    return out


def compile_tk(kind, spec, vocab, canonical):
    if kind == "regex":
        return tokamata.compile_regex(spec, vocab, canonical=canonical)
    if kind == "lark":
        return tokamata.compile_grammar(spec, vocab, canonical=canonical)
    return tokamata.compile_json_schema(spec, vocab, canonical=canonical)


def llg_grammar(llg, kind, spec):
    if kind == "regex":
        return llg.LLMatcher.grammar_from_regex(spec)
    if kind == "lark":
        return llg.LLMatcher.grammar_from_lark(spec)
    return llg.LLMatcher.grammar_from_json_schema(json.dumps(spec))


def walks(kind, spec, vocab, n_walks, n_steps, seed=0):
    """Per-step fill times (ns) of canonical and plain matchers at the same tokens, the skip
    rate (steps with exactly one allowed non-EOS token) of each, and how many canonical masks
    raised LimitExceeded (max_canonical_search; that walk ends there)."""
    canon = compile_tk(kind, spec, vocab, True)
    plain = compile_tk(kind, spec, vocab, False)
    eos = set(vocab.eos_token_ids)
    buf_c = np.zeros((1, (vocab.size + 31) // 32), dtype=np.int32)
    buf_p = np.zeros_like(buf_c)
    times_c, times_p = [], []
    forced_c = forced_p = steps = limited = 0
    rng = random.Random(seed)
    for _ in range(n_walks):
        mc, mp = canon.matcher(), plain.matcher()
        for _ in range(n_steps):
            t0 = time.perf_counter_ns()
            try:
                mc.fill_bitmask(buf_c, 0)
            except tokamata.LimitExceeded:  # (counted: the walk ends there)
                limited += 1
                break
            t1 = time.perf_counter_ns()
            mp.fill_bitmask(buf_p, 0)
            t2 = time.perf_counter_ns()
            times_c.append(t1 - t0)
            times_p.append(t2 - t1)
            allowed = np.flatnonzero(np.unpackbits(buf_c.view(np.uint8), bitorder="little")[:vocab.size]).tolist()
            plain_allowed = np.flatnonzero(np.unpackbits(buf_p.view(np.uint8), bitorder="little")[:vocab.size])
            steps += 1
            forced_c += len(allowed) == 1 and allowed[0] not in eos
            forced_p += len(plain_allowed) == 1 and int(plain_allowed[0]) not in eos
            t = rng.choice(allowed)
            if t in eos or not mc.consume(t) or not mp.consume(t):
                break
    return times_c, times_p, forced_c / max(steps, 1), forced_p / max(steps, 1), limited


def ttfm_tk(kind, spec, vocab, repeats=5):
    out = []
    buf = np.zeros((1, (vocab.size + 31) // 32), dtype=np.int32)
    for _ in range(repeats):
        tokamata.clear_caches(vocab)
        _trie.shared_rows(vocab)
        t0 = time.perf_counter()
        try:
            compile_tk(kind, spec, vocab, True).matcher().fill_bitmask(buf, 0)
        except tokamata.LimitExceeded:
            return float("nan")
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def llg_run(llg, lln, tokenizer, kind, spec, vocab_size, canon_tokens_walks, repeats=5):
    """llguidance's TTFM (median) and its mask times along the given token walks."""
    buf = lln.allocate_token_bitmask(1, vocab_size)
    ttfm = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        m = llg.LLMatcher(tokenizer, llg_grammar(llg, kind, spec), log_level=1)
        lln.fill_next_token_bitmask(m, buf, 0)
        ttfm.append(time.perf_counter() - t0)
    times = []
    base = llg.LLMatcher(tokenizer, llg_grammar(llg, kind, spec), log_level=1)
    for walk in canon_tokens_walks:
        m = base.deep_copy()
        for t in walk + [None]:
            t0 = time.perf_counter_ns()
            lln.fill_next_token_bitmask(m, buf, 0)
            times.append(time.perf_counter_ns() - t0)
            if t is None or not m.consume_token(t):
                break
    return statistics.median(ttfm), times


def token_walks(kind, spec, vocab, n_walks, n_steps, seed=0):
    """The walks ``walks`` takes (same seed), as token lists, for llguidance."""
    canon = compile_tk(kind, spec, vocab, True)
    eos = set(vocab.eos_token_ids)
    rng = random.Random(seed)
    out = []
    for _ in range(n_walks):
        m, walk = canon.matcher(), []
        for _ in range(n_steps):
            try:
                t = rng.choice(m.allowed_tokens().tolist())
            except tokamata.LimitExceeded:
                break
            if t in eos or not m.consume(t):
                break
            walk.append(t)
        out.append(walk)
    return out


def stats(ns):
    a = np.asarray(ns, dtype=np.float64) / 1000.0
    return float(a.mean()), float(np.percentile(a, 99))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--walks", type=int, default=20)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS_canonical.md"))
    args = ap.parse_args()
    path = llama3_tokenizer_path()
    vocab = tokamata.Vocabulary.from_tokenizer_json(path)
    try:
        import llguidance as llg
        import llguidance.numpy as lln

        with open(path, encoding="utf-8") as f:
            llt = llg.LLTokenizer(f.read(), n_vocab=vocab.size, eos_token=sorted(vocab.eos_token_ids)[0])
    except ImportError:
        llg = lln = llt = None
    lines = ["# Canonical masks (canonical=True), Llama 3", "",
             f"{platform.machine()}, {os.cpu_count()} CPUs, one process (a loaded shared machine: compare ratios). "
             f"{args.walks} seeded random walks of up to {args.steps} steps per case; mask times in us, "
             "cold masks included; TTFM in ms (compile + first mask, fresh caches, median of 5).", "",
             "| case | canonical mean | plain mean | ratio | canonical p99 | plain p99 | llguidance mean | "
             "canonical TTFM | llguidance TTFM | TTFM ratio | forced steps canonical / plain | LimitExceeded |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for kind, name, spec in cases():
        compile_tk(kind, spec, vocab, True)  # (warm the per-process tables: class table, merges)
        tc, tp, fc, fp, limited = walks(kind, spec, vocab, args.walks, args.steps)
        (cm, c99), (pm, p99) = stats(tc), stats(tp)
        ttfm = ttfm_tk(kind, spec, vocab) * 1000
        lm = lt = float("nan")
        if llg is not None:
            lt_s, ltimes = llg_run(llg, lln, llt, kind, spec, vocab.size,
                                   token_walks(kind, spec, vocab, args.walks, args.steps))
            lm, lt = stats(ltimes)[0], lt_s * 1000
        lines.append(f"| {name} | {cm:.1f} | {pm:.1f} | {cm / pm:.2f}x | {c99:.0f} | {p99:.0f} | {lm:.1f} | "
                     f"{ttfm:.2f} | {lt:.2f} | {ttfm / lt:.2f}x | {fc:.0%} / {fp:.0%} | {limited} |")
        note = f" ({limited} walk(s) ended in LimitExceeded: FAIL)" if limited else ""
        verdicts.append(f"- {name}{note}: mean {cm / pm:.2f}x plain (target <= 1.5x): {'PASS' if cm <= 1.5 * pm else 'FAIL'}; "
                        f"below llguidance ({cm:.1f} vs {lm:.1f} us): {'PASS' if cm < lm else 'FAIL'}; "
                        f"TTFM {ttfm / lt:.2f}x llguidance (target <= 1.5x): {'PASS' if ttfm <= 1.5 * lt else 'FAIL'}")
        print(lines[-1], flush=True)
    lines += ["", "## Targets", ""] + verdicts + [""]
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print("\n".join(verdicts))


if __name__ == "__main__":
    main()
