"""Fuzzing ``compile_grammar`` (Lark dialect): random grammars (rules and terminals over
literals, ``/regex/flags``, ranges, references, groups, ``? * + ~``, ``%ignore``, ``%import``,
special tokens, ``%json``), deeply nested ones, and byte-level mutations of the corpus in
``tests/data/grammars``.

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
from fuzz_harness import as_text, fuzz_settings, mutated
from grammar_samples import GRAMMAR_DIR, GRAMMAR_NAMES

# ------------------------------------------------------------------ the worker side


def run_input(value: tuple[str, str, int]) -> str:
    text, start, seed = value
    return compiled_outcome(lambda: tokamata.compile_grammar(text, VOCAB, start=start, limits=LIMITS), seed)


# ------------------------------------------------------------------ inputs

RULES = ["start", "a", "b", "c", "_d", "?e"]
TERMINALS = ["T", "U", "_V", "W"]
_LITERALS = ['"a"', '"ab"', '"é"', '""', '"\\""', '"\\n"', '"x"i', '"\\\\"', '"日本"', '"\\u00e9"', '"\\x41"',
             '"<|eot_id|>"', '"{"', '"\'"']
_REGEXES = ["/a+/", "/[0-9]+/", "/./s", "/x/i", "/(a|b)*c/", "/[^\"]*/", "/\\d{2,}/", "/(?i)ab/", "/\\//",
            "/a*/", "/(/", "/a{1000}/", "/\\p{L}/", "/[/]/", "/ /x"]
_SPECIALS = ["<|eot_id|>", "<|endoftext|>", "<[284]>", "<[100000]>", "<|nope|>", "<[-1]>"]
_IMPORTS = ["common.NUMBER", "common.CNAME", "common.WS", "common.ESCAPED_STRING", "common.INT", "common.NOPE",
            "common (WS, INT)", "common.WORD -> W", "other.X"]
_COUNTS = [0, 1, 2, 3, 1000, 10**9]


def _atom(names: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(_LITERALS), st.sampled_from(_REGEXES), st.sampled_from(names),
                     st.builds(lambda a, b: f'"{a}".."{b}"', st.sampled_from("a0é"), st.sampled_from("z9ü")))


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    count = st.one_of(st.integers(0, 3), st.sampled_from(_COUNTS))
    return st.one_of(
        st.builds(" ".join, st.lists(inner, min_size=2, max_size=4)),
        st.builds(" | ".join, st.lists(inner, min_size=2, max_size=3)),
        st.builds("({})".format, inner),
        st.builds("[{}]".format, inner),
        st.builds(lambda x, q: f"({x}){q}", inner, st.sampled_from(["?", "*", "+"])),
        st.builds(lambda x, n: f"({x}) ~ {n}", inner, count),
        st.builds(lambda x, m, n: f"({x}) ~ {m}..{n}", inner, count, count),
    )


def _expression(names: list[str]) -> st.SearchStrategy[str]:
    return st.recursive(_atom(names), _extend, max_leaves=10)


@st.composite
def grammars(draw) -> str:
    """A grammar text: a few rules and terminals (terminals refer to terminals only), a
    directive or two; names may be undefined or unused on purpose."""
    rules = draw(st.lists(st.sampled_from(RULES), min_size=1, max_size=4, unique=True))
    terminals = draw(st.lists(st.sampled_from(TERMINALS), max_size=3, unique=True))
    lines = []
    for name in terminals:
        priority = draw(st.sampled_from(["", "", ".2", ".-1"]))
        lines.append(f"{name}{priority}: {draw(_expression(terminals[:1] or ['T']))}")
    references = [r.lstrip("?") for r in rules] + terminals + draw(st.lists(st.sampled_from(_SPECIALS), max_size=1))
    for name in rules:
        lines.append(f"{name}: {draw(_expression(references))}")
    for _ in range(draw(st.integers(0, 2))):
        lines.append(draw(st.one_of(
            st.builds("%ignore {}".format, st.sampled_from(terminals + ['" "', "/\\s+/", "WS", "NOPE"])),
            st.builds("%import {}".format, st.sampled_from(_IMPORTS)),
            st.builds("%json {}".format, st.sampled_from(['{"type": "integer"}', "{", '{"$ref": "#/x"}', "5"])),
            st.just("%text_until \"END\""), st.just("%declare X"), st.just("%override start: \"a\""))))
    order = draw(st.permutations(lines))
    return "\n".join(order) + draw(st.sampled_from(["", "\n", "\n// comment", "\n\n   "]))


#: deep nesting: parentheses, optionals, alternatives or a chain of rules
deep_grammars = st.one_of(
    st.builds(lambda pair, n: f'start: {pair[0] * n}"a"{pair[1] * n}',
              st.sampled_from([("(", ")"), ("[", "]"), ('("b" | ', ")"), ("(", ")*")]), st.integers(1, 5000)),
    st.builds(lambda n: "start: r0\n" + "\n".join(f"r{i}: r{i + 1} \"x\" | \"y\"" for i in range(n)) + f"\nr{n}: \"z\"",
              st.integers(1, 2000)),
    st.builds(lambda n: "start: " + " ".join(['"a"'] * n), st.integers(1, 20000)),
    st.builds(lambda n: "start: " + " | ".join(f'"{i}"' for i in range(n)), st.integers(1, 20000)),
)

_SEEDS = [(GRAMMAR_DIR / f"{name}.lark").read_bytes() for name in GRAMMAR_NAMES]

# ------------------------------------------------------------------ tests


@fuzz_settings(80)
@given(text=grammars(), start=st.sampled_from(["start", "start", "a", "nope"]), seed=st.integers(0, 2**32 - 1))
def test_structured_grammars(worker, text: str, start: str, seed: int) -> None:
    worker.run((text, start, seed))


@fuzz_settings(10, shrink=False)
@given(text=deep_grammars, seed=st.integers(0, 2**32 - 1))
def test_deep_grammars(worker, text: str, seed: int) -> None:
    worker.run((text, "start", seed))


@fuzz_settings(80)
@given(data=mutated(_SEEDS), surrogates=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_mutated_grammars(worker, data: bytes, surrogates: bool, seed: int) -> None:
    worker.run((as_text(data, surrogates), "start", seed))
