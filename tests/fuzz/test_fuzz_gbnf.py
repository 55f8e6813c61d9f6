"""Fuzzing ``compile_gbnf`` (llama.cpp GBNF): random grammars (rules over literals with
escapes, character classes, ``.``, references, groups, ``? * + {m,n}``, tokens by id and by
name, comments), deeply nested ones, and byte-level mutations of the grammars of
``tests/unit/test_gbnf_front_end.py``'s ``CASES`` and of ``regex_cases.TABLE`` spelled in GBNF.

Checked for every input, in a capped worker process (``fuzz_harness``): compiling returns a
constraint or raises a :class:`tokamata.TokamataError`, within the worker's time and memory
caps and without crashing; a constraint that compiled passes ``fuzz_checks.walk`` (mask and
``consume`` agree, no live matcher is stuck).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import tokamata
from fuzz_checks import LIMITS, VOCAB, compiled_outcome
from fuzz_harness import as_text, fuzz_settings, mutated, unit_table
from regex_cases import TABLE
from regex_dialects import to_gbnf

# ------------------------------------------------------------------ the worker side


def run_input(value: tuple[str, str, int]) -> str:
    text, start, seed = value
    return compiled_outcome(lambda: tokamata.compile_gbnf(text, VOCAB, start=start, limits=LIMITS), seed)


# ------------------------------------------------------------------ inputs

RULES = ["root", "a", "b-c", "d1"]
_LITERALS = ['"a"', '"ab"', '"é"', '""', '"\\""', '"\\n"', '"\\x41"', '"\\u00e9"', '"\\U0001F600"', '"\\\\"',
             '"\\q"', '"\\xZZ"', '"\\ud800"', '"日本"', '"{"']
_CLASSES = ["[a-z]", "[^a-z]", "[\\]]", "[a-]", "[\\x00-\\x7f]", "[^\"\\\\]", "[z-a]", "[]", "[^]", "[\\u0000-\\U0010FFFF]",
            "[\\n\\t]", "[a-c-e]", "."]
_TOKENS = ["<[0]>", "<[284]>", "<[285]>", "<[99999]>", "<[-1]>", "<|eot_id|>", "<|endoftext|>", "<|nope|>", "!<[97]>",
           "!<|eot_id|>"]
_COUNTS = [0, 1, 2, 3, 1000, 10**9, 2**63]


def _atom(names: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(_LITERALS), st.sampled_from(_CLASSES), st.sampled_from(names),
                     st.sampled_from(_TOKENS))


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    count = st.one_of(st.integers(0, 3), st.sampled_from(_COUNTS))
    return st.one_of(
        st.builds(" ".join, st.lists(inner, min_size=2, max_size=4)),
        st.builds(" | ".join, st.lists(inner, min_size=2, max_size=3)),
        st.builds("({})".format, inner),
        st.builds(lambda x, q: f"({x}){q}", inner, st.sampled_from(["?", "*", "+"])),
        st.builds(lambda x, n: f"({x}){{{n}}}", inner, count),
        st.builds(lambda x, m: f"({x}){{{m},}}", inner, count),
        st.builds(lambda x, m, n: f"({x}){{{m},{n}}}", inner, count, count),
    )


@st.composite
def grammars(draw) -> str:
    rules = draw(st.lists(st.sampled_from(RULES), min_size=1, max_size=4, unique=True))
    lines = []
    for name in rules:
        body = draw(st.recursive(_atom(rules + ["undefined"]), _extend, max_leaves=10))
        separator = draw(st.sampled_from([" ::= ", "::=", " ::=\n  ", " ::= # c\n "]))
        lines.append(f"{name}{separator}{body}")
    lines = draw(st.permutations(lines))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n# end", "\n\n\t"]))


deep_grammars = st.one_of(
    st.builds(lambda n: f'root ::= {"(" * n}"a"{")" * n}', st.integers(1, 5000)),
    st.builds(lambda n: 'root ::= r0\n' + "\n".join(f'r{i} ::= r{i + 1} "x" | "y"' for i in range(n))
              + f'\nr{n} ::= "z"', st.integers(1, 2000)),
    st.builds(lambda n: "root ::= " + " ".join(['"a"?'] * n), st.integers(1, 20000)),
    st.builds(lambda n: 'root ::= "a"' + "{2}" * n, st.integers(1, 100)),
)

_SEEDS = [case.text.encode() for case in unit_table("test_gbnf_front_end", "CASES")] + [
    g.encode() for g in (to_gbnf(row[0]) for row in TABLE) if g is not None]

# ------------------------------------------------------------------ tests


@fuzz_settings(80)
@given(text=grammars(), start=st.sampled_from(["root", "root", "a"]), seed=st.integers(0, 2**32 - 1))
def test_structured_grammars(worker, text: str, start: str, seed: int) -> None:
    worker.run((text, start, seed))


@fuzz_settings(10, shrink=False)
@given(text=deep_grammars, seed=st.integers(0, 2**32 - 1))
def test_deep_grammars(worker, text: str, seed: int) -> None:
    worker.run((text, "root", seed))


@fuzz_settings(80)
@given(data=mutated(_SEEDS), surrogates=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_mutated_grammars(worker, data: bytes, surrogates: bool, seed: int) -> None:
    worker.run((as_text(data, surrogates), "root", seed))
