"""The fuzz tests' worker fixture: one capped child process per test module (``fuzz_harness``),
fed every input of the module's tests; the terminal summary says how many inputs each ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz_harness import Worker

_COUNTS: dict[str, tuple[int, int, str]] = {}


@pytest.fixture(scope="module")
def worker(request):
    module = Path(request.module.__file__)
    w = Worker(str(module))
    yield w
    w.close()
    common = ", ".join(f"{kind}: {n}" for kind, n in w.outcomes.most_common(6))
    _COUNTS[module.stem] = (w.inputs, w.restarts, common)


def pytest_collection_modifyitems(items) -> None:
    # fuzz inputs are large on purpose: Hypothesis warns when it prints them
    for item in items:
        if "fuzz" in item.nodeid:
            item.add_marker(pytest.mark.filterwarnings("ignore:Generating overly large repr"))


def pytest_terminal_summary(terminalreporter) -> None:
    if _COUNTS:
        terminalreporter.write_sep("-", "fuzz inputs run (worker restarts)")
        for name, (inputs, restarts, common) in sorted(_COUNTS.items()):
            terminalreporter.write_line(f"{name}: {inputs} inputs ({restarts} restarts); {common}")
