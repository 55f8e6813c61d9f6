"""The fuzz harness's hang verdicts (tests/fuzz_harness.py): an input is a hang when the worker
spends its timeout in CPU time, or sits blocked for WALL_FACTOR times it; a slow input on a
loaded machine is not (the deadline counts the worker's CPU time). Findings go to a temporary
directory."""

from __future__ import annotations

import time

import pytest

import fuzz_harness
from fuzz_harness import Finding, Worker

TARGET = '''
import time

def run_input(value):
    kind, seconds = value
    end = time.monotonic() + seconds
    if kind == "spin":
        while time.monotonic() < end:
            pass
    elif kind == "sleep":
        time.sleep(seconds)
    return f"ran {kind}"
'''


@pytest.fixture
def worker(tmp_path, monkeypatch):
    monkeypatch.setattr(fuzz_harness, "FINDINGS", tmp_path / "findings")
    target = tmp_path / "target_module.py"
    target.write_text(TARGET)
    w = Worker(str(target), timeout=0.5, memory_mb=1024, shrink_after_hang=False)
    yield w
    w.close()


def test_a_quick_input_gets_its_outcome(worker):
    assert worker.run(("spin", 0.05)) == "ran spin"


def test_spinning_past_the_timeout_is_a_hang(worker):
    t0 = time.monotonic()
    with pytest.raises(Finding, match=r"hang: no answer within 0.5 s of CPU time"):
        worker.run(("spin", 60))
    assert time.monotonic() - t0 < 0.5 * fuzz_harness.WALL_FACTOR + 5
    assert worker.timeout == 0.5  # (shrink_after_hang=False keeps it)
    assert worker.run(("spin", 0.01)) == "ran spin"  # a fresh worker took over


def test_blocked_without_cpu_ends_at_the_wall_cap(worker):
    t0 = time.monotonic()
    with pytest.raises(Finding, match="hang"):
        worker.run(("sleep", 60))
    elapsed = time.monotonic() - t0
    assert 0.5 <= elapsed < 0.5 * fuzz_harness.WALL_FACTOR + 5


def test_a_hang_lowers_the_timeout_for_shrinking(tmp_path, monkeypatch):
    monkeypatch.setattr(fuzz_harness, "FINDINGS", tmp_path / "findings")
    target = tmp_path / "target_module.py"
    target.write_text(TARGET)
    w = Worker(str(target), timeout=1.0, memory_mb=1024)
    monkeypatch.setattr(fuzz_harness, "SHRINK_TIMEOUT", 0.25)
    try:
        with pytest.raises(Finding, match="within 1 s"):
            w.run(("spin", 60))
        assert w.timeout == 0.25
    finally:
        w.close()
