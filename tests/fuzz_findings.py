"""What the fuzz targets found, minimized: one row per finding, replayed as a regression test
by ``tests/fuzz/test_fuzz_findings.py`` through the same worker and checks as the fuzzer.

A row is ``Finding(target, input, what, fixed)``: ``target`` is the fuzz module's stem
(``test_fuzz_regex``), ``input`` what that module's ``run_input`` takes, ``what`` the symptom
when found. ``fixed`` rows must pass. Open rows (``fixed=False``) are bugs in a front end
(``syntax/``, ``grammar/``) owned by another change: their replay is an expected failure
(strict, so a fix shows), and ``match`` (a predicate on the input) lets the fuzzers step
around the same bug in new inputs (:func:`known_open`) so that ``make test`` stays green
while it is open. Fixing one: set ``fixed=True`` and drop its ``match``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Finding:
    target: str
    input: Any
    what: str
    fixed: bool
    match: Callable[[Any], bool] | None = None


FINDINGS: list[Finding] = [
    Finding("test_fuzz_regex", ("a(?#c)*", 0),
            "syntax/regex.py: a quantifier after a comment group is read as a literal: 'a(?#c)*' "
            "accepts 'a*' (re: a repeated 'a', 'aaa')", fixed=True),
    Finding("test_fuzz_regex", ("(?i)a(?#c)?", 0),
            "syntax/regex.py + automata/charset.ignore_case: the same quantifier, taken as a literal under "
            "(?i), reaches re.compile('?') and escapes as re.error ('nothing to repeat')", fixed=True),
    Finding("test_fuzz_gbnf", ("root ::= " + " ".join(['"a"?'] * 12000), "root", 0),
            "grammar/regular_rules.py nonempty is quadratic in a rule's length and checks no time: 12,000 "
            "optional literals: over 10 s (8,000: 6 s; 6,000: 3.4 s; max_compile_seconds=2)", fixed=True),
    Finding("test_fuzz_json_schema", (("nested", "not", 1000, True), {}, 0),
            "syntax/json_schema: schema JSON text nested 1,000 deep: RecursionError while decoding "
            "(max_nesting_depth is not checked before json.loads)", fixed=True),
    Finding("test_fuzz_json_schema", (("nested", "allOf", 1000, False), {}, 0),
            "syntax/json_schema: a schema dict nested 1,000 deep: RecursionError while encoding a JSON "
            "object (the same through not, properties)", fixed=True),
    Finding("test_fuzz_json_schema", (("nested", "properties", 20000, False), {}, 0),
            "syntax/json_schema: a schema dict nested 20,000 deep through properties: the worker "
            "crashes (SIGSEGV: the compiled expander recurses past the C stack)", fixed=True),
    Finding("test_fuzz_json_schema", ({"minLength": 2**31}, {}, 0),
            "syntax/json_schema/strings + automata/native: minLength or maxLength of 2**31 or more reaches "
            "the C++ arena as a repeat count: OverflowError ('signed integer is greater than maximum'); "
            "minItems, maxProperties ... give LimitExceeded", fixed=True),
    Finding("test_fuzz_json_schema", ('{"dependentRequired": {"a": 1}}', {}, 0),
            "syntax/json_schema/expand.py Expander.require: a dependentRequired value that is not an array "
            "raises TypeError ('int' object is not iterable) instead of SchemaError", fixed=True),
    Finding("test_fuzz_json_schema", (True, {"whitespace": "pretty", "indent": 10**6}, 0),
            "syntax/json_schema: whitespace='pretty' with indent=10**6 runs for over 10 s (the issue's "
            "9 s and 1.2 GB); indent is not bounded", fixed=True),
]


def known_open(target: str, value: Any) -> str | None:
    """The ``what`` of the open finding whose ``match`` recognizes ``value``, else None."""
    for finding in FINDINGS:
        if not finding.fixed and finding.target == target and finding.match is not None:
            try:
                if finding.match(value):
                    return finding.what
            except Exception:  # noqa: BLE001 (a predicate never fails a fuzz input)
                continue
    return None
