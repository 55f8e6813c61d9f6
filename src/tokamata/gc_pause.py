"""Python's cyclic garbage collector paused while a compile runs.

A compile allocates thousands of small container objects (schema nodes, shapes, interned
expressions, grammar rules), most of which survive until the compile ends. Each automatic
collection of the collector walks every young survivor, and its full collections walk the
whole heap (the tokenizer, pydantic, numpy, ...). Pausing the collector for the rest of a
compile that has run ``PAUSE_AFTER_SECONDS`` saves the walks a long compile's growing heap
would get; the garbage a compile leaves is almost all freed by reference counting, and the
collector resumes (and catches up at its next threshold) when the compile ends. Short
compiles are not paused: their one or two collections only move to the compile's end (on
the tool-call models of ``benchmarks/bench_types.py`` the collector's time in the timed
window was the same, ~0.3 ms of ~3 ms). Measured on a 1% MaskBench sample (115 schemas, one
process, loaded machine): the collector's CPU time in compile + first mask went from 153 ms
(never paused) to 142 ms (paused after 3 ms; 128 ms when every compile is paused, which
measured a median 1-13% slower end to end); a small gain, within the machine's noise end to end.

Invariants:
- :func:`pause` / :func:`resume` nest and may come from several threads: the collector is
  disabled by the first :func:`pause` only if it was enabled then, and enabled again by the
  :func:`resume` that ends the last pause (never enabled when the caller had disabled it).
  A caller who calls ``gc.enable()``/``gc.disable()`` while a compile runs in another thread
  may see that overridden when the compile ends.
- The pause is bounded: :func:`over_budget` turns True once ``MAX_PAUSED_ALLOCATIONS`` container
  objects more are alive than when the collector last ran, and the compile's deadline check
  (:func:`tokamata.deadline.check_deadline`) then resumes the collector for the rest of that
  compile, so a large compile never holds more uncollected cyclic garbage than that.
"""

from __future__ import annotations

import gc
import threading

__all__ = ["pause", "resume", "over_budget", "MAX_PAUSED_ALLOCATIONS", "PAUSE_AFTER_SECONDS"]

#: net container allocations a pause lets pass before the compile resumes the collector
MAX_PAUSED_ALLOCATIONS = 200_000
#: a compile's wall-clock seconds before its deadline checks pause the collector
PAUSE_AFTER_SECONDS = 0.003

_lock = threading.Lock()
_pauses = 0
_was_enabled = False


def pause() -> None:
    """Start a pause (nests; see the module docstring)."""
    global _pauses, _was_enabled
    with _lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            if _was_enabled:
                gc.disable()
        _pauses += 1


def resume() -> None:
    """End a pause started by :func:`pause`; the last one enables the collector again if the
    first found it enabled."""
    global _pauses
    with _lock:
        _pauses -= 1
        if _pauses == 0 and _was_enabled:
            gc.enable()


def over_budget() -> bool:
    """Whether the young generation has grown past ``MAX_PAUSED_ALLOCATIONS`` objects."""
    return gc.get_count()[0] > MAX_PAUSED_ALLOCATIONS
