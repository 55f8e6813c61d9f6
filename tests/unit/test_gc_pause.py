"""The cyclic collector is paused for the rest of a compile that has run a while, and only
then (tokamata.gc_pause).

A paused collector is invisible to the results (masks are the same: the compile tests
check that); what these tests pin is the state of the collector around compiles: paused by
a deadline check past ``PAUSE_AFTER_SECONDS`` (0 here, so the first check pauses), not
before; enabled again after every compile, errors included; left disabled when the caller
disabled it; nested and concurrent pauses ending with the last one; the allocation bound.
"""

from __future__ import annotations

import gc
import threading

import pytest

import tokamata
from tokamata import gc_pause
from tokamata.deadline import CLOCK_EVERY, check_deadline, compile_deadline
from tokamata.limits import Limits

VOCAB = tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(128)] + [None], eos_token_ids=[128])


@pytest.fixture(autouse=True)
def _collector_enabled(monkeypatch):
    monkeypatch.setattr(gc_pause, "PAUSE_AFTER_SECONDS", 0.0)
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_inside_a_compile_and_enabled_after():
    seen = []
    with compile_deadline(Limits()):
        seen.append(gc.isenabled())  # no deadline check yet
        check_deadline()
        seen.append(gc.isenabled())
        with compile_deadline(Limits()):  # nested: shares the pause
            check_deadline()
            seen.append(gc.isenabled())
        seen.append(gc.isenabled())
    assert seen == [True, False, False, False]
    assert gc.isenabled()
    tokamata.compile_json_schema({"type": "object", "properties": {"a": {"type": "integer"}}}, VOCAB)
    assert gc.isenabled()


def test_a_short_compile_is_not_paused(monkeypatch):
    monkeypatch.setattr(gc_pause, "PAUSE_AFTER_SECONDS", 3600.0)
    with compile_deadline(Limits()):
        check_deadline()
        assert gc.isenabled()
    assert gc.isenabled()


def test_enabled_again_after_a_failed_compile():
    with pytest.raises(tokamata.TokamataError):
        tokamata.compile_json_schema({"type": "object", "minProperties": "x"}, VOCAB)
    assert gc.isenabled()
    with pytest.raises(tokamata.TokamataError):
        tokamata.compile_regex("(", VOCAB)
    assert gc.isenabled()


def test_left_disabled_when_the_caller_disabled_it():
    gc.disable()
    tokamata.compile_json_schema({"type": "string", "maxLength": 3}, VOCAB)
    assert not gc.isenabled()
    with compile_deadline(Limits()):
        check_deadline()
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_concurrent_compiles_enable_it_once_the_last_ends():
    inside = threading.Barrier(3)
    leave = threading.Event()
    states = []

    def compile_and_wait():
        with compile_deadline(Limits()):
            check_deadline()
            inside.wait()
            leave.wait()

    threads = [threading.Thread(target=compile_and_wait) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    states.append(gc.isenabled())
    leave.set()
    for t in threads:
        t.join()
    states.append(gc.isenabled())
    assert states == [False, True]


def test_a_compile_past_the_allocation_bound_resumes_the_collector(monkeypatch):
    monkeypatch.setattr(gc_pause, "MAX_PAUSED_ALLOCATIONS", 50)
    with compile_deadline(Limits()):
        check_deadline()
        assert not gc.isenabled()
        keep = [[i] for i in range(200)]  # container allocations past the bound
        for _ in range(CLOCK_EVERY):  # (the checks that read the clock look at the bound)
            check_deadline()
        assert gc.isenabled()
        check_deadline()  # (resumed for good: not paused again)
        assert gc.isenabled()
        del keep
    assert gc.isenabled()
