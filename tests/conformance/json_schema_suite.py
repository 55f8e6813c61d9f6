"""JSON-Schema-Test-Suite through the JSON Schema front end and the grammar engine.

Each case's schema is compiled (``property_order="any"``: the suite's instances list their
members in any order; ``spelling="any"``: the suite tests RFC 8259 spellings of values, such as
``1.0`` for an integer or escapes in strings, which natural spelling, the default, leaves out
by design; compact whitespace; the suite's draft as the default draft; the suite's
``remotes/`` documents as the registry, keyed ``http://localhost:1234/<relative path>`` as the
suite's convention serves them, read from disk: nothing is fetched), each test
instance is serialized compactly (``json.dumps(..., separators=(",", ":"),
ensure_ascii=False)``), tokenized by the real Llama 3 tokenizer and fed token by token to a
matcher: a valid instance must be accepted at every token and end accepting; an invalid one
must be refused somewhere. Categories, per test, as llguidance's baseline counts them:

- ``pass``
- ``false_negative``: a valid instance refused
- ``false_positive``: an invalid instance accepted (must never happen)
- ``compile_error_all_invalid``: the case did not compile and all its instances are invalid
- ``compile_error_valid``: the case did not compile and has valid instances

Run ``python tests/conformance/json_schema_suite.py --write`` to rewrite the baseline
(``json_schema_suite_baseline.json``) after an improvement; the test in this folder fails when
any test's category gets worse than the baseline's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SUITE = ROOT.parent / "shared" / "data" / "json-schema-test-suite" / "tests"
REMOTES = SUITE.parent / "remotes"
REMOTE_BASE = "http://localhost:1234/"
BASELINE = HERE / "json_schema_suite_baseline.json"
DRAFTS = ("draft2020-12", "draft7")
RANK = {"pass": 0, "compile_error_all_invalid": 1, "false_negative": 2, "compile_error_valid": 3,
        "false_positive": 4}


def suite_files(draft: str) -> list[tuple[str, Path]]:
    root = SUITE / draft
    files = sorted(root.glob("*.json")) + sorted((root / "optional" / "format").glob("*.json"))
    return [(str(f.relative_to(root).with_suffix("")), f) for f in files]


def remotes() -> dict:
    """The suite's remote documents: ``{"http://localhost:1234/<relative path>": schema}``."""
    return {REMOTE_BASE + path.relative_to(REMOTES).as_posix(): json.loads(path.read_text())
            for path in sorted(REMOTES.rglob("*.json"))}


def run(draft: str, tokenizer, files: list[tuple[str, Path]] | None = None) -> dict:
    """{file: {case: {test: category}}} for one draft."""
    import tokamata
    from tokamata.syntax.json_schema import schema_to_grammar

    vocab = tokenizer.vocab
    registry = remotes()
    results: dict = {}
    for name, path in files or suite_files(draft):
        by_case = results.setdefault(name, {})
        for case in json.loads(path.read_text()):
            tests = case["tests"]
            by_test = by_case.setdefault(case["description"], {})
            try:
                grammar, _ = schema_to_grammar(case["schema"], property_order="any", spelling="any",
                                               default_draft=draft, registry=registry)
                constraint = tokamata.compile_grammar_ir(grammar, vocab)
            except tokamata.TokamataError:
                category = "compile_error_valid" if any(t["valid"] for t in tests) else "compile_error_all_invalid"
                for t in tests:
                    by_test[t["description"]] = category
                continue
            for t in tests:
                text = json.dumps(t["data"], separators=(",", ":"), ensure_ascii=False)
                try:
                    accepted = _accepts(constraint, tokenizer.encode(text))
                except tokamata.TokamataError:
                    accepted = False
                if accepted == t["valid"]:
                    by_test[t["description"]] = "pass"
                else:
                    by_test[t["description"]] = "false_positive" if accepted else "false_negative"
    return results


def _accepts(constraint, tokens: list[int]) -> bool:
    matcher = constraint.matcher()
    for token in tokens:
        if not matcher.consume(token):
            return False
    return matcher.is_accepting()


def counts(results: dict) -> dict[str, int]:
    total: dict[str, int] = {}
    for cases in results.values():
        for tests in cases.values():
            for category in tests.values():
                total[category] = total.get(category, 0) + 1
    return dict(sorted(total.items(), key=lambda kv: RANK[kv[0]]))


def main() -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from real_tokenizers import llama3

    tokenizer = llama3()
    everything = {draft: run(draft, tokenizer) for draft in DRAFTS}
    for draft, results in everything.items():
        print(draft, counts(results))
    if "--write" in sys.argv:
        BASELINE.write_text(json.dumps(everything, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        print("wrote", BASELINE)


if __name__ == "__main__":
    main()
