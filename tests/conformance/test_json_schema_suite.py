"""JSON-Schema-Test-Suite (draft2020-12, draft7, with optional/format) through the JSON Schema
front end, the grammar engine and the Llama 3 tokenizer, against a committed baseline that
may only improve (see ``json_schema_suite.py`` for the categories and how to rewrite it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import json_schema_suite as suite  # noqa: E402


@pytest.mark.parametrize("draft", suite.DRAFTS)
def test_suite_never_gets_worse(draft):
    if not suite.SUITE.exists():
        pytest.skip(f"the JSON-Schema-Test-Suite is not at {suite.SUITE}")
    from real_tokenizers import llama3

    baseline = json.loads(suite.BASELINE.read_text())[draft]
    results = suite.run(draft, llama3())
    worse, false_positives = [], []
    for name, cases in results.items():
        for case, tests in cases.items():
            for test, category in tests.items():
                if category == "false_positive":
                    false_positives.append((name, case, test))
                before = baseline.get(name, {}).get(case, {}).get(test)
                if before is not None and suite.RANK[category] > suite.RANK[before]:
                    worse.append((name, case, test, before, category))
    assert not false_positives, f"invalid instances accepted: {false_positives[:10]}"
    assert not worse, f"{len(worse)} tests got worse than the baseline: {worse[:10]}"
