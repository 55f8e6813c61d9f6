"""Fuzzing ``compile_regex``: random regex syntax trees printed to pattern text, and byte-level
mutations of the patterns of ``regex_cases.TABLE``.

Checked for every input, in a capped worker process (``fuzz_harness``): compiling returns a
constraint or raises a :class:`tokamata.TokamataError`, within the worker's time and memory
caps and without crashing; a constraint that compiled passes ``fuzz_checks.walk`` (mask and
``consume`` agree, no live matcher is stuck), and a walk that ends with EOS produced a text
that ``re.fullmatch`` accepts (only for outputs up to 12 bytes, which ``re`` matches quickly).
"""

from __future__ import annotations

import re
import warnings

from hypothesis import given
from hypothesis import strategies as st

import tokamata
from fuzz_checks import LIMITS, VOCAB, compiled_outcome, walk
from fuzz_harness import as_text, fuzz_settings, mutated
from regex_cases import SEED_000_REGEXES, TABLE

# ------------------------------------------------------------------ the worker side


def _full_match_check(pattern: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compiled = re.compile(pattern)
        except (re.error, OverflowError, RecursionError, ValueError):
            return None  # (tokamata may read what re refuses: nothing to compare)

    def check(output: bytes) -> None:
        if len(output) <= 12:
            text = output.decode("utf-8")  # a full match is whole characters
            assert compiled.fullmatch(text), f"the walk produced {text!r}, which re.fullmatch refuses"
    return check


def run_input(value: tuple[str, int]) -> str:
    pattern, seed = value
    try:
        constraint = tokamata.compile_regex(pattern, VOCAB, LIMITS)
    except tokamata.TokamataError as e:
        return f"error {type(e).__name__}"
    return walk(constraint, seed, output_check=_full_match_check(pattern))


# ------------------------------------------------------------------ inputs

_LITERALS = list("ab é日😀-.^$|\\[](){}*+?#\n") + ["\\.", "\\\\", "\\n", "\\t", "\\x41", "\\u00e9", "\\U0001F600",
                                                "\\N{EM DASH}", "\\0", "\\101", "\\-", "\\]", "\\ "]
_CLASS_ITEMS = ["a", "z", "a-z", "0-9", "é-ü", "\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "\\]", "\\\\", "-", "^",
                "\\x00-\\x7f", "\\u4e00-\\u9fff", "😀-😂", "[:alpha:]", "\\b", "\\n"]
_ATOMS = [".", "\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "\\b", "\\B", "\\A", "\\Z", "^", "$", "\\1", "\\g<1>", "()"]
_COUNTS = [0, 1, 2, 3, 5, 100, 1000, 65535, 4294967296, 10**30]


def _count() -> st.SearchStrategy[int]:
    return st.one_of(st.integers(0, 4), st.sampled_from(_COUNTS))


def _quantifier() -> st.SearchStrategy[str]:
    base = st.one_of(st.sampled_from(["*", "+", "?"]),
                     st.builds("{{{}}}".format, _count()),
                     st.builds("{{{},{}}}".format, _count(), _count()),
                     st.builds("{{{},}}".format, _count()),
                     st.builds("{{,{}}}".format, _count()))
    return st.builds(lambda q, mode: q + mode, base, st.sampled_from(["", "", "?", "+"]))


_class = st.builds(lambda negated, items: "[" + ("^" if negated else "") + "".join(items) + "]",
                   st.booleans(), st.lists(st.sampled_from(_CLASS_ITEMS), min_size=1, max_size=4))
_leaf = st.one_of(st.sampled_from(_LITERALS), st.sampled_from(_ATOMS), _class)
_GROUPS = ["({})", "(?:{})", "(?P<n>{})", "(?i:{})", "(?s:{})", "(?x:{})", "(?-i:{})", "(?=x{})", "(?!{})",
           "(?<=a{})", "(?>{})", "(?(1){}|b)", "(?#c){}"]


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds("".join, st.lists(inner, min_size=2, max_size=4)),
        st.builds("|".join, st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda g, x: g.format(x), st.sampled_from(_GROUPS), inner),
        st.builds(lambda x, q: f"(?:{x}){q}", inner, _quantifier()),
        st.builds(lambda x, q: x + q, inner, _quantifier()),
    )


#: a random syntax tree, printed; optionally under global flags, or nested very deeply
patterns = st.one_of(
    st.builds(lambda flags, body: flags + body, st.sampled_from(["", "", "(?i)", "(?s)", "(?x)", "(?a)", "(?u)",
                                                                   "(?L)", "(?ims)"]),
              st.recursive(_leaf, _extend, max_leaves=24)),
    st.builds(lambda opening, depth, closing: opening * depth + "a" + closing * depth,
              st.sampled_from(["(", "(?:", "(?i:", "[", "(a|"]), st.integers(1, 3000), st.sampled_from([")", ")*", "]"])),
)

_SEEDS = [p.encode() for p in SEED_000_REGEXES] + [row[0].encode() for row in TABLE]

# ------------------------------------------------------------------ tests


@fuzz_settings(120)
@given(pattern=patterns, seed=st.integers(0, 2**32 - 1))
def test_structured_patterns(worker, pattern: str, seed: int) -> None:
    worker.run((pattern, seed))


@fuzz_settings(120)
@given(data=mutated(_SEEDS), surrogates=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_mutated_patterns(worker, data: bytes, surrogates: bool, seed: int) -> None:
    worker.run((as_text(data, surrogates), seed))
