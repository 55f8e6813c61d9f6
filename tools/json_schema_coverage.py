"""The JSON Schema keyword coverage tables of docs/guides/json.md, from what the compiler does
(the rows below, read from src/tokamata/syntax/json_schema/) and the JSON-Schema-Test-Suite
baseline (tests/conformance/json_schema_suite_baseline.json, draft 2020-12).

A repository tool, not part of the library:

    python tools/json_schema_coverage.py          # print the tables
    python tools/json_schema_coverage.py --write  # rewrite them in docs/guides/json.md

tests/unit/test_docs.py fails when the page's tables differ from what this prints, so a new
baseline (or a row changed here) shows up in the docs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "tests" / "conformance" / "json_schema_suite_baseline.json"
PAGE = ROOT / "docs" / "guides" / "json.md"
START, END = "<!-- coverage:start (tools/json_schema_coverage.py) -->", "<!-- coverage:end -->"
DRAFT = "draft2020-12"

EXACT = "exact"
#: (keywords as shown, suite files of draft 2020-12, status, notes)
KEYWORDS = [
    ("`type`", ["type"], EXACT, "`integer` also accepts `1.0` from draft 6 on (draft 4: no fraction); no exponents for integers"),
    ("`enum`, `const`", ["enum", "const"], EXACT, "JSON equality (`1` equals `1.0`); an empty `enum` is a `SchemaError` (no value)"),
    ("`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`",
     ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"], EXACT,
     "digit automata; under these keywords numbers are generated in plain decimal notation (reported as `number-notation`)"),
    ("`minLength`, `maxLength`", ["minLength", "maxLength"], EXACT, "counted in code points"),
    ("`pattern`", ["pattern"], EXACT, "ECMA-262 syntax, search semantics; `\\p{...}` escapes and non-regular constructs raise `Unsupported` (`pattern`)"),
    ("`format`", ["format"], "exact for 17 formats",
     "always asserted (also where 2020-12 makes it an annotation); see the formats table; others: `approximate={\"format\"}` or `ignore_unknown_formats=True`"),
    ("`properties`, `required`, `additionalProperties`", ["properties", "required", "additionalProperties"], EXACT,
     "members in schema order unless `property_order=\"any\"`; `strict=True` makes an absent `additionalProperties` false"),
    ("`patternProperties`, `propertyNames`", ["patternProperties", "propertyNames"], EXACT, "as `pattern` for the regexes"),
    ("`minProperties`, `maxProperties`", ["minProperties", "maxProperties"], EXACT, "duplicate keys are not detected (see below)"),
    ("`dependentRequired`, `dependentSchemas` (`dependencies`)", ["dependentRequired", "dependentSchemas"], EXACT, ""),
    ("`items`, `prefixItems` (`additionalItems`)", ["items", "prefixItems"], EXACT, ""),
    ("`minItems`, `maxItems`", ["minItems", "maxItems"], EXACT, ""),
    ("`contains`, `minContains`, `maxContains`", ["contains", "minContains", "maxContains"], EXACT, ""),
    ("`uniqueItems`", ["uniqueItems"], "exact for finite item languages",
     "when the items take at most `Limits.max_unique_items_values` (12) distinct values; else `Unsupported` unless `approximate={\"uniqueItems\"}`"),
    ("`allOf`, `anyOf`, `oneOf`", ["allOf", "anyOf", "oneOf"], EXACT, "intersections and complements; a complement that cannot be built raises `Unsupported`"),
    ("`not`", ["not"], EXACT, "exact or `Unsupported`; a schema that allows no value is a `SchemaError`"),
    ("`if`, `then`, `else`", ["if-then-else"], EXACT, ""),
    ("`unevaluatedProperties`", ["unevaluatedProperties"], EXACT, ""),
    ("`unevaluatedItems`", ["unevaluatedItems"], EXACT, "together with `contains`: `Unsupported`"),
    ("`$ref`, `$defs` (`definitions`), `$id`, `$anchor`", ["ref", "defs", "anchor"], EXACT,
     "references to other documents resolve only through `registry=` (nothing is fetched); the meta-schemas are not bundled"),
    ("`$ref` to other documents", ["refRemote"], EXACT, "from `registry=`"),
    ("`$dynamicRef`, `$dynamicAnchor`", ["dynamicRef"], EXACT, "`$recursiveRef` (2019-09) where static resolution is exact, else `Unsupported`"),
    ("`$schema`, `$vocabulary`", ["vocabulary"], EXACT, "drafts 4, 6, 7, 2019-09 and 2020-12; an unknown meta-schema is `Unsupported`"),
    ("boolean schemas", ["boolean_schema"], EXACT, "`false` at the root is a `SchemaError` (no value)"),
    ("`contentMediaType`, `contentEncoding`, `contentSchema`", ["content"], "annotation", "not asserted (as the specification says)"),
    ("`title`, `description`, `default`, `examples`, `deprecated`, `readOnly`, `writeOnly`, `$comment`", ["default"], "annotation", "ignored"),
]

FORMATS = ["date", "time", "date-time", "duration", "email", "idn-email", "hostname", "ipv4", "ipv6", "uuid",
           "uri", "uri-reference", "iri", "iri-reference", "uri-template", "json-pointer",
           "relative-json-pointer", "regex", "idn-hostname", "unknown"]
FORMAT_NOTES = {
    "hostname": "IDNA A-labels (`xn--`) and labels with `--` in positions 3-4 are not generated (reported as `format-subset`)",
    "idn-email": "domains are ASCII (reported as `format-subset`)",
    "regex": "`Unsupported` (ECMA-262 regexes are not a regular language); `approximate={\"format\"}` ignores it",
    "idn-hostname": "`Unsupported` (needs the IDNA tables); `approximate={\"format\"}` ignores it",
    "unknown": "`Unsupported`; `ignore_unknown_formats=True` ignores it (reported)",
}


def _counts(files: list[str], baseline: dict) -> str:
    results = [category for name in files for case in baseline[DRAFT].get(name, {}).values()
               for category in case.values()]
    if not results:
        return "-"
    return f"{sum(r == 'pass' for r in results)} / {len(results)}"


def render(baseline: dict | None = None) -> str:
    if baseline is None:
        baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    lines = ["| keyword | enforced | suite (2020-12) | notes |", "|---|---|---:|---|"]
    for keywords, files, status, notes in KEYWORDS:
        lines.append(f"| {keywords} | {status} | {_counts(files, baseline)} | {notes} |")
    lines += ["", "| format | enforced | suite (2020-12, optional/format) | notes |", "|---|---|---:|---|"]
    for name in FORMATS:
        status = "no" if name in ("regex", "idn-hostname", "unknown") else EXACT
        if name in ("hostname", "idn-email"):
            status = "a subset"
        lines.append(f"| `{name}` | {status} | {_counts(['optional/format/' + name], baseline)} | {FORMAT_NOTES.get(name, '')} |")
    return "\n".join(lines) + "\n"


def replace_tables(page: str, tables: str) -> str:
    start, end = page.index(START) + len(START), page.index(END)
    return page[:start] + "\n" + tables + page[end:]


def main(argv: list[str]) -> int:
    tables = render()
    if "--write" in argv:
        PAGE.write_text(replace_tables(PAGE.read_text(encoding="utf-8"), tables), encoding="utf-8")
    else:
        sys.stdout.write(tables)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
