"""The fuzzers' minimized findings (``fuzz_findings.FINDINGS``) replayed as regressions: each
input runs through its target's ``run_input`` in a capped worker process (``fuzz_harness``),
as when it was found, with a 10 s timeout of the worker's CPU time (the fuzzers' own; the
12,000-optional GBNF finding replays in 2 s on a quiet machine and took 19 s of wall time on a
machine loaded 10-fold, when the timeout was wall time and an earlier hang had lowered it). A fixed finding must give a clean outcome (a constraint that passes the
walk, or a tokamata error); an open one (a front-end bug owned by another change) is a strict
expected failure, so that its fix shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz_findings import FINDINGS
from fuzz_harness import Finding, Worker

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def workers():
    started: dict[str, Worker] = {}
    yield started
    for w in started.values():
        w.close()


def _bypass_known(worker: Worker, value):
    # replay the input itself, not the fuzzers' step-around for open findings
    import fuzz_harness
    known, fuzz_harness.fuzz_findings.known_open = fuzz_harness.fuzz_findings.known_open, lambda *_: None
    try:
        return worker.run(value)
    finally:
        fuzz_harness.fuzz_findings.known_open = known


@pytest.mark.parametrize("finding", [
    pytest.param(f, id=f"{f.target}-{i}", marks=() if f.fixed else pytest.mark.xfail(raises=Finding, strict=True,
                                                                                     reason=f.what))
    for i, f in enumerate(FINDINGS)])
def test_finding(workers, finding) -> None:
    if finding.target not in workers:
        workers[finding.target] = Worker(str(HERE / f"{finding.target}.py"), timeout=10.0,
                                          shrink_after_hang=False)
    _bypass_known(workers[finding.target], finding.input)
