"""``generate`` (constrained generation with a model on CPU) and ``demo`` (Gemma 3 270M under
several constraints, constrained vs unconstrained).

Invariants:
- The constraint is read and checked before any model is loaded: a bad constraint or file
  fails in a second, not after the model's load.
- A ``--model`` that is a ``.gguf`` file runs with llama-cpp-python; a folder runs with
  transformers (``AutoModelForCausalLM``, local files only, nothing is downloaded). Without
  ``--model`` the model comes from ``$TOKAMATA_DEMO_MODEL`` (``make demo`` sets it up).
- Every output is judged by an independent validator (:func:`.constraints.validate`); the
  exit status is 1 when a finished output is not valid.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time

from .constraints import CliError, Spec, compile_spec, spec_from_args, validate
from .progress import Progress
from .vocabularies import byte_vocabulary

__all__ = ["cmd_generate", "cmd_demo", "DEMO_CASES", "MODEL_ENV", "resolve_model"]

GEMMA_CHAT = "<start_of_turn>user\n{}<end_of_turn>\n<start_of_turn>model\n"
MODEL_ENV = "TOKAMATA_DEMO_MODEL"


def resolve_model(args: argparse.Namespace) -> str:
    """``--model``, else ``$TOKAMATA_DEMO_MODEL``; a usage error naming both otherwise."""
    model: str | None = args.model or os.environ.get(MODEL_ENV)
    if not model:
        args.command_parser.error(
            f"no model: pass --model PATH.gguf (or a transformers folder) or set {MODEL_ENV}=PATH.gguf "
            "(`make demo` assembles Gemma 3 270M with tools/demo_model.py and passes its path)")
        raise AssertionError("unreachable: error() exits")
    if not os.path.exists(model):
        raise CliError(f"the model {model!r} (from --model or ${MODEL_ENV}) does not exist")
    return model


def _threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def load_llama(model_path: str, threads: int | None, progress: Progress):
    """(llm, vocabulary) for the GGUF file ``model_path``."""
    # llama.cpp's OpenMP threads spin while waiting by default; on a small machine shared with
    # other work that makes decoding several times slower (measured on 2 busy cores: 3.8 tok/s
    # spinning, 19.5 tok/s passive). The environment variable must be set before the import.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import llama_cpp
    except ImportError:
        raise CliError("llama-cpp-python is not installed; install it with: pip install llama-cpp-python "
                       "(it builds llama.cpp from source, about 10 minutes on 2 cores)") from None
    from ..integrations.llama_cpp import vocabulary

    name = os.path.basename(model_path)
    threads = threads or _threads()
    with progress.step(f"loading {name} with llama-cpp-python (CPU, {threads} threads)"):
        llm = llama_cpp.Llama(model_path=model_path, n_ctx=2048, n_threads=threads, n_threads_batch=threads,
                              verbose=False)
    with progress.step(f"reading the vocabulary of {name} ({llm.n_vocab()} tokens)"):
        vocab = vocabulary(llm)
    return llm, vocab


def _rate(value: float) -> str:
    return "n/a" if value != value else f"{value:.1f}"


def _verdict(ok: bool | None) -> str:
    return "not checked" if ok is None else ("yes" if ok else "NO")


def _generate_transformers(model_dir: str, spec: Spec, args: argparse.Namespace, prompt: str,
                           progress: Progress) -> dict:
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer, LogitsProcessorList
    except ImportError:
        raise CliError("a model folder needs transformers and torch: pip install transformers torch") from None
    import tokamata
    from ..integrations.transformers import TokamataLogitsProcessor

    with progress.step(f"loading {model_dir} with transformers (CPU)"):
        tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
    vocab = tokamata.Vocabulary.from_hf(tokenizer, size=model.config.vocab_size)
    constraint, compile_s = compile_spec(spec, vocab)
    inputs = tokenizer(prompt, return_tensors="pt")
    options: dict = {"max_new_tokens": args.max_tokens, "do_sample": args.temperature > 0}
    if args.temperature > 0:
        options["temperature"] = args.temperature
        if args.seed is not None:
            torch.manual_seed(args.seed)
    start = time.perf_counter()
    out = model.generate(**inputs, logits_processor=LogitsProcessorList([TokamataLogitsProcessor(constraint)]),
                         pad_token_id=tokenizer.eos_token_id, **options)
    seconds = time.perf_counter() - start
    ids = [int(t) for t in out[0, inputs["input_ids"].shape[1]:]]
    eos = set(int(t) for t in vocab.eos_token_ids)
    finished = bool(ids) and ids[-1] in eos
    text = tokenizer.decode([t for t in ids if t not in eos], skip_special_tokens=False)
    return {"text": text, "token_ids": ids, "finished": finished, "seconds": seconds, "compile_s": compile_s,
            "tokens_per_second": len(ids) / seconds if seconds else float("nan")}


def _generate_llama(model_path: str, spec: Spec, args: argparse.Namespace, prompt: str,
                    progress: Progress) -> dict:
    from ..integrations.llama_cpp import generate

    llm, vocab = load_llama(model_path, args.threads, progress)
    constraint, compile_s = compile_spec(spec, vocab)
    # (token budgets keep the output complete at --max-tokens; canonical mode and token
    # filters have none, and then the output may stop mid-sentence there)
    result = generate(llm, constraint, prompt, max_tokens=args.max_tokens, temperature=args.temperature,
                      seed=args.seed, budget=constraint.matcher().supports_budgets)
    return {"text": result.text, "token_ids": list(result.token_ids), "finished": result.finished,
            "seconds": result.seconds, "compile_s": compile_s,
            "tokens_per_second": result.decode_tokens_per_second}


def cmd_generate(args: argparse.Namespace) -> int:
    progress = Progress(quiet=args.output_format == "json")
    spec = spec_from_args(args)
    compile_spec(spec, byte_vocabulary(), canonical=False)  # fail fast, before loading a model
    model = resolve_model(args)
    prompt = GEMMA_CHAT.format(args.prompt) if args.chat else args.prompt
    run = _generate_transformers if os.path.isdir(model) else _generate_llama
    result = run(model, spec, args, prompt, progress)
    valid = validate(spec, result["text"])
    if args.output_format == "json":
        print(json.dumps({**result, "valid": valid, "kind": spec.kind}))
    else:
        print(result["text"])
        progress.note(f"{len(result['token_ids'])} tokens in {result['seconds']:.2f} s (compile "
                      f"{result['compile_s'] * 1e3:.0f} ms, {_rate(result['tokens_per_second'])} tok/s); "
                      f"{'finished' if result['finished'] else 'stopped at --max-tokens'}; "
                      f"valid ({spec.kind}): {_verdict(valid)}")
    return 1 if valid is False and result["finished"] else 0


# -- demo --------------------------------------------------------------------------------------

# (name, prompt, spec, max_tokens), each checked by an independent validator; the first four
# are seed 000's App. C.4 constraints. The shipped Gemma 3 270M is the pretrained (base) model,
# not the instruction-tuned one: it has no chat template and answers a chat-formatted question
# by repeating it, so the prompts are plain text that a base model continues (question/answer,
# a line to complete, a few-shot list).
_PERSON = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 20}, "age": {"type": "integer", "minimum": 0, "maximum": 130},
    "city": {"type": "string", "maxLength": 20}}, "required": ["name", "age", "city"],
    "additionalProperties": False}
_ARITHMETIC = ('start: " " sum\nsum: product | sum ("+" | "-") product\n'
               'product: atom | product ("*" | "/") atom\natom: NUMBER | "(" sum ")"\nNUMBER: /[0-9]{1,3}/')
DEMO_CASES = [
    ("multiple choice", "Question: What color is a ripe banana?\nAnswer:",
     Spec("regex", r"Red|Orange|Yellow|Green|Blue|Indigo|Violet", "demo"), 16),
    ("ISO date-time", "Apollo 11 landed on the Moon on July 20, 1969, at 20:17:40 UTC.\n"
     "The same moment as an ISO 8601 timestamp:\n",
     Spec("regex", r"\d{4}-[01]\d-[0-3]\dT[0-2]\d:[0-5]\d:[0-5]\d([+][0-2]\d:[0-5]\d|Z)", "demo"), 32),
    ("IP address", "Question: What is the IPv4 address of Google's public DNS resolver?\nAnswer:",
     Spec("regex", r"((25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(25[0-5]|2[0-4]\d|[01]?\d\d?)", "demo"), 24),
    ("quoted text", 'Words spelled out:\ndog\n"d o g"\nsun\n"s u n"\ncat\n',
     Spec("regex", r'" *(?:[^\s"\\]|\\["n\\])?(?: [^\s"\\]|\\["n\\])*"', "demo"), 32),
    ("phone number", "Tony's Pizza, 12 Main Street, New York. Phone:\n",
     Spec("regex", r"\(\d{3}\) \d{3}-\d{4}", "demo"), 24),
    ("JSON key: value", "Alice is 30 years old. As JSON:\n",
     Spec("regex", r'\{"name": "[A-Z][a-z]{1,15}", "age": \d{1,3}\}', "demo"), 32),
    ("yes/no", "Question: Is the Pacific the largest ocean on Earth?\nAnswer:", Spec("regex", r"(Yes|No)\.", "demo"), 8),
    ("JSON Schema", "Bob is a 42 year old carpenter from Oslo. His record as JSON:\n",
     Spec("schema", json.dumps(_PERSON), "demo"), 48),
    ("arithmetic grammar", "Question: Write the area of a 3 by 4 rectangle as a product.\nAnswer:",
     Spec("grammar", _ARITHMETIC, "demo"), 16),
    ("dataclass as JSON", "Rex is a 3 year old dog. His record as JSON:\n",
     Spec("type", "tokamata.cli.demo_types:Pet", "demo", syntax="json"), 40),
    ("dataclass as a Python call", "Tom is a 7 year old cat. As a Python dataclass:\n",
     Spec("type", "tokamata.cli.demo_types:Pet", "demo", syntax="python"), 40),
]

_CHECKS = {"regex": "re.fullmatch", "schema": "jsonschema", "json": "json", "grammar": "lark", "gbnf": "none",
           "type": "parse"}


def _clip(text: str, width: int = 100, strip: bool = True) -> str:
    if strip:
        text = text.strip()
    return text if len(text) <= width else text[: width - 3] + "..."


def cmd_demo(args: argparse.Namespace) -> int:
    from ..integrations.llama_cpp import generate

    progress = Progress()
    total_start = time.perf_counter()
    model = resolve_model(args)
    llm, vocab = load_llama(model, args.threads, progress)
    cases = DEMO_CASES if args.cases is None else [DEMO_CASES[i] for i in args.cases]
    compiled = []
    with progress.step(f"compiling {len(cases)} constraints against {vocab.size} tokens"):
        for name, prompt, spec, max_tokens in cases:
            compiled.append(compile_spec(spec, vocab))
    # Warm up llama.cpp (first evaluation allocates buffers) so the first case is not penalized.
    generate(llm, None, "Hello", max_tokens=2)

    print(f"tokamata demo: {os.path.basename(model)} with llama-cpp-python on CPU, greedy "
          "decoding;\neach prompt runs with the constraint and without it (same loop, same max tokens)\n")
    rows = []
    totals = {"c_steps": 0, "c_s": 0.0, "u_steps": 0, "u_s": 0.0, "c_tokamata_s": 0.0}
    for (name, prompt, spec, max_tokens), (constraint, compile_s) in zip(cases, compiled):
        llm.reset()  # no prompt reuse from the previous run: both runs evaluate the prompt
        con = generate(llm, constraint, prompt, max_tokens=max_tokens)
        llm.reset()
        free = generate(llm, None, prompt, max_tokens=max_tokens)
        matched = validate(spec, con.text)
        free_matched = validate(spec, free.text.strip())
        rows.append((name, matched, free_matched))
        for key, r in (("c", con), ("u", free)):
            totals[f"{key}_steps"] += r.decode_steps
            totals[f"{key}_s"] += r.decode_seconds
        totals["c_tokamata_s"] += con.constraint_seconds
        check = _CHECKS[spec.kind]
        print(f"== {name}: {spec.describe()}  (compiled in {compile_s * 1e3:.1f} ms)")
        print(f"   prompt:        {_clip(prompt, strip=False)!r}")
        print(f"   constrained:   {con.text!r}")
        print(f"                  {check}: {_verdict(matched)}; {len(con.token_ids)} tokens, "
              f"{'finished' if con.finished else 'hit max tokens'}; first token {con.first_token_seconds * 1e3:.0f} ms, "
              f"then {_rate(con.decode_tokens_per_second)} tok/s")
        print(f"   unconstrained: {_clip(free.text)!r}")
        head = re.match(spec.text, free.text.strip()) if spec.kind == "regex" else None
        starts = f" (it starts with the match {head.group(0)!r})" if head and not free_matched else ""
        print(f"                  {check}: {'yes' if free_matched else 'no'}{starts}; {len(free.token_ids)} tokens, "
              f"{'finished' if free.finished else 'hit max tokens'}; first token {free.first_token_seconds * 1e3:.0f} ms, "
              f"then {_rate(free.decode_tokens_per_second)} tok/s")
        print(flush=True)

    n_ok = sum(1 for r in rows if r[1])
    n_free = sum(1 for r in rows if r[2])
    c_rate = totals["c_steps"] / totals["c_s"] if totals["c_s"] else float("nan")
    u_rate = totals["u_steps"] / totals["u_s"] if totals["u_s"] else float("nan")
    print(f"summary: constrained outputs fully matching: {n_ok}/{len(rows)}; "
          f"unconstrained outputs matching (after strip): {n_free}/{len(rows)}")
    print(f"decode speed over all cases: constrained {_rate(c_rate)} tok/s "
          f"({totals['c_steps']} steps), unconstrained {_rate(u_rate)} tok/s ({totals['u_steps']} steps)")
    if c_rate == c_rate and u_rate == u_rate and c_rate > 0:  # (not NaN)
        print(f"time per decoded token, constrained vs unconstrained: {100 * (u_rate / c_rate - 1):+.1f}% "
              "(the mask is filled while llama.cpp evaluates the token; the runs decode different tokens)")
    if totals["c_s"] > 0:
        print(f"tokamata's share of the constrained decoding time (what the loop waited on it: masking, "
              f"consuming, starting the next mask): {100 * totals['c_tokamata_s'] / totals['c_s']:.2f}% "
              f"({1e6 * totals['c_tokamata_s'] / max(1, totals['c_steps']):.0f} us per token)")
    print(f"total demo time {time.perf_counter() - total_start:.1f} s")
    sys.stdout.flush()
    return 0 if n_ok == len(rows) else 1
