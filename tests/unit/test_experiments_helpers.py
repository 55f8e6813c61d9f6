"""The pure helpers of benchmarks/experiments.py (no model): the answer-format check of the
seed 000 Table 3 experiment, the pair ratio of seed 004's, and the question generator."""

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import experiments  # noqa: E402

FORMAT_CASES = [  # (model output, the letter it gives or None)
    ('{"Final Answer": "B"}', "B"),
    ('  {"Final Answer":"D"}\n', "D"),
    ('```json\n{"Final Answer": "A"}\n```', "A"),
    ('```json\n{"Final Answer": "A"}', None),          # fence not closed
    ('```', None),
    ('{"Final Answer": "E"}', None),                    # not a choice
    ('{"Final Answer": "A", "Solution": "x"}', None),   # extra key
    ('{"final answer": "A"}', None),
    ('The answer is A', None),
    ('["A"]', None),
    ('{"Final Answer": "A"} and more', None),
    ('', None),
]


@pytest.mark.parametrize("text,letter", FORMAT_CASES)
def test_final_answer(text, letter):
    assert experiments.final_answer(text) == letter


def test_constrained_language_conforms():
    # every sentence of the experiment's regex is a conforming answer (the target rate 1.0)
    import re
    for letter in "ABCD":
        text = json.dumps({"Final Answer": letter})
        assert re.fullmatch(experiments.ANSWER_RE, text)
        assert experiments.final_answer(text) == letter


@pytest.mark.parametrize("a,b,expected", [(math.log(0.3), math.log(0.1), 0.75), (-math.inf, 0.0, 0.0),
                                          (0.0, -math.inf, 1.0), (-1000.0, -1000.0, 0.5)])
def test_ratio(a, b, expected):
    assert experiments.ratio(a, b) == pytest.approx(expected)


def test_ratio_of_nothing_is_nan():
    assert math.isnan(experiments.ratio(-math.inf, -math.inf))


def test_questions_are_fixed_and_answerable():
    qs = experiments.questions(50)
    assert qs == experiments.questions(50) and len(set(qs)) == 50
    for text, letter in qs:
        expr = text.split("What is ")[1].split("?")[0]
        options = dict(line.split(". ") for line in text.splitlines()[1:])
        assert sorted(options) == list("ABCD") and len(set(options.values())) == 4
        assert int(options[letter]) == eval(expr)  # noqa: S307 (our own arithmetic)


SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


@pytest.mark.parametrize("text,expected", [('{"a": 1}', (True, True)), ('{"a": "x"}', (True, False)),
                                           ('{"b": 1}', (True, False)), ('{"a": 1', (False, False)),
                                           ('', (False, False)), ('{"a": 1} {}', (False, False))])
def test_parses(text, expected):
    assert experiments.parses(text, SCHEMA) == expected


def test_budget_table_counts_each_cap():
    def run(json_ok, valid, error=False):
        return {"json": json_ok, "valid": valid, **({"error": "InvalidArgument: too small"} if error else {})}

    rows = [{"runs": {"16/plain": run(False, False), "16/budget": run(False, False, error=True),
                      "32/plain": run(True, True), "32/budget": run(True, True)}},
            {"runs": {"16/plain": run(False, False), "16/budget": run(True, False),
                      "32/plain": run(False, False), "32/budget": run(True, True)}}]
    lines = experiments.budget_table(rows, [16, 32])
    assert lines[2] == "| 16 | 0/2 (0.00) | 0/2 | 1/2 (0.50) | 0/2 | 1 |"
    assert lines[3] == "| 32 | 1/2 (0.50) | 1/2 | 2/2 (1.00) | 2/2 | 0 |"
