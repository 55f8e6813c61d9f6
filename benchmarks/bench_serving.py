"""Serving benchmark: tokamata, llguidance and XGrammar behind vLLM's own structured-output
contract, replaying its scheduler with speculative drafts.

Run it in the serving environment (``make bench-serving``; vLLM 0.33.0's backend classes:
``TokamataBackend``, vLLM's ``GuidanceBackend`` and ``XgrammarBackend``, all over the Llama 3
tokenizer), in one process, one engine after the other over the same workload.

Workload (issue 22): ``--requests`` concurrent requests (256) over ``--schemas`` MaskBench
schemas (50, drawn with a fixed seed), each request producing one of its schema's valid
instances (the compact text every engine's MaskBench run feeds, tokenized by Llama 3), with
drafts of ``--draft`` tokens (4). A draft is the next true tokens, each replaced by a random
token with probability ``--noise`` (then the verifier rejects from there), trimmed by the
grammar's ``validate_tokens`` as vLLM's scheduler does. One scheduler step, per backend:

1. ``validate_tokens(draft)`` for every request (the scheduler trims drafts);
2. the bitmask of vLLM's ``StructuredOutputManager.grammar_bitmask`` (serial path, the one it
   takes whenever drafts are scheduled): per request, fill a row, accept the draft token, for
   each draft position, then the bonus row, then ``rollback`` what was accepted;
3. ``accept_tokens`` of the verified prefix plus the bonus token (the true next token).

Timed: step 1+2+3 over the whole batch (the time the scheduler waits for masks), reported as
mean, p50, p99 and max per step, and compile time per request (vLLM compiles each request; the
tokamata backend's cache and XGrammar's compiler cache are on, as vLLM configures them).

Only (schema, instance) pairs that every engine accepts token by token are used, so that all
three run the same steps; the report says how many were left out and by whom.
Target (issue 22): tokamata fastest, p99 at most half of llguidance's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from types import SimpleNamespace

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from schema_workload import NoData, files_available, load_cases, tokenize  # noqa: E402
from workload import llama3_tokenizer_path  # noqa: E402

VOCAB_SIZE = 128256
STOP = {128001, 128009}


def backends(draft: int):
    import tokamata.integrations.vllm as tv
    from transformers import PreTrainedTokenizerFast
    from vllm.config import StructuredOutputsConfig
    from vllm.v1.structured_output.backend_guidance import GuidanceBackend
    from vllm.v1.structured_output.backend_xgrammar import XgrammarBackend

    tv.install()
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=llama3_tokenizer_path())
    tokenizer.eos_token = "<|eot_id|>"
    made = {}
    for name, cls in (("tokamata", tv.TokamataBackend), ("llguidance", GuidanceBackend),
                      ("xgrammar", XgrammarBackend)):
        config = SimpleNamespace(
            structured_outputs_config=StructuredOutputsConfig(backend="guidance" if name == "llguidance" else name),
            model_config=None, speculative_config=SimpleNamespace(num_speculative_tokens=draft),
            num_speculative_tokens=draft)
        made[name] = cls(config, tokenizer=tokenizer, vocab_size=VOCAB_SIZE)
    return made


def replay_ok(backend, spec: str, tokens: list[int]) -> bool:
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions

    try:
        g = backend.compile_grammar(StructuredOutputOptions.JSON, spec)
        return all(g.accept_tokens("check", [t]) for t in tokens + [128009]) and g.is_terminated()
    except Exception:
        return False


class Request:
    def __init__(self, rid: str, spec: str, tokens: list[int]):
        self.rid, self.spec, self.tokens = rid, spec, tokens
        self.pos = 0
        self.grammar = None


def step(backend, requests: list[Request], drafts: dict[str, list[int]], bitmask, draft: int) -> dict[str, int]:
    """One scheduler step for one backend (validate, grammar_bitmask, accept); returns how many
    tokens each request advanced."""
    scheduled = {}
    for r in requests:
        d = drafts[r.rid]
        scheduled[r.rid] = d[:len(r.grammar.validate_tokens(d))] if d else []
    stride = draft + 1
    for k, r in enumerate(requests):  # vLLM's grammar_bitmask, serial path
        g, row, advanced = r.grammar, k * stride, 0
        for token in scheduled[r.rid]:
            g.fill_bitmask(bitmask, row)
            if not g.is_terminated() and g.accept_tokens(r.rid, [token]):
                advanced += 1
            row += 1
        g.fill_bitmask(bitmask, row)
        if advanced:
            g.rollback(advanced)
    advanced_by = {}
    for r in requests:  # verification: the true tokens the draft got right, plus the bonus token
        d, truth = scheduled[r.rid], r.tokens[r.pos:] + [128009]
        n = 0
        while n < len(d) and d[n] == truth[n]:
            n += 1
        accepted = truth[:n + 1]
        assert r.grammar.accept_tokens(r.rid, accepted), (r.rid, accepted)
        advanced_by[r.rid] = len(accepted)
    return advanced_by


def precheck(args) -> dict:
    """The (schema, instance) pairs every engine accepts (run in a child process, so that the
    measured process starts with cold caches)."""
    cases, _ = load_cases(files_available(), 1.0, 0, None)
    random.Random(args.seed).shuffle(cases)
    tokenize(llama3_tokenizer_path(), cases)
    made = backends(args.draft)
    chosen, left_out = [], {name: [] for name in made}
    for case in cases:
        if len(chosen) == args.schemas:
            break
        valid = [t for t in case.tests if t.valid and 8 <= len(t.tokens) <= args.max_tokens]
        if not valid:
            continue
        test = valid[0]
        ok = {name: replay_ok(b, case.schema_text, test.tokens) for name, b in made.items()}
        for name, good in ok.items():
            if not good:
                left_out[name].append(case.id)
        if all(ok.values()):
            chosen.append((case.id, case.schema_text, test.tokens))
    return {"chosen": chosen, "left_out": left_out}


def run(args) -> dict:
    import subprocess
    import tempfile

    from vllm.v1.structured_output.backend_types import StructuredOutputOptions

    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([sys.executable, __file__, "--precheck", f.name, "--schemas", str(args.schemas),
                        "--seed", str(args.seed), "--max-tokens", str(args.max_tokens)], check=True)
        pre = json.load(open(f.name))
    chosen = pre["chosen"]
    made = backends(args.draft)
    results = {}
    workload = [(f"r{i}", *chosen[i % len(chosen)][1:]) for i in range(args.requests)]
    for name, backend in made.items():
        backend.compile_grammar(StructuredOutputOptions.JSON, '{"type": "object"}', STOP)  # imports, tables
        requests = [Request(rid, spec, tokens) for rid, spec, tokens in workload]
        compile_ms = []
        for r in requests:
            start = time.perf_counter()
            r.grammar = backend.compile_grammar(StructuredOutputOptions.JSON, r.spec, STOP)
            compile_ms.append((time.perf_counter() - start) * 1e3)
        bitmask = backend.allocate_token_bitmask(args.requests * (args.draft + 1))
        noise = random.Random(args.seed + 1)
        step_ms, masks = [], 0
        active = list(requests)
        while active:
            drafts = {}
            for r in active:
                truth = r.tokens[r.pos:r.pos + args.draft]
                drafts[r.rid] = [t if noise.random() >= args.noise else noise.randrange(VOCAB_SIZE) for t in truth]
            start = time.perf_counter()
            advanced = step(backend, active, drafts, bitmask, args.draft)
            step_ms.append((time.perf_counter() - start) * 1e3)
            for r in active:
                masks += advanced[r.rid]
                r.pos += advanced[r.rid]
            active = [r for r in active if r.pos <= len(r.tokens) and not r.grammar.is_terminated()]
        results[name] = {"compile_ms": compile_ms, "step_ms": step_ms, "steps": len(step_ms), "tokens": masks}
    return {"schemas": [c[0] for c in chosen], "left_out": pre["left_out"], "results": results, "args": vars(args)}


def stats(values: list[float]) -> dict:
    a = np.asarray(values)
    return {"mean": float(a.mean()), "p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)),
            "max": float(a.max())}


def report(data: dict) -> str:
    a = data["args"]
    lines = ["# Serving benchmark (vLLM 0.33.0 backend contract, Llama 3)", "",
             f"{a['requests']} concurrent requests over {len(data['schemas'])} MaskBench schemas, drafts of "
             f"{a['draft']} tokens (noise {a['noise']}), one process, `benchmarks/bench_serving.py`. "
             f"Pairs left out because an engine refused the instance: "
             + "; ".join(f"{k} {len(v)}" + (f" ({', '.join(v)})" if v else "") for k, v in data["left_out"].items())
             + ".", "",
             "| engine | steps | step mean ms | p50 | p99 | max | compile mean ms | compile p99 |",
             "|---|---|---|---|---|---|---|---|"]
    res = data["results"]
    for name, r in res.items():
        s, c = stats(r["step_ms"]), stats(r["compile_ms"])
        lines.append(f"| {name} | {r['steps']} | {s['mean']:.2f} | {s['p50']:.2f} | {s['p99']:.2f} | {s['max']:.2f} | "
                     f"{c['mean']:.2f} | {c['p99']:.2f} |")
    t, g = stats(res["tokamata"]["step_ms"]), stats(res["llguidance"]["step_ms"])
    x = stats(res["xgrammar"]["step_ms"])
    fastest = t["mean"] <= min(g["mean"], x["mean"])
    lines += ["", f"- tokamata fastest per step (mean): {'PASS' if fastest else 'FAIL'} "
                  f"({t['mean']:.2f} vs llguidance {g['mean']:.2f}, xgrammar {x['mean']:.2f} ms)",
              f"- p99 at most half of llguidance's: {'PASS' if t['p99'] <= 0.5 * g['p99'] else 'FAIL'} "
              f"({t['p99']:.2f} vs {g['p99']:.2f} ms, ratio {t['p99'] / g['p99']:.2f})"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=256)
    parser.add_argument("--schemas", type=int, default=50)
    parser.add_argument("--draft", type=int, default=4)
    parser.add_argument("--noise", type=float, default=0.2)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", help="write the markdown report here")
    parser.add_argument("--raw", help="write the raw timings (JSON) here")
    parser.add_argument("--precheck", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.precheck:
        with open(args.precheck, "w") as f:
            json.dump(precheck(args), f)
        return
    try:
        data = run(args)
    except NoData as e:
        print(f"skipped: {e}")
        return
    text = report(data)
    print(text)
    if args.write:
        with open(args.write, "w") as f:
            f.write(text)
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump(data, f)


if __name__ == "__main__":
    main()
