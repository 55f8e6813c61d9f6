"""The seeds' experiments on the real Gemma 3 270M on CPU (issue 21 item 4), written to
``benchmarks/EXPERIMENTS.md`` with plots under ``benchmarks/experiments/``.

One function per experiment; each saves its raw results as JSON in ``benchmarks/experiments/``
so the report and plots regenerate without a model (``--report-only``). ``--quick`` is a
smoke-sized run (fewer prompts / pairs). Run with ``make experiments``.

- ``formats``: seed 000 Table 3 (App. D's style): multiple-choice questions whose answer must
  be the JSON object ``{"Final Answer": "X"}``; conformance rate of greedy output without and
  with the constraint.
- ``answer_pairs``: seed 004's William/Theodore question and three more pairs with a shared
  prefix. The answer's end is scored as the answer followed by a newline (``" William\\n"``):
  every value below sums the probability of every token sequence spelling the answer and
  then ``"\\n"`` (no EOS: a base-style ``Answer:`` continuation goes on to a new line).
  ``unconstrained`` is the model's own marginal (every tokenization),
  ``constrained`` the probability that the constrained sampler (temperature 1) ends in the
  answer, computed exactly by enumerating the constrained tree, and ``canonical`` the same
  with ``canonical=True`` (only the tokenizer's own tokenizations).
- ``budgets``: token budgets (issue 21 items 3-4): on 50 MaskBench schemas, the share of greedy
  outputs capped at ``max_tokens`` in 16, 32, 64 that are JSON (and valid), with plain masks
  and with budget masks (``fill_bitmask(max_tokens=)``).

Helpers with logic (:func:`final_answer`, :func:`ratio`, :func:`questions`, :func:`parses`,
:func:`budget_table`) are pure and tested in
tests/unit/test_experiments_helpers.py.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "experiments"
REPORT = HERE / "EXPERIMENTS.md"

ANSWER_RE = r'\{"Final Answer": "[ABCD]"\}'
FORMAT_PROMPT = ("You will be given a multiple choice question with options A, B, C, D. "
                 "Format your answer with the following JSON format which uses double quotes, and nothing else:\n"
                 '{"Final Answer": "X"}\n'
                 "where X is the correct answer choice.\n\n")

# how the answer's end is scored: "" = the answer is the whole output and its end is not scored
# (seed 004's "token sequences leading to the answer"; under the constraint EOS is then forced),
# "\n" = the answer followed by a newline, scored (the constrained sampler is forced through it)
ENDINGS = ("", "\n")

PAIRS = [  # (question, answer 1, answer 2); answer 1 is the true one
    ("What is the first name of the US president who was a member of the Sigma Alpha Epsilon fraternity?",
     " William", " Theodore"),
    ("What is the first name of the US president who wrote the Declaration of Independence?",
     " Thomas", " Theodore"),
    ("Which planet is known as the Red Planet?", " Mars", " Mercury"),
    ("What is the capital of France?", " Paris", " Parma"),
]


# ------------------------------------------------------------------------------ helpers

def final_answer(text: str) -> str | None:
    """The answer letter if ``text`` is the required answer, else None: after surrounding
    whitespace and an optional Markdown code fence (```json ... ```) are removed, a JSON object
    with exactly the key ``"Final Answer"`` whose value is one of A, B, C, D."""
    body = text.strip()
    if body.startswith("```"):
        first = body.find("\n")
        if first < 0 or len(body) < first + 4 or not body.endswith("```"):
            return None
        body = body[first + 1: -3].strip()
    try:
        value = json.loads(body)
    except ValueError:
        return None
    if isinstance(value, dict) and set(value) == {"Final Answer"} and value["Final Answer"] in ("A", "B", "C", "D"):
        return value["Final Answer"]
    return None


def ratio(log_a: float, log_b: float) -> float:
    """``P(a) / (P(a) + P(b))`` from two log-probabilities (``-inf`` allowed, not both)."""
    top = max(log_a, log_b)
    if top == -math.inf:
        return math.nan
    a, b = math.exp(log_a - top), math.exp(log_b - top)
    return a / (a + b)


def questions(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` arithmetic multiple-choice questions ``(text, answer letter)``, fixed by ``seed``."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.randint(2, 40), rng.randint(2, 40)
        op = rng.choice("+-*")
        right = a + b if op == "+" else a - b if op == "-" else a * b
        options = {right}
        while len(options) < 4:
            options.add(right + rng.choice([-1, 1]) * rng.randint(1, 12))
        options = sorted(options)
        rng.shuffle(options)
        letters = "ABCD"
        text = f"Question: What is {a} {op} {b}?\n" + "".join(f"{letters[i]}. {v}\n" for i, v in enumerate(options))
        out.append((text, letters[options.index(right)]))
    return out


def _logsumexp(values: list[float]) -> float:
    top = max(values, default=-math.inf)
    if top == -math.inf:
        return -math.inf
    return top + math.log(sum(math.exp(v - top) for v in values))


# ------------------------------------------------------------------------------ model

def load_pipeline(threads: int = 2):
    sys.path.insert(0, str(HERE.parent / "tests"))
    from real_tokenizers import gemma3_model_path  # noqa: E402  (the repository's model locator)

    import llama_cpp

    from tokamata.generate import Pipeline

    llm = llama_cpp.Llama(str(gemma3_model_path()), logits_all=True, n_ctx=1024, n_threads=threads,
                           verbose=False)
    return Pipeline(llm, batch_size=16)


# ------------------------------------------------------------------------------ experiments

def exp_formats(pipe, quick: bool) -> dict:
    """Seed 000 Table 3: conformance of greedy answers, unconstrained vs constrained."""
    import tokamata

    n = 10 if quick else 50
    constraint = tokamata.compile_regex(ANSWER_RE, pipe.vocab)
    partial = OUT / "formats.partial.json"  # rows so far: an interrupted run resumes
    rows = json.loads(partial.read_text())["rows"] if partial.exists() else []
    start = time.perf_counter()
    for text, answer in questions(n)[len(rows):]:
        # the GGUF carries no chat template: Gemma's turn markup written out (special tokens)
        messages = f"<start_of_turn>user\n{FORMAT_PROMPT}{text}<end_of_turn>\n<start_of_turn>model\n"
        row = {"answer": answer}
        for name, c in (("unconstrained", None), ("constrained", constraint)):
            out = pipe.generate(messages, c, max_new_tokens=24)
            got = final_answer(out.text)
            row[name] = {"text": out.text, "conforms": got is not None, "correct": got == answer}
        rows.append(row)
        partial.write_text(json.dumps({"rows": rows}))
        print(f"  formats {len(rows)}/{n}", file=sys.stderr, flush=True)
    partial.unlink()
    return {"n": len(rows), "max_new_tokens": 24, "regex": ANSWER_RE, "seconds": time.perf_counter() - start, "rows": rows}


def _walk(pipe, prompt_ids: list[int], matcher, answers: tuple[str, str], prune: float) -> dict:
    """Depth-first walk of the constrained tree of ``( a| b)\\n`` after ``prompt_ids``: for each
    answer, the log of the summed unconstrained (``p``, the model's own) and constrained
    (``q``, renormalized over the allowed tokens at each step) probabilities of the complete
    sequences spelling it. A subtree whose ``p`` and ``q`` are both below ``prune`` is not
    expanded; their summed ``p`` and ``q`` are returned as ``pruned_p`` / ``pruned_q`` (bounds
    on the error of every sum)."""
    import numpy as np

    eos = set(int(t) for t in pipe.vocab.eos_token_ids)
    sums = {a: {"p": [], "q": [], "n": 0} for a in answers}
    pruned = {"p": 0.0, "q": 0.0, "subtrees": 0}
    path: list[int] = []
    nodes = 0

    def visit(lp: float, lq: float) -> None:
        nonlocal nodes
        allowed = [int(t) for t in matcher.allowed_tokens().tolist() if int(t) not in eos]
        if matcher.is_accepting():
            text = b"".join(pipe.vocab.token_bytes[t] for t in path).decode("utf-8")
            key = answers[0] if text.startswith(answers[0]) else answers[1]
            sums[key]["p"].append(lp)
            sums[key]["q"].append(lq)
            sums[key]["n"] += 1
            if not allowed:
                return
        if not allowed:
            return
        nodes += 1
        ids = prompt_ids + path
        row = pipe.backend.logits(ids, len(ids))[0].astype(np.float64)
        top = row.max()
        log_z = top + math.log(np.exp(row - top).sum())
        sub = row[allowed]
        log_zc = top + math.log(np.exp(sub - top).sum())
        for t, x in zip(allowed, sub.tolist()):
            cp, cq = lp + x - log_z, lq + x - log_zc
            if cp < math.log(prune) and cq < math.log(prune):
                pruned["p"] += math.exp(cp)
                pruned["q"] += math.exp(cq)
                pruned["subtrees"] += 1
                continue
            if not matcher.consume(t):
                raise AssertionError("an allowed token was refused")
            path.append(t)
            visit(cp, cq)
            path.pop()
            matcher.rollback(1)

    visit(0.0, 0.0)
    out = {a: {"sequences": v["n"], "log_unconstrained": float(_logsumexp(v["p"])), "log_constrained": float(_logsumexp(v["q"]))}
           for a, v in sums.items()}
    out["pruned"] = pruned
    out["model_calls"] = nodes
    return out


def _pair_values(pipe, prompt: str, a: str, b: str, canonical: bool, prune: float, end: str) -> dict:
    """For one pair, :func:`_walk` over the constrained tree of ``( a| b)\\n``, every
    tokenization (``canonical=False``) or only the tokenizer's own encodings of the two
    answers (``canonical=True``: tokamata's canonical masks on Gemma's SentencePiece BPE)."""
    import re

    import tokamata

    c = tokamata.compile_regex(f"({re.escape(a)}|{re.escape(b)}){re.escape(end)}", pipe.vocab,
                               canonical=canonical)
    prompt_ids = pipe.backend.encode(prompt)
    return _walk(pipe, prompt_ids, c.matcher(), (a, b), prune)


def exp_answer_pairs(pipe, quick: bool) -> dict:
    """Seed 004: P(a) / (P(a) + P(b)) unconstrained, constrained, constrained canonical."""
    prune = 1e-6
    rows = []
    for (question, a, b), ending in itertools.product(PAIRS[:2] if quick else PAIRS, ENDINGS):
        prompt = f"Question: {question}\nAnswer:"
        start = time.perf_counter()
        free = _pair_values(pipe, prompt, a, b, False, prune, ending)
        mid = time.perf_counter()
        canon = _pair_values(pipe, prompt, a, b, True, prune, ending)
        end = time.perf_counter()
        row = {"question": question, "a": a, "b": b, "end": ending, "tree": free, "canonical_tree": canon,
               "unconstrained": ratio(free[a]["log_unconstrained"], free[b]["log_unconstrained"]),
               "constrained": ratio(free[a]["log_constrained"], free[b]["log_constrained"]),
               "canonical": ratio(canon[a]["log_constrained"], canon[b]["log_constrained"]),
               "unconstrained_canonical_only": ratio(canon[a]["log_unconstrained"], canon[b]["log_unconstrained"]),
               "seconds_tree": mid - start, "seconds_canonical": end - mid}
        rows.append(row)
        print(f"  pair {a!r}/{b!r} end {ending!r}: unc {row['unconstrained']:.5f} con {row['constrained']:.5f} "
              f"canon {row['canonical']:.5f} ({mid - start:.1f} s + {end - mid:.1f} s)", file=sys.stderr, flush=True)
    return {"prune": prune, "rows": rows}


BUDGETS = (16, 32, 64)
BUDGET_PROMPT = ("<start_of_turn>user\nReply with one JSON value that follows this JSON Schema, and nothing else.\n"
                 "{schema}<end_of_turn>\n<start_of_turn>model\n")


def parses(text: str, schema) -> tuple[bool, bool]:
    """(the text is one JSON value, that value is valid under ``schema``)."""
    try:
        value = json.loads(text)
    except ValueError:
        return False, False
    import jsonschema

    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError:
        return True, False
    except jsonschema.SchemaError:  # (a MaskBench schema jsonschema cannot check: parse only)
        return True, True
    return True, True


def budget_schemas(vocab, n: int, max_chars: int = 800, seed: int = 0) -> list[dict]:
    """``n`` MaskBench schemas, in a seeded shuffle of every file's records, kept when the schema
    text is at most ``max_chars`` characters (the prompt fits Gemma's 1,024-token context),
    compiles, and some output fits the largest budget (``budget_needed() <= max(BUDGETS)``,
    EOS included)."""
    sys.path.insert(0, str(HERE))
    from schema_workload import files_available, load_cases  # noqa: E402

    import tokamata

    cases, _ = load_cases(files_available(), 1.0, 0, None)
    random.Random(seed).shuffle(cases)
    chosen = []
    for case in cases:
        if len(chosen) == n:
            break
        if len(case.schema_text) > max_chars:
            continue
        try:
            c = tokamata.compile_json_schema(case.schema, vocab)
            needed = c.matcher().budget_needed()
        except tokamata.TokamataError:
            continue
        if needed > max(BUDGETS):
            continue
        chosen.append({"id": case.id, "file": case.file, "schema": case.schema, "needed": needed,
                       "constraint": c})
    return chosen


def exp_budgets(pipe, quick: bool) -> dict:
    """Issue 21 item 4: share of outputs that are JSON (and valid under the schema) when
    generation is capped at ``max_tokens`` in BUDGETS, with plain masks (``budget=False``) and
    with budget masks (``budget=True``), greedy, through
    ``tokamata.integrations.llama_cpp.generate``. Greedy decoding is deterministic, so the plain
    run capped at n is the first n tokens of the plain run capped at max(BUDGETS): that one run
    gives the plain column at every cap."""
    from tokamata.integrations import llama_cpp as integration

    llm = pipe.backend.llm
    n = 5 if quick else 50
    schemas = budget_schemas(pipe.vocab, n)
    partial = OUT / "budgets.partial.json"
    rows = json.loads(partial.read_text())["rows"] if partial.exists() else []
    start = time.perf_counter()
    for item in schemas[len(rows):]:
        prompt = BUDGET_PROMPT.format(schema=json.dumps(item["schema"], ensure_ascii=False))
        row = {"id": item["id"], "file": item["file"], "needed": item["needed"], "runs": {}}
        token_bytes = item["constraint"].vocab.token_bytes
        t0 = time.perf_counter()
        plain = integration.generate(llm, item["constraint"], prompt, max_tokens=max(BUDGETS), budget=False)
        row["plain_seconds"] = time.perf_counter() - t0
        for cap in BUDGETS:
            text = b"".join(token_bytes[t] or b"" for t in plain.token_ids[:cap]).decode("utf-8", errors="replace")
            is_json, valid = parses(text, item["schema"])
            row["runs"][f"{cap}/plain"] = {"text": text, "tokens": min(cap, len(plain.token_ids)), "json": is_json,
                                           "valid": valid}
        for cap in BUDGETS:
            t0 = time.perf_counter()
            try:
                out = integration.generate(llm, item["constraint"], prompt, max_tokens=cap, budget=True)
            except tokamata_errors() as exc:  # (a cap below what any output needs: InvalidArgument)
                row["runs"][f"{cap}/budget"] = {"error": f"{type(exc).__name__}: {exc}"[:200], "json": False,
                                                "valid": False}
                continue
            is_json, valid = parses(out.text, item["schema"])
            row["runs"][f"{cap}/budget"] = {"text": out.text, "tokens": len(out.token_ids), "finished": out.finished,
                                            "json": is_json, "valid": valid, "seconds": time.perf_counter() - t0}
        rows.append(row)
        partial.write_text(json.dumps({"rows": rows, "n": len(schemas)}))
        print(f"  budgets {len(rows)}/{len(schemas)} ({item['id']}, needs {item['needed']}): " + " ".join(
            f"{k}={'V' if v['valid'] else 'J' if v['json'] else '-'}" for k, v in row["runs"].items()),
            file=sys.stderr, flush=True)
    partial.unlink()
    return {"n": len(rows), "budgets": list(BUDGETS), "prompt": BUDGET_PROMPT, "seconds": time.perf_counter() - start,
            "rows": rows}


def tokamata_errors():
    import tokamata

    return tokamata.TokamataError


EXPERIMENTS = {"formats": exp_formats, "answer_pairs": exp_answer_pairs, "budgets": exp_budgets}


# ------------------------------------------------------------------------------ report

def _plot_pairs(data: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["rows"]
    fig, ax = plt.subplots(figsize=(9, 3.8))
    width = 0.27
    for i, (key, label) in enumerate((("unconstrained", "unconstrained (all tokenizations)"),
                                      ("constrained", "constrained, non-canonical"),
                                      ("canonical", "constrained, canonical"))):
        ax.bar([j + (i - 1) * width for j in range(len(rows))], [r[key] for r in rows], width, label=label)
    ax.set_xticks(range(len(rows)), [f"{r['a'].strip()}/{r['b'].strip()}" + ("\n+newline" if r.get("end") else "")
                                     for r in rows], fontsize=7)
    ax.set_ylabel("P(a) / (P(a) + P(b))")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7)
    ax.set_title("Gemma 3 270M: answer ratio under constraints")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_formats(data: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["rows"]
    rates = [sum(r[k]["conforms"] for r in rows) / len(rows) for k in ("unconstrained", "constrained")]
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.bar(["unconstrained", "constrained"], rates, color=["tab:gray", "tab:blue"])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("conformance rate")
    ax.set_title(f"Gemma 3 270M, {len(rows)} prompts, greedy")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report() -> str:
    lines = ["# Experiments (issue 21 item 4)", "",
             "Generated by `benchmarks/experiments.py` (`make experiments`) from the JSON files in",
             "`benchmarks/experiments/`; model: Gemma 3 270M (Q4_K_M GGUF) through llama-cpp-python",
             "(`logits_all=True`), CPU, 2 threads, on a shared loaded machine (timings indicative only).", ""]
    fpath = OUT / "formats.json"
    if fpath.exists():
        data = json.loads(fpath.read_text())
        rows = data["rows"]
        _plot_formats(data, OUT / "formats.png")
        unc = sum(r["unconstrained"]["conforms"] for r in rows)
        con = sum(r["constrained"]["conforms"] for r in rows)
        acc_u = sum(bool(r["unconstrained"]["correct"]) for r in rows)
        acc_c = sum(bool(r["constrained"]["correct"]) for r in rows)
        lines += ["## 1. Format conformance (seed 000 Table 3, App. D style)", "",
                  f"{data['n']} arithmetic multiple-choice questions in Gemma's turn markup (written out: the GGUF "
                  f"has no chat template), greedy, "
                  f"max_new_tokens={data['max_new_tokens']}; required answer `{{\"Final Answer\": \"X\"}}` "
                  f"(a surrounding Markdown code fence is accepted unconstrained); constraint: regex "
                  f"`{data['regex']}`.", "",
                  "| decoding | conforming | rate | correct answer |", "|---|---|---|---|",
                  f"| unconstrained | {unc}/{len(rows)} | {unc / len(rows):.2f} | {acc_u}/{len(rows)} |",
                  f"| constrained | {con}/{len(rows)} | {con / len(rows):.2f} | {acc_c}/{len(rows)} |", "",
                  "Constrained answer letters: " + ", ".join(
                      f"{x} {sum(final_answer(r['constrained']['text']) == x for r in rows)}" for x in "ABCD")
                  + f" (true letters: " + ", ".join(f"{x} {sum(r['answer'] == x for r in rows)}" for x in "ABCD")
                  + "). The 270M model, unconstrained, echoes the instruction instead of answering.", "",
                  f"Run time {data['seconds']:.0f} s. First unconstrained outputs: "
                  + "; ".join(f"`{r['unconstrained']['text'][:60]!r}`" for r in rows[:3]), "",
                  "![formats](experiments/formats.png)", ""]
    ppath = OUT / "answer_pairs.json"
    if ppath.exists():
        data = json.loads(ppath.read_text())
        _plot_pairs(data, OUT / "answer_pairs.png")
        lines += ["## 2. Answer ratio under constraints (seed 004, William/Theodore)", "",
                  "Prompt `Question: ...\\nAnswer:` (raw, no chat template); constraint "
                  "`( a| b)` + end. Two ways to score the answer's end (column *end*): `''` = the answer is "
                  "the whole output and its end is not scored (seed 004's sum over the token sequences "
                  "leading to the answer; under the constraint, EOS is then forced), `'\\n'` = the answer "
                  "followed by a newline, scored (so every value sums the sequences spelling `\" a\\n\"`; the "
                  "constrained sampler is forced through the newline, the model is not). "
                  "*unconstrained*: the model's own probability of those sequences (every "
                  "tokenization, byte-fallback tokens included); *constrained*: the exact probability "
                  "that the constrained sampler at temperature 1 produces the answer (enumerating the "
                  "constrained tree); *canonical*: the same restricted to the tokenizer's own encodings. "
                  "The canonical tree is the one tokamata's `canonical=True` masks allow on Gemma's "
                  "SentencePiece BPE (renormalized over the canonical mask at each step); on all 8 rows it is, "
                  "node for node, the trie of llama.cpp's encodings of the two answers that earlier runs used "
                  "to emulate it (checked without the model), and the first row re-run with the masks gives "
                  "the same 0.23077. "
                  f"Subtrees whose p and q are both below {data.get('prune', 0):g} are not expanded; "
                  "their summed q is the *pruned q mass* column (a bound on each value's error).", "",
                  "| a / b | end | unconstrained | constrained | canonical | abs(canonical - unconstrained) "
                  "| sequences (tree, a+b) | model calls | pruned q mass | seconds (tree / canonical) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in data["rows"]:
            seqs = r["tree"][r["a"]]["sequences"] + r["tree"][r["b"]]["sequences"]
            lines.append(f"| `{r['a']}` / `{r['b']}` | `{r.get('end', chr(10))!r}` | {r['unconstrained']:.5f} | "
                         f"{r['constrained']:.5f} | "
                         f"{r['canonical']:.5f} | {abs(r['canonical'] - r['unconstrained']):.5f} | {seqs} | "
                         f"{r['tree']['model_calls']} | {r['tree']['pruned']['q']:.1e} | "
                         f"{r['seconds_tree']:.0f} / {r['seconds_canonical']:.0f} |")
        for ending in sorted({r.get("end", "\n") for r in data["rows"]}):
            sel = [r for r in data["rows"] if r.get("end", "\n") == ending]
            worst_c = max(abs(r["canonical"] - r["unconstrained"]) for r in sel)
            worst_n = max(abs(r["constrained"] - r["unconstrained"]) for r in sel)
            lines.append(f"- end `{ending!r}`: largest distance to unconstrained: canonical {worst_c:.4f} "
                         f"(target 0.01: {'met' if worst_c <= 0.01 else 'MISSED'}), non-canonical {worst_n:.4f}.")
        lines += ["", "With the end scored (`'\\n'`), the model's probability of the newline after each answer "
                  "enters the unconstrained value but not the constrained ones (the constraint forces it), so "
                  "the gap there measures the end-scoring choice, not tokenization.", "",
                  "![answer pairs](experiments/answer_pairs.png)", ""]
    skip = OUT / "skip_rate.json"
    if skip.exists():
        data = json.loads(skip.read_text())
        lines += ["## 3. Skip rate on the Pokedex template (seed 003 Table 2)", "",
                  "`python benchmarks/skip_rate.py` (no model): the steps of the tokenizer's own encoding of "
                  f"{data['rows'][0]['instances']} filled-in instances of App. C's template (seed {data['seed']}); "
                  "a step is skippable when `matcher.forced_tokens()` is not empty (one allowed token). "
                  "See the script's docstring for how the OCR'd template is read. Seed 003 reports 24.5% "
                  "without and 77.9% with canonicality (Llama 2 7B).", "",
                  "| tokenizer | canonical | steps | skippable | skip rate | seconds |", "|---|---|---|---|---|---|"]
        for r in data["rows"]:
            lines.append(f"| {r['tokenizer']} | {r['canonical']} | {r['steps']} | {r['skippable']} | "
                         f"{r['skip_rate']:.1%} | {r['seconds']:.0f} |")
        lines.append("")
    written = OUT / "skip_rate_model.json"
    if written.exists():
        data = json.loads(written.read_text())
        lines += ["With instances written by a model, as in seed 003 (`python benchmarks/skip_rate.py --model`: "
                  f"Gemma 3 270M fills the template under the constraint, {data['rows'][0]['instances']} "
                  "instances sampled at temperature 0.8, one seed each; then the same count along each "
                  "tokenizer's own encoding of the texts). Two of them:", ""]
        lines += [f"    {t}" for t in data.get("texts", [])[:2]]
        lines += ["", "| tokenizer | canonical | steps | skippable | skip rate | seconds |", "|---|---|---|---|---|---|"]
        for r in data["rows"]:
            lines.append(f"| {r['tokenizer']} | {r['canonical']} | {r['steps']} | {r['skippable']} | "
                         f"{r['skip_rate']:.1%} | {r['seconds']:.0f} |")
        lines.append("")
    lines += budget_section()
    text = "\n".join(lines)
    REPORT.write_text(text)
    return text


def budget_table(rows: list[dict], budgets: list[int]) -> list[str]:
    """The token-budget table: per cap, outputs that are JSON / valid, plain vs budget."""
    n = len(rows)
    lines = ["| max_tokens | plain: JSON | plain: valid | budget: JSON | budget: valid | budget: no output fits |",
             "|---|---|---|---|---|---|"]
    for cap in budgets:
        plain = [r["runs"][f"{cap}/plain"] for r in rows]
        budget = [r["runs"][f"{cap}/budget"] for r in rows]
        refused = sum("error" in b for b in budget)
        lines.append(f"| {cap} | {sum(x['json'] for x in plain)}/{n} ({sum(x['json'] for x in plain) / n:.2f}) | "
                     f"{sum(x['valid'] for x in plain)}/{n} | "
                     f"{sum(x['json'] for x in budget)}/{n} ({sum(x['json'] for x in budget) / n:.2f}) | "
                     f"{sum(x['valid'] for x in budget)}/{n} | {refused} |")
    return lines


def budget_section() -> list[str]:
    path, partial = OUT / "budgets.json", OUT / "budgets.partial.json"
    if not path.exists() and not partial.exists():
        return ["## 4. Token budgets: not run yet (`python benchmarks/experiments.py --only budgets`)", ""]
    data = json.loads((path if path.exists() else partial).read_text())
    rows, budgets = data["rows"], data.get("budgets", list(BUDGETS))
    if not rows:
        return ["## 4. Token budgets: no schema finished yet", ""]
    needed = sorted(r["needed"] for r in rows)
    head = (f"**Partial run: {len(rows)} of {data.get('n', 50)} schemas** (`budgets.partial.json`; the run resumes "
            f"where it stopped). " if not path.exists() else "")
    return ["## 4. Token budgets (issue 21 items 3-4)", "",
            head + f"{len(rows)} MaskBench schemas (a seeded shuffle of every file; kept when the schema text is at "
            "most 800 characters, it compiles, and some output fits 64 tokens), prompt "
            "`Reply with one JSON value that follows this JSON Schema, and nothing else.` + the schema in Gemma's "
            "turn markup, greedy, `tokamata.integrations.llama_cpp.generate(..., max_tokens=n, budget=...)`. "
            "*plain*: the constraint's masks only (the output is cut at n tokens; greedy, so the plain column "
            "at every n is read from one run capped at 64); *budget*: `fill_bitmask(max_tokens=)` masks, which "
            "allow only tokens after which a complete output still fits. *JSON*: `json.loads` accepts the "
            "output; *valid*: and `jsonschema` validates it. *no output fits*: the schema's shortest output "
            "needs more than n tokens, and `generate` raises `InvalidArgument` before decoding. "
            f"Fewest tokens an output needs (`budget_needed()`, EOS included): median {needed[len(needed) // 2]}, "
            f"max {needed[-1]}.", "", *budget_table(rows, budgets), "",
            budget_summary(rows, budgets) + " Raw outputs: `experiments/budgets.json`.", ""]


def budget_summary(rows: list[dict], budgets: list[int]) -> str:
    """One sentence: how many budget-masked outputs that ran are schema-valid."""
    ran = [r["runs"][f"{cap}/budget"] for r in rows for cap in budgets if "error" not in r["runs"][f"{cap}/budget"]]
    valid = sum(x["valid"] for x in ran)
    plain = [r["runs"][f"{cap}/plain"] for r in rows for cap in budgets]
    return (f"Wherever some output fits the cap, the budget-masked output is schema-valid JSON in {valid} of "
            f"{len(ran)} runs; plain masks give valid JSON in {sum(x['valid'] for x in plain)} of {len(plain)}.")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke-sized runs")
    parser.add_argument("--only", choices=sorted(EXPERIMENTS), action="append", help="run only these")
    parser.add_argument("--report-only", action="store_true", help="rewrite the report from saved JSON")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads (1 on a crowded machine)")
    args = parser.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    if not args.report_only:
        pipe = load_pipeline(args.threads)
        for name in args.only or list(EXPERIMENTS):
            print(f"experiment {name}", file=sys.stderr, flush=True)
            data = EXPERIMENTS[name](pipe, args.quick)
            data["quick"] = args.quick
            (OUT / f"{name}.json").write_text(json.dumps(data, indent=1))
    print(write_report())


if __name__ == "__main__":
    main()
