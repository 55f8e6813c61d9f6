"""Speculative drafts and CPU logit masking: tokamata only, Llama 3 tokenizer, one process.

* **Drafts** (issues 21 and 22): for a regex, a Lark grammar and a JSON Schema, at every
  position of a valid instance, the rows of the next ``d`` tokens (d = 4 and 8; the instance's
  own tokens, so every draft token is accepted) filled two ways, warm (masks built by a first
  pass): ``Matcher.fill_bitmask_draft`` (one native call) and the loop a server runs through
  the per-token API (``fill_bitmask``, ``consume`` for each draft token, one more
  ``fill_bitmask``, then ``rollback``). Median microseconds per draft over the positions and
  repeats; the ratio loop / native is the speed-up. ``validate_tokens`` against its loop
  (``consume`` each, ``rollback``) too. The batch form (``fill_bitmasks_draft``, 64 requests)
  against 64 loops.
* **apply_bitmask** (issue 20, per-token path): one row of 262,144 logits (Gemma 3's
  vocabulary) masked by a random bitmask with about half the words mixed, numpy and torch CPU,
  per dtype: the C++ path against the numpy reference (unpack the bits, boolean index).
  Target: float32 under 50 us (PASS/FAIL line).
* **vLLM** (when run with the serving environment's Python, where vLLM imports): vLLM 0.33's
  ``grammar_bitmask`` for 64 requests with drafts of 4, tokamata's native path against
  vLLM's own per-token loop over the same grammars.

Timings are medians of repeated runs in this process; on a shared machine compare ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import tokamata  # noqa: E402
from tokamata.bitmask import unpack_bitmask  # noqa: E402
from workload import TokenizerData, encode_instance, llama3_tokenizer_path  # noqa: E402

APPLY_COLUMNS = 262_144
APPLY_TARGET_US = 50.0

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                           "tags": {"type": "array", "items": {"type": "string"}}},
          "required": ["name", "age"]}
CASES = [  # (name, compile, instance text)
    ("regex", lambda v: tokamata.compile_regex(r"[A-Z][a-z]+( [a-z]+){3,30}\.", v),
     "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat."),
    ("grammar", lambda v: tokamata.compile_grammar(
        'start: stmt+\nstmt: NAME " = " expr ";\\n"\nexpr: NUMBER | NAME | expr " + " expr\n'
        'NAME: /[a-z]+/\nNUMBER: /[0-9]+/', v),
     "alpha = 1;\nbeta = alpha + 22;\ngamma = beta + alpha + 333;\ndelta = gamma + 4;\n"),
    ("schema", lambda v: tokamata.compile_json_schema(SCHEMA, v, whitespace="compact"),
     json.dumps({"name": "Ada Lovelace", "age": 36, "tags": ["math", "engines", "poetry"]},
                separators=(",", ":"))),
]


def _loop_fill(m, draft, buf) -> int:
    """The per-token loop a server runs: fill, consume each, fill, roll back."""
    fill, consume = m.fill_bitmask, m.consume
    n = 0
    for i, t in enumerate(draft):
        fill(buf, i)
        if not consume(t):
            break
        n += 1
    else:
        fill(buf, len(draft))
    m.rollback(n)
    return n


def _loop_validate(m, draft) -> int:
    n = 0
    for t in draft:
        if not m.consume(t):
            break
        n += 1
    m.rollback(n)
    return n


def bench_drafts(vocab, path: str, repeats: int) -> list[dict]:
    rows = []
    width = (vocab.size + 31) // 32
    for name, make, text in CASES:
        constraint = make(vocab)
        tokens = encode_instance(path, text)
        buf = np.zeros((9, width), dtype=np.int32)
        for d in (4, 8):
            drafts_at = [(k, tokens[k:k + d]) for k in range(len(tokens) - d + 1)]
            timing = {"native": [], "loop": [], "validate": [], "validate_loop": []}
            for rep in range(repeats + 1):  # the first pass builds the masks
                m = constraint.matcher()
                for k, draft in drafts_at:
                    if k:
                        m.consume(tokens[k - 1])
                    ids = list(draft)
                    clock = time.perf_counter_ns
                    t0 = clock(); m.fill_bitmask_draft(ids, buf); t1 = clock()
                    _loop_fill(m, draft, buf); t2 = clock()
                    m.validate_tokens(ids); t3 = clock()
                    _loop_validate(m, draft); t4 = clock()
                    if rep:
                        timing["native"].append(t1 - t0)
                        timing["loop"].append(t2 - t1)
                        timing["validate"].append(t3 - t2)
                        timing["validate_loop"].append(t4 - t3)
                assert m.validate_tokens(drafts_at[-1][1]) == d
            med = {key: statistics.median(v) / 1000 for key, v in timing.items()}
            rows.append({"case": name, "d": d, **med})
            print(f"  {name:8s} d={d}: fill_bitmask_draft {med['native']:.2f} us vs loop {med['loop']:.2f} us "
                  f"({med['loop'] / med['native']:.2f}x); validate_tokens {med['validate']:.2f} vs "
                  f"{med['validate_loop']:.2f} us ({med['validate_loop'] / med['validate']:.2f}x)", flush=True)
    return rows


def bench_batch(vocab, path: str, repeats: int, requests: int = 64, d: int = 4) -> dict:
    _, make, text = CASES[2]
    constraint = make(vocab)
    tokens = encode_instance(path, text)
    width = (vocab.size + 31) // 32
    matchers = [constraint.matcher() for _ in range(requests)]
    offsets = [i % (len(tokens) - d) for i in range(requests)]
    for m, k in zip(matchers, offsets):
        m.consume_many(tokens[:k])
    drafts = [tokens[k:k + d] for k in offsets]
    buf = np.zeros((requests * (d + 1), width), dtype=np.int32)
    starts = [i * (d + 1) for i in range(requests)]
    native, loop = [], []
    for rep in range(repeats + 1):
        t0 = time.perf_counter_ns()
        tokamata.fill_bitmasks_draft(matchers, drafts, buf, starts)
        t1 = time.perf_counter_ns()
        for m, draft, s in zip(matchers, drafts, starts):
            _loop_fill(m, draft, buf[s:s + d + 1])
        t2 = time.perf_counter_ns()
        if rep:
            native.append(t1 - t0)
            loop.append(t2 - t1)
    out = {"requests": requests, "d": d, "native": statistics.median(native) / 1000,
           "loop": statistics.median(loop) / 1000}
    print(f"  batch of {requests} drafts of {d}: fill_bitmasks_draft {out['native']:.1f} us vs loops "
          f"{out['loop']:.1f} us ({out['loop'] / out['native']:.2f}x)", flush=True)
    return out


def bench_vllm(path: str, repeats: int, requests: int = 64, d: int = 4) -> dict | None:
    """vLLM 0.33's StructuredOutputManager.grammar_bitmask for a batch of ``requests`` JSON
    Schema requests with drafts of ``d`` tokens: tokamata's native path (after install())
    against vLLM's own per-token loop (``__wrapped__``) over the same grammars. Only where
    vLLM imports (the serving environment: .cache/venv-serving/bin/python)."""
    try:
        import torch
        from vllm.config import StructuredOutputsConfig
        from vllm.v1.structured_output import StructuredOutputManager
        from vllm.v1.structured_output.backend_types import StructuredOutputOptions

        import tokamata.integrations.vllm as tv
    except ImportError:
        print("  (vLLM not importable here: run with .cache/venv-serving/bin/python for the vLLM row)")
        return None
    from types import SimpleNamespace

    from transformers import PreTrainedTokenizerFast

    tv.install()
    tok = TokenizerData.load(path)
    backend = tv.TokamataBackend(StructuredOutputsConfig(backend="tokamata"),
                                 tokenizer=PreTrainedTokenizerFast(tokenizer_file=path), vocab_size=tok.vocab_size)
    manager = StructuredOutputManager.__new__(StructuredOutputManager)
    manager.__dict__.update(backend=backend, backend_name="tokamata", reasoner_cls=None, enable_in_reasoning=False,
                            _grammar_bitmask=None, _full_mask=torch.tensor(-1, dtype=torch.int32),
                            fill_bitmask_parallel_threshold=128,
                            vllm_config=SimpleNamespace(num_speculative_tokens=d,
                                                        model_config=SimpleNamespace(is_diffusion=False),
                                                        scheduler_config=SimpleNamespace(max_num_seqs=requests)))
    text = CASES[2][2]
    tokens = encode_instance(path, text)
    reqs, drafts = {}, {}
    for i in range(requests):
        grammar = backend.compile_grammar(StructuredOutputOptions.JSON, json.dumps(SCHEMA))
        k = i % (len(tokens) - d)
        assert grammar.accept_tokens("r", tokens[:k])
        reqs[str(i)] = SimpleNamespace(use_structured_output=True, structured_output_request=SimpleNamespace(
            grammar=grammar, reasoning_ended=None, reasoner=None))
        drafts[str(i)] = tokens[k:k + d]
    ids = list(reqs)
    native, loop = [], []
    for rep in range(repeats + 1):
        t0 = time.perf_counter_ns()
        manager.grammar_bitmask(reqs, ids, drafts)
        t1 = time.perf_counter_ns()
        StructuredOutputManager.grammar_bitmask.__wrapped__(manager, reqs, ids, drafts)
        t2 = time.perf_counter_ns()
        if rep:
            native.append(t1 - t0)
            loop.append(t2 - t1)
    out = {"requests": requests, "d": d, "native": statistics.median(native) / 1000,
           "loop": statistics.median(loop) / 1000}
    print(f"  vLLM grammar_bitmask, {requests} requests, drafts of {d}: native {out['native']:.0f} us vs vLLM's "
          f"loop {out['loop']:.0f} us ({out['loop'] / out['native']:.2f}x)", flush=True)
    return out


def _reference_apply(logits: np.ndarray, mask: np.ndarray) -> None:
    """The numpy path apply_bitmask took before the C++ one (unpack, boolean index)."""
    logits[~unpack_bitmask(mask, logits.shape[1])] = -np.inf


def bench_apply(repeats: int) -> list[dict]:
    rng = np.random.default_rng(0)
    words = APPLY_COLUMNS // 32
    bits = rng.choice(np.array([0, 0xFFFFFFFF], dtype=np.uint64), size=(1, words))
    mixed = rng.random((1, words)) < 0.5
    bits[mixed] = rng.integers(0, 2**32, size=int(mixed.sum()), dtype=np.uint64)
    mask = bits.astype(np.uint32).view(np.int32)
    rows = []

    def timed(fn, make) -> float:
        """Median over repeats on one buffer (masking's cost does not depend on the values;
        a fresh copy per run would time the allocator's page faults too)."""
        samples = []
        x = make()
        for _ in range(repeats):
            t0 = time.perf_counter_ns()
            fn(x)
            samples.append(time.perf_counter_ns() - t0)
        return statistics.median(samples) / 1000

    base = rng.standard_normal((1, APPLY_COLUMNS)).astype(np.float32)
    for dtype in (np.float32, np.float16, np.float64):
        src = base.astype(dtype)
        native = timed(lambda x: tokamata.apply_bitmask(x, mask), src.copy)
        reference = timed(lambda x: _reference_apply(x, mask), src.copy)
        rows.append({"what": f"numpy {np.dtype(dtype).name}", "native": native, "reference": reference})
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(1)  # (the reference on one thread, as the C++ path; torch's pool crawls on a loaded box)
        tmask = torch.from_numpy(mask)
        for name in ("float32", "float16", "bfloat16", "float64"):
            src = torch.from_numpy(base).to(getattr(torch, name))
            native = timed(lambda x: tokamata.apply_bitmask(x, tmask), src.clone)
            allowed = torch.from_numpy(unpack_bitmask(mask, APPLY_COLUMNS))
            reference = timed(lambda x: x.masked_fill_(~allowed, float("-inf")), src.clone)
            rows.append({"what": f"torch {name}", "native": native, "reference": reference,
                         "note": "reference: masked_fill_ with the bool mask already unpacked"})
    for r in rows:
        print(f"  apply_bitmask {r['what']:16s} [1, {APPLY_COLUMNS}]: C++ {r['native']:.1f} us vs reference "
              f"{r['reference']:.1f} us", flush=True)
    return rows


def report(drafts: list[dict], batch: dict, apply: list[dict], vllm: dict | None = None) -> str:
    lines = ["# Drafts and CPU logit masking (benchmarks/bench_drafts.py)", "",
             "Llama 3 tokenizer; medians in microseconds; warm masks.", "",
             "| case | draft | fill_bitmask_draft | loop | speed-up | validate_tokens | loop | speed-up |",
             "|---|---|---|---|---|---|---|---|"]
    for r in drafts:
        lines.append(f"| {r['case']} | {r['d']} | {r['native']:.2f} | {r['loop']:.2f} | {r['loop'] / r['native']:.2f}x "
                     f"| {r['validate']:.2f} | {r['validate_loop']:.2f} | {r['validate_loop'] / r['validate']:.2f}x |")
    lines += ["", f"Batch: {batch['requests']} drafts of {batch['d']} (JSON Schema): fill_bitmasks_draft "
              f"{batch['native']:.1f} us vs {batch['loop']:.1f} us of loops ({batch['loop'] / batch['native']:.2f}x).",
              "" if vllm is None else
              f"vLLM 0.33 grammar_bitmask, {vllm['requests']} requests with drafts of {vllm['d']} (JSON Schema): "
              f"tokamata's native path {vllm['native']:.0f} us vs vLLM's per-token loop {vllm['loop']:.0f} us "
              f"({vllm['loop'] / vllm['native']:.2f}x).",
              "", f"apply_bitmask, one row of {APPLY_COLUMNS:,} columns:", "",
              "| logits | C++ | reference | speed-up |", "|---|---|---|---|"]
    for r in apply:
        lines.append(f"| {r['what']} | {r['native']:.1f} | {r['reference']:.1f} | {r['reference'] / r['native']:.1f}x |")
    f32 = next(r for r in apply if r["what"] == "numpy float32")
    verdict = "PASS" if f32["native"] < APPLY_TARGET_US else "FAIL"
    lines += ["", f"{verdict}: apply_bitmask numpy float32, {APPLY_COLUMNS:,} columns: {f32['native']:.1f} us "
              f"(target under {APPLY_TARGET_US:.0f} us)", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--write", metavar="PATH")
    args = parser.parse_args(argv)
    path = llama3_tokenizer_path()
    tok = TokenizerData.load(path)
    vocab = tokamata.Vocabulary.from_tokenizer_json(path, eos_token_ids=[tok.eos_id])
    print("drafts:", flush=True)
    drafts = bench_drafts(vocab, path, args.repeats)
    batch = bench_batch(vocab, path, args.repeats)
    vllm = bench_vllm(path, args.repeats)
    print("apply_bitmask:", flush=True)
    apply = bench_apply(max(args.repeats * 10, 50))
    text = report(drafts, batch, apply, vllm)
    print(text)
    if args.write:
        with open(args.write, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
