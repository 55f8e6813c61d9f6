"""Hostile input to the front ends (issue 17, part B): every input below gets a precise
tokamata error, or compiles, within bounded time and memory; never a crash, a hang or an
exception outside the error tree.

Each case is a function building the input (some are self-referencing Python objects, which
no literal can spell) and compiling it; the table says what must come out: the error class
and its attributes (``limit`` of a :class:`~tokamata.LimitExceeded`, a prefix of the JSON
``pointer``), or ``"ok"``. Every case runs in its own subprocess under a time limit and an
address-space cap (``RLIMIT_AS``), so a segfault, a stack overflow, a hang or a memory
blow-up is a clean failure of that case, with the subprocess's output. The cases are those
found by trying the front ends as an attacker would; the slow ones are kept small enough to
run fast once fixed, and run under a small ``max_compile_seconds`` where the point is that
the budget is honoured.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import pytest

import tokamata

HERE = Path(__file__).resolve()
SOURCE = HERE.parents[2] / "src"
TIMEOUT_S = 60  # a hang guard, far above any case's time (each takes well under 2 s)
MEMORY_CAP = 3 * 1024 ** 3  # bytes of address space a case may map

_VOCAB: Optional[tokamata.Vocabulary] = None


def vocab() -> tokamata.Vocabulary:
    global _VOCAB
    if _VOCAB is None:
        _VOCAB = tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(32, 127)] + [None],
                                                      eos_token_ids=[95])
    return _VOCAB


def schema(value, **options) -> None:
    tokamata.compile_json_schema(value, vocab(), **options)


def nested(depth: int, wrap: Callable[[object], object], leaf: object = True) -> object:
    value = leaf
    for _ in range(depth):
        value = wrap(value)
    return value


# ---------------------------------------------------------------- JSON Schema: cycles


def self_not() -> None:
    s: dict = {}
    s["not"] = s
    schema(s)


def self_all_of() -> None:
    s: dict = {}
    s["allOf"] = [s]
    schema(s)


def self_properties() -> None:
    s: dict = {"type": "object"}
    s["properties"] = {"a": s}
    schema(s)


def cyclic_const() -> None:
    value: list = []
    value.append(value)
    schema({"const": value})


def cyclic_registry() -> None:
    document: dict = {}
    document["items"] = document
    schema({"$ref": "https://example.com/a.json"}, registry={"https://example.com/a.json": document})


def shared_subschema() -> None:
    """One dict reused in many places is no cycle: it compiles."""
    shared = {"type": "integer", "minimum": 0}
    schema({"type": "object", "properties": {f"p{i}": shared for i in range(50)}})


# ---------------------------------------------------------------- JSON Schema: depth


def deep_properties() -> None:
    schema(nested(20_000, lambda s: {"type": "object", "properties": {"a": s}}))


def deep_not() -> None:
    schema(nested(20_000, lambda s: {"not": s}))


def deep_all_of() -> None:
    schema(nested(20_000, lambda s: {"allOf": [s]}))


def ref_chain(**options) -> None:
    n = 20_000
    defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(n)}
    defs[f"d{n}"] = {"type": "integer"}
    schema({"$ref": "#/$defs/d0", "$defs": defs}, **options)


#: limits an operator raised far past what recursion can take: still errors, never a crash
RAISED = tokamata.Limits(max_nesting_depth=10 ** 6, max_json_depth=10 ** 6)


def deep_not_raised_limits() -> None:
    schema(nested(30_000, lambda s: {"not": s}), limits=RAISED)


def ref_chain_raised_limits() -> None:
    ref_chain(limits=RAISED)


def lark_deep_raised_limits() -> None:
    lark("start: " + "(" * 30_000 + '"a"' + ")" * 30_000, limits=RAISED)


def deep_const() -> None:
    schema({"const": nested(5_000, lambda v: [v], 1)})


def deep_enum() -> None:
    schema({"enum": [nested(5_000, lambda v: {"a": v}, 1)]})


def deep_default() -> None:
    schema({"type": "integer", "default": nested(5_000, lambda v: [v], 1)})


def deep_unknown_keyword() -> None:
    schema({"type": "integer", "x-vendor": nested(5_000, lambda v: [v], 1)})


def deep_registry_document() -> None:
    document = {"$defs": {"x": nested(5_000, lambda v: [v], 1)}, "type": "integer"}
    schema({"$ref": "https://example.com/a.json"}, registry={"https://example.com/a.json": document})


def deep_json_text() -> None:
    schema('{"const": ' + "[" * 100_000 + "]" * 100_000 + "}")


def moderately_deep_properties() -> None:
    """Realistic nesting still compiles."""
    schema(nested(40, lambda s: {"type": "object", "properties": {"a": s}, "required": ["a"]}, {"type": "integer"}))


# ---------------------------------------------------------------- JSON Schema: size, time, values


def reused_conditionals() -> None:
    """if/then/else over one reused dict: 3 ** 30 subschemas written out."""
    schema(nested(30, lambda s: {"if": s, "then": s, "else": s}, {"type": "integer"}))


def long_enum() -> None:
    schema({"enum": list(range(20_000))})


def many_patterns() -> None:
    schema({"allOf": [{"pattern": f"a.*{i}.*b"} for i in range(200)]},
           limits=tokamata.Limits(max_compile_seconds=0.5))


def huge_indent() -> None:
    schema({"type": "object", "properties": {"a": {"type": "integer"}}}, whitespace="pretty", indent=10 ** 6)


def large_indent_is_cheap() -> None:
    schema({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}},
            "additionalProperties": False}, whitespace="pretty", indent=1000)


def huge_min_length() -> None:
    schema({"type": "string", "minLength": 10 ** 18})


def huge_min_items() -> None:
    schema({"type": "array", "minItems": 10 ** 6})


def huge_count() -> None:
    schema({"type": "array", "maxItems": 10 ** 18})


def tiny_budget_schema() -> None:
    schema({"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(200)}},
           limits=tokamata.Limits(max_compile_seconds=1e-4))


def many_pattern_properties() -> None:
    """Key regions split by 300 patterns: many small intersections, each under the budget."""
    schema({"patternProperties": {f"^a{i}": {} for i in range(300)}, "additionalProperties": False},
           limits=tokamata.Limits(max_compile_seconds=0.5))


def many_one_of() -> None:
    schema({"oneOf": [{"const": i} for i in range(2000)]}, limits=tokamata.Limits(max_compile_seconds=0.5))


def one_of_arrays() -> None:
    """The complement of each array shape counts one contains per other member: the items of
    one state took 2 ** 59 choices (memory blew up after 20 s)."""
    schema({"oneOf": [{"type": "array", "items": {"type": "string", "pattern": f"x{i}"}, "minItems": 1}
                      for i in range(60)]})


def non_string_key() -> None:
    schema({"type": "object", "properties": {1: {"type": "integer"}}})


def huge_integer() -> None:
    schema({"type": "integer", "minimum": 10 ** 5000})


def pattern_properties_not_an_object() -> None:
    schema({"patternProperties": 5})


def dependent_required_not_an_object() -> None:
    schema({"dependentRequired": 5})


def dependent_required_names_not_an_array() -> None:
    schema({"dependentRequired": {"a": 5}})


def dependent_schemas_not_an_object() -> None:
    schema({"dependentSchemas": 5})


def prefix_items_not_an_array() -> None:
    schema({"prefixItems": 5})


def huge_max_whitespace() -> None:
    schema({"type": "object"}, whitespace="flexible", max_whitespace=10 ** 10)


# ---------------------------------------------------------------- Lark and GBNF


def lark(text: str, **options) -> None:
    tokamata.compile_grammar(text, vocab(), **options)


def gbnf(text: str, **options) -> None:
    tokamata.compile_gbnf(text, vocab(), **options)


def lark_deep_parentheses() -> None:
    lark("start: " + "(" * 20_000 + '"a"' + ")" * 20_000)


def lark_deep_alternatives() -> None:
    lark("start: " + '("a" | ' * 5_000 + '"b"' + ")" * 5_000)


def lark_rule_chain() -> None:
    n = 3_000
    lark("start: r0\n" + "".join(f'r{i}: r{i + 1} "a"\n' for i in range(n)) + f'r{n}: "a"\n')


def lark_terminal_chain() -> None:
    n = 3_000
    lark("start: T0\n" + "".join(f'T{i}: T{i + 1} "a"\n' for i in range(n)) + f'T{n}: "a"\n')


def lark_huge_repeat() -> None:
    lark('start: "x"{1000000}')


def lark_huge_tilde() -> None:
    lark('start: ("x" "y") ~ 1000000..2000000')


def lark_rule_cycle() -> None:
    lark("start: a\na: b\nb: a\n")


def lark_terminal_cycle() -> None:
    lark("start: A\nA: B\nB: A\n")


def lark_deep_json() -> None:
    lark("start: %json " + '{"const": ' + "[" * 20_000 + "]" * 20_000 + "}")


def lark_terminal_doubling() -> None:
    """Each terminal uses the next twice: 2 ** 40 leaves written out."""
    lark("start: A0\n" + "".join(f"A{i}: A{i + 1} A{i + 1}\n" for i in range(40)) + 'A40: "a"\n')


def lark_json_huge_integer() -> None:
    lark('start: %json {"minimum": 1' + "0" * 5000 + "}")


def lark_long_case_insensitive_regex() -> None:
    lark("start: /(?i)" + "ab" * 20_000 + "/")


def lark_tiny_budget() -> None:
    lark("start: " + " ".join(f"r{i}" for i in range(300)) + "\n" +
         "".join(f'r{i}: "a{i}" | "b{i}"\n' for i in range(300)), limits=tokamata.Limits(max_compile_seconds=1e-4))


def gbnf_deep_parentheses() -> None:
    gbnf("root ::= " + "(" * 20_000 + '"a"' + ")" * 20_000)


def gbnf_rule_chain() -> None:
    n = 3_000
    gbnf("root ::= r0\n" + "".join(f'r{i} ::= r{i + 1} "a"\n' for i in range(n)) + f'r{n} ::= "a"\n')


def gbnf_rule_doubling() -> None:
    """Each regular rule uses the next twice: 2 ** 40 leaves written out."""
    gbnf("root ::= r0\n" + "".join(f"r{i} ::= r{i + 1} r{i + 1}\n" for i in range(40)) + 'r40 ::= "a"\n')


def gbnf_long_nullable_sequence() -> None:
    """20,000 optional items in one sequence (its non-empty part was built in quadratic time)."""
    gbnf("root ::= " + '"a"?' * 20_000)


def gbnf_huge_repeat() -> None:
    gbnf('root ::= "x"{1000000}')


def gbnf_nested_repeats() -> None:
    gbnf('root ::= (("x"{1000}){1000}){1000}')


def gbnf_rule_cycle() -> None:
    gbnf("root ::= a\na ::= b\nb ::= a\n")


def gbnf_tiny_budget() -> None:
    gbnf("root ::= " + " ".join(f"r{i}" for i in range(300)) + "\n" +
         "".join(f'r{i} ::= "a{i}" | [b-z]{{1,{i + 1}}}\n' for i in range(300)),
         limits=tokamata.Limits(max_compile_seconds=1e-4))


def regex_deep_groups() -> None:
    tokamata.compile_regex("(" * 20_000 + "a" + ")" * 20_000, vocab())


def regex_huge_count() -> None:
    tokamata.compile_regex("a{4294967294}", vocab())


def pattern_huge_count() -> None:
    schema({"type": "string", "pattern": "^a{4294967294}$"})


def regex_deep_nesting_within_limit() -> None:
    tokamata.compile_regex("(?:" * 150 + "a" + ")*" * 150, vocab())


# ------------------------------------------------------------------------------ the table


@dataclass(frozen=True)
class Case:
    build: Callable[[], None]
    outcome: str  # an error class of tokamata, or "ok"
    limit: Optional[str] = None  # LimitExceeded.limit
    pointer: Optional[str] = None  # a prefix of the error's pointer
    #: also run with every tokamata module imported from its .py source (recursion there meets
    #: Python's recursion limit, in the Cython build the C stack)
    source: bool = False


CASES = [
    Case(self_not, "SchemaError", pointer="/not", source=True),
    Case(self_all_of, "SchemaError", pointer="/allOf/0", source=True),
    Case(self_properties, "SchemaError", pointer="/properties/a", source=True),
    Case(cyclic_const, "SchemaError", pointer="/const/0", source=True),
    Case(cyclic_registry, "SchemaError", pointer="https://example.com/a.json#/items"),
    Case(shared_subschema, "ok"),
    Case(deep_properties, "LimitExceeded", limit="max_json_depth", pointer="/properties/a/properties/a", source=True),
    Case(deep_not, "LimitExceeded", limit="max_json_depth", pointer="/not/not", source=True),
    Case(deep_all_of, "LimitExceeded", limit="max_json_depth", pointer="/allOf/0/allOf/0", source=True),
    Case(ref_chain, "LimitExceeded", limit="max_nesting_depth", pointer="/$defs/d", source=True),
    Case(deep_const, "LimitExceeded", limit="max_json_depth", pointer="/const/0/0", source=True),
    Case(deep_not_raised_limits, "LimitExceeded", limit="max_json_depth", source=True),
    Case(ref_chain_raised_limits, "LimitExceeded", source=True),  # (which depth limit: the build's)
    Case(lark_deep_raised_limits, "LimitExceeded", limit="max_nesting_depth", source=True),
    Case(deep_enum, "LimitExceeded", limit="max_json_depth", pointer="/enum/0/a/a"),
    Case(deep_default, "LimitExceeded", limit="max_json_depth", pointer="/default/0/0"),
    Case(deep_unknown_keyword, "LimitExceeded", limit="max_json_depth", pointer="/x-vendor/0"),
    Case(deep_registry_document, "LimitExceeded", limit="max_json_depth",
         pointer="https://example.com/a.json#/$defs/x/0"),
    Case(deep_json_text, "LimitExceeded", limit="max_json_depth", source=True),
    Case(moderately_deep_properties, "ok", source=True),
    Case(reused_conditionals, "LimitExceeded", limit="max_json_values"),
    Case(long_enum, "ok"),
    Case(many_patterns, "LimitExceeded", limit="max_compile_seconds"),
    Case(huge_indent, "LimitExceeded", limit="max_dfa_states"),
    Case(large_indent_is_cheap, "ok"),
    Case(huge_min_length, "Unsupported", pointer=""),
    Case(huge_min_items, "LimitExceeded", limit="max_grammar_symbols"),
    Case(huge_count, "Unsupported", pointer=""),
    Case(tiny_budget_schema, "LimitExceeded", limit="max_compile_seconds"),
    Case(many_pattern_properties, "LimitExceeded", limit="max_compile_seconds"),
    Case(many_one_of, "LimitExceeded", limit="max_compile_seconds"),
    Case(one_of_arrays, "LimitExceeded", limit="max_grammar_symbols"),
    Case(non_string_key, "SchemaError", pointer="/properties"),
    Case(huge_integer, "SchemaError", pointer="/minimum"),
    Case(pattern_properties_not_an_object, "SchemaError", pointer="/patternProperties"),
    Case(dependent_required_not_an_object, "SchemaError", pointer="/dependentRequired"),
    Case(dependent_required_names_not_an_array, "SchemaError", pointer="/dependentRequired/a"),
    Case(dependent_schemas_not_an_object, "SchemaError", pointer="/dependentSchemas"),
    Case(prefix_items_not_an_array, "SchemaError", pointer="/prefixItems"),
    Case(huge_max_whitespace, "InvalidArgument"),
    Case(lark_deep_parentheses, "LimitExceeded", limit="max_nesting_depth", source=True),
    Case(lark_deep_alternatives, "LimitExceeded", limit="max_nesting_depth"),
    Case(lark_rule_chain, "ok", source=True),
    Case(lark_terminal_chain, "LimitExceeded", limit="max_nesting_depth", source=True),
    Case(lark_huge_repeat, "LimitExceeded", limit="max_grammar_symbols"),
    Case(lark_huge_tilde, "LimitExceeded", limit="max_grammar_symbols"),
    Case(lark_rule_cycle, "InvalidSyntax"),
    Case(lark_terminal_cycle, "InvalidSyntax"),
    Case(lark_deep_json, "LimitExceeded", limit="max_nesting_depth"),
    Case(lark_terminal_doubling, "LimitExceeded", limit="max_regex_nodes"),
    Case(lark_json_huge_integer, "InvalidSyntax"),
    Case(lark_long_case_insensitive_regex, "ok"),
    Case(lark_tiny_budget, "LimitExceeded", limit="max_compile_seconds"),
    Case(gbnf_deep_parentheses, "LimitExceeded", limit="max_nesting_depth", source=True),
    Case(gbnf_rule_chain, "ok", source=True),
    Case(gbnf_rule_doubling, "LimitExceeded", limit="max_regex_nodes"),
    Case(gbnf_long_nullable_sequence, "ok"),
    Case(gbnf_huge_repeat, "LimitExceeded", limit="max_grammar_symbols"),
    Case(gbnf_nested_repeats, "ok"),  # regular: one terminal, its counts unrolled lazily
    Case(gbnf_rule_cycle, "InvalidSyntax"),
    Case(gbnf_tiny_budget, "LimitExceeded", limit="max_compile_seconds"),
    Case(regex_deep_groups, "LimitExceeded", limit="max_nesting_depth", source=True),
    Case(regex_huge_count, "Unsupported"),
    Case(pattern_huge_count, "Unsupported", pointer="/pattern"),
    Case(regex_deep_nesting_within_limit, "ok", source=True),
]

#: run in the subprocess: build and compile one case, print what came out as one JSON line
_RUNNER = textwrap.dedent("""
    import importlib.abc, importlib.util, json, os, pathlib, resource, sys
    path, name, cap, source = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    if "libasan" not in os.environ.get("LD_PRELOAD", ""):  # (ASan's shadow memory needs terabytes)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    if source:  # every tokamata module from its .py file, compiled ones included
        root = pathlib.Path(source)
        class Source(importlib.abc.MetaPathFinder):
            def find_spec(self, module, path=None, target=None):
                file = root / (module.replace(".", "/") + ".py")
                if module.startswith("tokamata.") and file.exists():
                    return importlib.util.spec_from_file_location(module, file)
                return None
        sys.meta_path.insert(0, Source())
    spec = importlib.util.spec_from_file_location("hostile_cases", path)
    module = sys.modules["hostile_cases"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import tokamata
    try:
        getattr(module, name)()
        out = {"outcome": "ok"}
    except tokamata.TokamataError as error:
        out = {"outcome": type(error).__name__, "limit": getattr(error, "limit", None),
               "pointer": error.pointer, "message": str(error)[:300]}
    except BaseException as error:  # outside the error tree: the case fails
        out = {"outcome": "outside the error tree: " + type(error).__name__, "message": str(error)[:300]}
    print(json.dumps(out))
""")


def _run(name: str, source: str) -> dict:
    try:
        done = subprocess.run([sys.executable, "-c", _RUNNER, str(HERE), name, str(MEMORY_CAP), source],
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name}: no result within {TIMEOUT_S} s (a hang or an ignored time limit)")
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        pytest.fail(f"{name}: the subprocess died (exit status {done.returncode}: a crash or the memory "
                    f"cap)\n{done.stderr[-3000:]}")
    return json.loads(lines[-1])


RUNS = [(case, "") for case in CASES] + [(case, str(SOURCE)) for case in CASES if case.source]


@pytest.mark.parametrize("case, source", RUNS,
                         ids=[case.build.__name__ + ("-source" if source else "") for case, source in RUNS])
def test_hostile_input(case: Case, source: str) -> None:
    got = _run(case.build.__name__, source)
    assert got["outcome"] == case.outcome, got
    if case.limit is not None:
        assert got["limit"] == case.limit, got
    if case.pointer is not None:
        assert got["pointer"] is not None and got["pointer"].startswith(case.pointer), got


def test_every_case_is_in_the_table() -> None:
    """A builder added above but left out of the table would never run."""
    builders = {name for name, value in globals().items()
                if callable(value) and getattr(value, "__module__", None) == __name__
                and not name.startswith("_") and not name.startswith("test_")
                and name not in ("vocab", "schema", "nested", "lark", "gbnf", "Case")}
    assert builders == {case.build.__name__ for case in CASES}
