"""The grammar benchmark's workload: the grammars, their sources per engine, their instances.

Holds ``GrammarCase`` (one grammar: its Lark text, its xgrammar EBNF, its instances),
``load_cases`` (builds the cases the command line asked for) and ``TRIVIAL`` (the warm-up
grammar). The tokenizer is the one of ``workload.py`` (Llama 3, ``TokenizerData``).

Sources, one per grammar and engine (benchmarks/README.md, "Grammar benchmark"):

* json: tokamata ``compile_json(vocab)``; llguidance the Lark grammar ``start: %json {}``
  (any JSON value); xgrammar ``GrammarCompiler.compile_builtin_json_grammar()``.
  Instances: valid instances of JSONSchemaBench (../shared/data/jsonschemabench/maskbench),
  serialized compactly.
* arithmetic, c_like: the Lark text (``tests/data/grammars/NAME.lark`` when present, otherwise
  the provisional copy ``benchmarks/grammars/NAME.lark``) for tokamata and llguidance, and its
  hand conversion ``benchmarks/grammars/NAME.ebnf`` (same language) for xgrammar.
  Instances: ``benchmarks/grammars/NAME_instances.txt``.

Invariants

* Every instance of a Lark grammar parses with ``lark`` (Earley, ``lexer="dynamic_complete"``,
  tokamata's semantics); ``load_cases`` checks this and raises otherwise.
* Every JSON instance is an object or an array (xgrammar's builtin JSON grammar accepts nothing
  else), has no NaN/Infinity, and is serialized with ``json.dumps(separators=(",", ":"),
  ensure_ascii=False)``: no whitespace, which every engine's JSON language accepts.
* Instances are tokenized once, canonically (``tokenizers.Tokenizer.encode``, no special tokens).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GRAMMARS_DIR = os.path.join(HERE, "grammars")
TEST_GRAMMARS_DIR = os.path.join(ROOT, "tests", "data", "grammars")
JSONSCHEMABENCH_DIR = os.path.join(ROOT, "..", "shared", "data", "jsonschemabench", "maskbench")

#: llguidance's "any JSON value" (its Lark extension: a JSON Schema after %json)
LLGUIDANCE_ANY_JSON = "start: %json {}"

#: JSONSchemaBench splits, in the order of its SOURCE.md table; instances are taken round-robin
JSON_SPLITS = (
    "Github_trivial", "Github_easy", "Github_medium", "Github_hard", "Github_ultra", "Glaiveai2K",
    "JsonSchemaStore", "Kubernetes", "Snowplow", "WashingtonPost", "Handwritten", "Synthesized",
    "MCPspec", "BFCL", "JME",
)

#: Lark grammars: tests/data/grammars/NAME.lark or benchmarks/grammars/NAME.lark, instances in
#: benchmarks/grammars/NAME_instances.txt; an xgrammar conversion NAME.ebnf where one exists
LARK_GRAMMARS = ("arithmetic", "c_like", "sql", "tool_call", "python_like", "sexp")
#: GBNF grammars (benchmarks/grammars/NAME.gbnf), of the kinds of llama.cpp's examples, written
#: for this benchmark; tokamata compile_gbnf, llguidance its GBNF converter, xgrammar as is
GBNF_GRAMMARS = ("gbnf_json", "gbnf_arithmetic", "gbnf_chess", "gbnf_list")
#: GBNF grammars whose instances end with a newline (read_instances strips it)
NEWLINE_TERMINATED = ("gbnf_arithmetic", "gbnf_list")

GRAMMAR_NAMES = ("json",) + LARK_GRAMMARS + GBNF_GRAMMARS


@dataclass
class GrammarCase:
    name: str
    kind: str  # "json" (each engine's own generic JSON), "lark" (lark text + EBNF conversion) or "gbnf"
    lark: str  # Lark text for tokamata and llguidance (for json: LLGUIDANCE_ANY_JSON)
    ebnf: str | None  # xgrammar EBNF (GBNF style, root rule "root"); None for json (builtin)
    instances: list[str]
    sources: dict[str, str]  # engine -> where its grammar comes from (for the report)
    instance_source: str
    tokens: list[list[int]] = field(default_factory=list)
    gbnf: str | None = None  # the GBNF text of a "gbnf" case


TRIVIAL = GrammarCase("trivial", "lark", 'start: "x"', 'root ::= "x"', ["x"], {}, "")


class NoData(Exception):
    """The case's instances are not available (the message says why)."""


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def read_instances(path: str) -> list[str]:
    """Blocks separated by lines ``---``; a block whose lines all start with ``#`` is a comment.
    Leading and trailing newlines of a block are not part of the instance."""
    out = []
    for block in _read(path).split("\n---\n"):
        block = block.strip("\n")
        if block and not all(line.startswith("#") for line in block.splitlines()):
            out.append(block)
    return out


def lark_path(name: str) -> str:
    """tests/data/grammars/NAME.lark when it exists (the project's grammar), else the provisional
    benchmarks/grammars/NAME.lark."""
    p = os.path.join(TEST_GRAMMARS_DIR, name + ".lark")
    return p if os.path.exists(p) else os.path.join(GRAMMARS_DIR, name + ".lark")


def _rel(path: str) -> str:
    return os.path.relpath(path, ROOT)


def json_instances(n: int, directory: str = JSONSCHEMABENCH_DIR) -> list[str]:
    """The first valid object/array instance of each schema, taking schemas round-robin over
    JSON_SPLITS (file order within a split), until n instances."""
    if not os.path.isdir(directory):
        raise NoData(f"JSONSchemaBench not found at {os.path.normpath(directory)} (see ../shared/README.md)")

    def per_split(split: str):
        path = os.path.join(directory, split + ".jsonl")
        if not os.path.exists(path):
            return
        with open(path, encoding="utf-8") as f:
            for line in f:
                for t in json.loads(line)["tests"]:
                    if t["valid"] and isinstance(t["data"], (dict, list)):
                        try:
                            yield json.dumps(t["data"], separators=(",", ":"), ensure_ascii=False, allow_nan=False)
                        except ValueError:  # NaN / Infinity from an out-of-range number
                            continue
                        break

    gens = [per_split(s) for s in JSON_SPLITS]
    out: list[str] = []
    while len(out) < n and gens:
        for g in list(gens):
            x = next(g, None)
            if x is None:
                gens.remove(g)
            elif len(out) < n:
                out.append(x)
    if not out:
        raise NoData(f"no valid JSON instances under {os.path.normpath(directory)}")
    return out


def check_with_lark(case: GrammarCase) -> None:
    import lark

    parser = lark.Lark(case.lark, parser="earley", lexer="dynamic_complete")
    for i, text in enumerate(case.instances):
        try:
            parser.parse(text)
        except lark.exceptions.LarkError as e:
            raise ValueError(f"{case.name}: instance {i} does not parse with lark: {str(e)[:300]}") from e


def load_case(name: str, json_count: int = 50) -> GrammarCase:
    if name == "json":
        return GrammarCase(
            "json", "json", LLGUIDANCE_ANY_JSON, None, json_instances(json_count),
            {"tokamata": "`tokamata.compile_json(vocab, whitespace=..., spelling=\"any\")` (see Repetitions)",
             "llguidance": f"Lark `{LLGUIDANCE_ANY_JSON}`",
             "xgrammar": "`GrammarCompiler.compile_builtin_json_grammar()`"},
            f"first {json_count} valid object/array instances, round-robin over the JSONSchemaBench splits",
        )
    if name not in GRAMMAR_NAMES:
        raise ValueError(f"unknown grammar {name!r}")
    ip = os.path.join(GRAMMARS_DIR, name + "_instances.txt")
    if name in GBNF_GRAMMARS:
        gp = os.path.join(GRAMMARS_DIR, name + ".gbnf")
        text = _read(gp)
        instances = read_instances(ip)
        if name in NEWLINE_TERMINATED:
            instances = [i + "\n" for i in instances]
        return GrammarCase(
            name, "gbnf", "", text, instances,
            {"tokamata": f"`compile_gbnf` of `{_rel(gp)}`", "llguidance": f"`grammar_from(\"gbnf\", ...)` of `{_rel(gp)}`",
             "xgrammar": f"`{_rel(gp)}`"},
            f"`{_rel(ip)}`", gbnf=text,
        )
    lp = lark_path(name)
    ep = os.path.join(GRAMMARS_DIR, name + ".ebnf")
    has_ebnf = os.path.exists(ep)
    case = GrammarCase(
        name, "lark", _read(lp), _read(ep) if has_ebnf else None, read_instances(ip),
        {"tokamata": f"`{_rel(lp)}`", "llguidance": f"`{_rel(lp)}`",
         "xgrammar": f"`{_rel(ep)}`" if has_ebnf else "(no conversion)"},
        f"`{_rel(ip)}`",
    )
    check_with_lark(case)
    return case


def tokenize(path: str, cases: list[GrammarCase]) -> None:
    from tokenizers import Tokenizer

    tk = Tokenizer.from_file(path)
    for c in cases:
        c.tokens = [e.ids for e in tk.encode_batch(c.instances, add_special_tokens=False)]
