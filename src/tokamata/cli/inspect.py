"""``check`` (compile a constraint, print its report or its error with a caret under the
place) and ``mask`` (the tokens a constraint allows after a prefix).

Invariants:
- An error tokamata raises about the constraint is shown where it is: the line of the regex,
  grammar or schema text with a caret under the span (or the column), and the JSON pointer,
  keyword or limit it carries; ``--json`` prints the same as one JSON object on stdout.
- ``check`` exits 0 when the constraint compiles and 2 when it does not; ``mask`` exits 0, or 2
  when the prefix is outside the language.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from .constraints import CliError, Spec, compile_spec, spec_from_args
from .progress import Progress
from .vocabularies import byte_vocabulary, load_vocabulary

__all__ = ["cmd_check", "cmd_mask", "render_error", "error_record"]


def error_record(exc: Exception) -> dict[str, Any]:
    """A tokamata error as plain data (its class, message and every place attribute it has)."""
    record: dict[str, Any] = {"error": type(exc).__name__, "message": getattr(exc, "message", str(exc))}
    for name in ("span", "line", "column", "pointer", "keyword", "reason", "limit", "value", "bound"):
        value = getattr(exc, name, None)
        if value is not None:
            record[name] = list(value) if isinstance(value, tuple) else value
    return record


def render_error(exc: Exception, spec: Spec | None = None) -> list[str]:
    """Lines showing a tokamata error: the message, then the offending line with a caret."""
    lines = [f"error: {type(exc).__name__}: {getattr(exc, 'message', str(exc))}"]
    text = getattr(exc, "text", None) or (spec.text if spec is not None else None)
    span, line, column = getattr(exc, "span", None), getattr(exc, "line", None), getattr(exc, "column", None)
    if text and span is not None:
        start, end = span
        row_start = text.rfind("\n", 0, start) + 1
        row_end = text.find("\n", start)
        row_end = len(text) if row_end < 0 else row_end
        row = text[row_start:row_end]
        number = text.count("\n", 0, start) + 1
        prefix = f"  {number} | " if "\n" in text else "  "
        lines.append(prefix + row)
        width = max(1, min(end, row_end) - start)
        lines.append(" " * (len(prefix) + start - row_start) + "^" + "~" * (width - 1))
    elif text and line is not None:
        rows = text.splitlines()
        if 1 <= line <= len(rows):
            prefix = f"  {line} | "
            lines.append(prefix + rows[line - 1])
            lines.append(" " * (len(prefix) + max(0, (column or 1) - 1)) + "^")
        else:
            lines.append(f"  at line {line}, column {column}")
    elif line is not None:
        lines.append(f"  at line {line}, column {column}")
    pointer = getattr(exc, "pointer", None)
    if pointer is not None:
        lines.append(f"  at JSON pointer {pointer!r}")
    for name in ("keyword", "limit"):
        value = getattr(exc, name, None)
        if value is not None:
            lines.append(f"  {name}: {value}" + (f" (value {exc.value}, bound {exc.bound})"  # type: ignore[attr-defined]
                                                  if name == "limit" else ""))
    return lines


def cmd_check(args: argparse.Namespace) -> int:
    import tokamata

    progress = Progress(quiet=args.output_format == "json")
    spec = spec_from_args(args)
    vocab, source, _ = load_vocabulary(args, progress)
    if vocab is None:
        if spec.canonical or spec.token_filters:
            flag = "--canonical" if spec.canonical else "--token-filters"
            raise CliError(f"{flag} needs the tokenizer: give --tokenizer-json, --gguf or --hf")
        vocab, source = byte_vocabulary(), "the 256 single bytes"
    try:
        constraint, seconds = compile_spec(spec, vocab)
        start = time.perf_counter()
        matcher = constraint.matcher()
        first = matcher.allowed_tokens()
        first_mask_s = time.perf_counter() - start
    except tokamata.TokamataError as exc:
        if args.output_format == "json":
            print(json.dumps({"ok": False, **error_record(exc)}))
        else:
            print("\n".join(render_error(exc, spec)))
        return 2
    record = {"ok": True, "kind": spec.kind, "vocabulary": source, "strategy": constraint.strategy,
              "compile_ms": round(seconds * 1e3, 3), "first_mask_ms": round(first_mask_s * 1e3, 3),
              "first_allowed": int(len(first)), "report": constraint.report(), "filters": list(constraint.filters)}
    if args.output_format == "json":
        print(json.dumps(record))
        return 0
    print(f"ok: {spec.describe()}")
    print(f"  compiled against {source} ({vocab.size} tokens) in {seconds * 1e3:.1f} ms; strategy "
          f"{constraint.strategy}; first mask {first_mask_s * 1e3:.2f} ms ({len(first)} tokens allowed)")
    for name in constraint.filters:
        print(f"  filter: {name}")
    report = constraint.report()
    print("  exact: no approximation" if not report else "  approximations:")
    for line in report:
        print(f"    - {line}")
    return 0


def _greedy_tokenize(data: bytes, token_bytes) -> list[int]:
    """Longest-match tokenization of ``data`` over the vocabulary (where no encoder exists)."""
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
            raise CliError(f"no token of the vocabulary starts with {data[i:i + 1]!r}")
    return out


def _show(b) -> str:
    return "(special)" if b is None else repr(b)


def cmd_mask(args: argparse.Namespace) -> int:
    import numpy as np

    progress = Progress(quiet=args.output_format == "json")
    spec = spec_from_args(args)
    vocab, source, encode = load_vocabulary(args, progress)
    constraint, compile_s = compile_spec(spec, vocab)
    tb = vocab.token_bytes
    eos = sorted(int(t) for t in vocab.eos_token_ids)
    how = ""
    if args.prefix_tokens is not None:
        try:
            prefix = [int(t) for t in args.prefix_tokens.split(",") if t.strip()]
        except ValueError:
            raise CliError(f"--prefix-tokens wants comma-separated integers, not {args.prefix_tokens!r}") from None
    elif args.prefix:
        if encode is not None:
            prefix, how = list(encode(args.prefix)), "the tokenizer"
        else:
            prefix, how = _greedy_tokenize(args.prefix.encode("utf-8"), tb), "longest match"
    else:
        prefix = []
    matcher = constraint.matcher()
    for i, t in enumerate(prefix):
        if not 0 <= t < vocab.size:
            raise CliError(f"prefix token {t} is outside the vocabulary (0..{vocab.size - 1})")
        if not matcher.consume(t):
            done = b"".join(tb[x] or b"" for x in prefix[:i])
            raise CliError(f"the constraint does not allow token {t} {_show(tb[t])} after {done!r} (prefix token {i})")
    start = time.perf_counter()
    allowed = matcher.allowed_tokens()
    mask_s = time.perf_counter() - start
    allowed_set = set(int(t) for t in allowed)
    eos_allowed = [t for t in eos if t in allowed_set]
    if args.output_format == "json":
        print(json.dumps({"vocabulary": source, "vocab_size": int(vocab.size), "prefix_tokens": prefix,
                          "compile_ms": round(compile_s * 1e3, 3), "mask_ms": round(mask_s * 1e3, 3),
                          "allowed": [int(t) for t in allowed], "eos_allowed": bool(eos_allowed),
                          "accepting": bool(matcher.is_accepting())}))
        return 0
    print(f"vocabulary: {vocab.size} tokens ({source}); EOS: " + ", ".join(f"{t} {_show(tb[t])}" for t in eos))
    print(f"constraint: {spec.describe()}  (compiled in {compile_s * 1e3:.1f} ms)")
    if prefix:
        text = b"".join(tb[t] or b"" for t in prefix)
        print(f"prefix: {text!r} = {len(prefix)} tokens {prefix}" + (f" (tokenized by {how})" if how else ""))
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
