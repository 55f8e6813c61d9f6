"""Python's cyclic garbage collector paused while a compile runs.

A compile allocates thousands of small container objects (schema nodes, shapes, interned
expressions, grammar rules), most of which survive until the compile ends. Each automatic
collection of the collector walks every young survivor, and its full collections walk the
whole heap (the tokenizer, pydantic, numpy, ...): on the 20 tool-call models of
``benchmarks/bench_types.py`` that was ~15% of ``compile_type``'s CPU time. Pausing the
collector for the compile removes those walks; the garbage a compile leaves is almost all
freed by reference counting, and the collector resumes (and catches up at its next
threshold) when the compile ends.

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

__all__ = ["pause", "resume", "over_budget", "MAX_PAUSED_ALLOCATIONS"]

#: net container allocations a pause lets pass before the compile resumes the collector
MAX_PAUSED_ALLOCATIONS = 200_000

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
