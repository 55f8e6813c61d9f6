"""The compile deadline: ``check_deadline`` raises within ``CLOCK_EVERY`` checks of the
budget's end (it reads the clock on the first check and then on every ``CLOCK_EVERY``-th),
nested entries share the outer budget, and nothing is raised outside a compile."""

from __future__ import annotations

import time

import pytest

from tokamata import LimitExceeded, Limits
from tokamata.deadline import CLOCK_EVERY, check_deadline, compile_deadline, remaining_seconds


def _checks_until_raised(limits: Limits, sleep: float) -> int:
    with compile_deadline(limits):
        time.sleep(sleep)
        for count in range(1, 10 * CLOCK_EVERY):
            try:
                check_deadline()
            except LimitExceeded as error:
                assert error.limit == "max_compile_seconds"
                return count
    raise AssertionError("the deadline never fired")


def test_first_check_reads_the_clock():
    assert _checks_until_raised(Limits(max_compile_seconds=1e-3), 0.01) == 1


def test_raised_within_clock_every_checks():
    with compile_deadline(Limits(max_compile_seconds=0.02)):
        check_deadline()  # (the first check: in time)
        time.sleep(0.04)
        for count in range(1, CLOCK_EVERY + 1):
            try:
                check_deadline()
            except LimitExceeded:
                break
        else:
            raise AssertionError(f"no LimitExceeded within {CLOCK_EVERY} checks past the deadline")


def test_nested_entries_share_the_outer_budget():
    with compile_deadline(Limits(max_compile_seconds=1e-3)):
        time.sleep(0.01)
        with compile_deadline(Limits(max_compile_seconds=100.0)):  # nested: not a new budget
            with pytest.raises(LimitExceeded):
                check_deadline()


def test_nothing_outside_a_compile():
    for _ in range(3 * CLOCK_EVERY):
        check_deadline()
    assert remaining_seconds(Limits(max_compile_seconds=7.0)) == 7.0
