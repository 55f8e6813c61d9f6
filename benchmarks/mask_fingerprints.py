"""Fingerprints of the grammar and masks tokamata builds for MaskBench schemas: two builds agree.

Usage: ``python benchmarks/mask_fingerprints.py --out PATH [--fraction 0.03] [--seed 0]`` with
one build's interpreter, again with the other's, then ``python benchmarks/mask_fingerprints.py
--compare A B``. A change to the JSON Schema front end that should not change what any schema
allows (a faster lowering, a memo) must leave every fingerprint as it was.

For every schema of the sample (``schema_workload.load_cases``, Llama 3, compact whitespace,
schema property order, ``--spelling``, as bench_json_schema.py compiles it) it records: the error class when
the compile fails; else a hash of the grammar (terminals by their expressions' descriptions,
nonterminal names, rules) and a hash of every mask along each test instance (valid and
invalid: the walk stops at the first token refused), with the positions' accept flags. Equal
grammar hashes imply equal masks; the mask hashes are the check that matters when a change
builds a different but equivalent grammar.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def fingerprints(fraction: float, seed: int, spelling: str) -> dict[str, dict]:
    import numpy as np

    import tokamata
    from schema_workload import files_available, load_cases, tokenize
    from tokamata.automata import derivatives as d
    from tokamata.syntax.json_schema import schema_to_grammar
    from workload import llama3_tokenizer_path

    path = llama3_tokenizer_path()
    vocab = tokamata.Vocabulary.from_tokenizer_json(path, eos_token_ids=[128009])
    cases, _ = load_cases(files_available(), fraction, 15, None, seed=seed)
    tokenize(path, cases)
    buf = np.zeros((1, (vocab.size + 31) // 32), dtype=np.int32)
    out = {}
    for case in cases:
        key = case.file + "/" + case.id
        try:
            grammar, _ = schema_to_grammar(case.schema_text, None, whitespace="compact", property_order="schema",
                                           spelling=spelling)
            constraint = tokamata.compile_json_schema(case.schema_text, vocab, whitespace="compact",
                                                      property_order="schema", spelling=spelling)
        except tokamata.TokamataError as e:
            out[key] = {"error": type(e).__name__}
            continue
        g = hashlib.sha256()
        numbers: dict[int, int] = {}  # expression id -> its number in this grammar's serialization
        for t in grammar.terminals:
            g.update(repr((t.name, None if t.expr is None else _serialize(t.expr, numbers, g, d.Expr),
                           t.token_ids)).encode())
        g.update(repr((grammar.nonterminals, [(r.lhs, r.rhs) for r in grammar.rules], grammar.start,
                       grammar.ignore)).encode())
        m = hashlib.sha256()
        try:
            for test in case.tests:
                matcher = constraint.matcher()
                for token in test.tokens + [None]:
                    matcher.fill_bitmask(buf, 0)
                    m.update(buf.tobytes())
                    m.update(b"A" if matcher.is_accepting() else b"-")
                    if token is None or not matcher.consume(token):
                        break
        except tokamata.TokamataError as e:
            m.update(type(e).__name__.encode())
        out[key] = {"grammar": g.hexdigest()[:16], "masks": m.hexdigest()[:16]}
    return out


def _serialize(expr, numbers: dict, sink, expr_type) -> int:
    """The number of ``expr`` in a structural serialization written to ``sink`` (each node
    once, children first: equal numbers across builds mean equal expressions)."""
    def arg(a):
        if isinstance(a, expr_type):
            return ("e", _serialize(a, numbers, sink, expr_type))
        if isinstance(a, tuple):
            return tuple(arg(x) for x in a)
        return a
    found = numbers.get(expr.id)
    if found is None:
        stack = [expr]  # (iterative over children: concatenation chains are long)
        while stack:
            top = stack[-1]
            pending = [a for a in _children(top.args, expr_type) if a.id not in numbers]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            if top.id not in numbers:
                numbers[top.id] = len(numbers)
                sink.update(repr((numbers[top.id], top.kind, arg(top.args))).encode())
        found = numbers[expr.id]
    return found


def _children(args, expr_type):
    for a in args:
        if isinstance(a, expr_type):
            yield a
        elif isinstance(a, tuple):
            yield from _children(a, expr_type)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--fraction", type=float, default=0.03)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--spelling", default="any", help='"any" (default, as bench_json_schema.py) or "natural"')
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"))
    args = ap.parse_args()
    if args.compare:
        a, b = (json.load(open(p)) for p in args.compare)
        differ = sorted(k for k in a.keys() | b.keys() if a.get(k, {}).get("masks") != b.get(k, {}).get("masks")
                        or a.get(k, {}).get("error") != b.get(k, {}).get("error"))
        grammars = sum(1 for k in a.keys() & b.keys() if a[k].get("grammar") != b[k].get("grammar"))
        print(f"{len(a.keys() & b.keys())} schemas in both; masks or errors differ on {len(differ)}; "
              f"grammars differ on {grammars}")
        for k in differ[:20]:
            print(f"  {k}: {a.get(k)} vs {b.get(k)}")
        sys.exit(1 if differ else 0)
    result = fingerprints(args.fraction, args.seed, args.spelling)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=0, sort_keys=True)
    print(f"{len(result)} schemas, {sum('error' in v for v in result.values())} compile errors -> {args.out}")


if __name__ == "__main__":
    main()
