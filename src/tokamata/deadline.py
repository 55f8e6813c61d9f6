"""The compile-time budget: one deadline per compile, checked by every loop that can run long.

Invariants:
- A compile runs inside :func:`compile_deadline` (each front door of :mod:`tokamata.compile`,
  and the front ends' own entry points when called directly): the deadline starts at entry,
  ``Limits.max_compile_seconds`` later. Entries nested in a compile (a ``%json`` schema inside
  a Lark grammar, a front end called by a front door) share the outer deadline, so one
  budget covers the whole compile.
- :func:`check_deadline` raises ``LimitExceeded("max_compile_seconds", elapsed, limit)`` once
  the active deadline is past; outside a compile it does nothing. It reads the clock on its
  first call in a compile and then on every :data:`CLOCK_EVERY`-th. Loops whose length or
  cost depends on user input (document walks, schema expansion, intersections and
  complements, emission, the grammar builder's passes, Lark and GBNF lowering) call it, so a
  compile stops within :data:`CLOCK_EVERY` steps of its budget.
- The outermost entry first brings the process caches within their byte bound
  (:func:`tokamata.caches.enforce_cache_bounds`), so every front door does, before its budget
  starts; nested entries do not (a compile never evicts what it is building on). A compile in
  another thread meanwhile fares as under a concurrent ``clear_caches``: each lexer keeps the
  arena it was made with, and later expressions are just not shared with earlier ones.
- The deadline is per thread and per task (a :class:`contextvars.ContextVar`): concurrent
  compiles do not see each other's.
- A compile still running ``gc_pause.PAUSE_AFTER_SECONDS`` after the outermost entry has
  Python's cyclic garbage collector paused by :func:`check_deadline` until it exits
  (:mod:`tokamata.gc_pause`: most of a long compile's objects live until its end, and each
  collection would walk them and the whole heap again); :func:`check_deadline` resumes the
  collector early for a compile that has allocated more than
  ``gc_pause.MAX_PAUSED_ALLOCATIONS`` objects.
- :func:`remaining_seconds` is what is left of the active budget (the whole limit outside a
  compile): the lexer's lazy DFA gets it as its own budget, so states built while
  compiling and later while decoding count against the same ``max_compile_seconds``.
"""

from __future__ import annotations

import contextvars
import time
from typing import Optional

from . import gc_pause
from .caches import enforce_cache_bounds
from .errors import LimitExceeded
from .limits import Limits

__all__ = ["compile_deadline", "check_deadline", "remaining_seconds", "CLOCK_EVERY"]


class _Deadline:
    __slots__ = ("started", "limit", "gc", "calls")

    def __init__(self, limit: float):
        self.started = time.perf_counter()
        self.limit = limit
        self.gc = 0  # the collector: 0 running (not paused yet), 1 paused, 2 resumed early
        self.calls = 0  # check_deadline calls so far (the clock is read on every CLOCK_EVERY-th)


#: :func:`check_deadline` reads the clock on its first call and then on every this many (a
#: power of two): a compile of a small JSON Schema makes ~20-150 checks, and reading the clock
#: each time cost ~0.37 us per check (~10% of such a compile on the development VM)
CLOCK_EVERY = 4

_active: contextvars.ContextVar[Optional[_Deadline]] = contextvars.ContextVar("tokamata_deadline", default=None)
_active_deadline = _active.get  # (bound once: the check runs ~20-150 times per compile)


class compile_deadline:
    """Run the block under a deadline ``limits.max_compile_seconds`` from now, or under the
    enclosing compile's deadline when there is one (``with compile_deadline(limits): ...``).

    A class rather than a generator-based context manager: every compile enters one or two
    (front door, front end), and a generator's frame costs more than the check it guards.
    """

    __slots__ = ("limits", "deadline", "token")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.deadline: Optional[_Deadline] = None
        self.token: Optional[contextvars.Token[Optional[_Deadline]]] = None

    def __enter__(self) -> None:
        if _active.get() is not None:
            return  # nested: the outer compile's deadline applies
        enforce_cache_bounds()
        self.deadline = _Deadline(float(self.limits.max_compile_seconds))
        self.token = _active.set(self.deadline)

    def __exit__(self, *exc: object) -> None:
        deadline, token = self.deadline, self.token
        if deadline is None or token is None:
            return
        _active.reset(token)
        self.deadline = self.token = None
        if deadline.gc == 1:
            deadline.gc = 2
            gc_pause.resume()


def check_deadline() -> None:
    """Raise :class:`LimitExceeded` (``max_compile_seconds``) if the active compile is past
    its deadline."""
    deadline = _active_deadline()
    if deadline is not None:
        calls = deadline.calls
        deadline.calls = calls + 1
        if calls & (CLOCK_EVERY - 1):
            return
        elapsed = time.perf_counter() - deadline.started
        if deadline.gc == 0:
            if elapsed > gc_pause.PAUSE_AFTER_SECONDS:
                deadline.gc = 1
                gc_pause.pause()
        elif deadline.gc == 1 and gc_pause.over_budget():
            deadline.gc = 2
            gc_pause.resume()
        if elapsed > deadline.limit:
            raise LimitExceeded("max_compile_seconds", round(elapsed, 3), deadline.limit)


def remaining_seconds(limits: Limits) -> float:
    """Seconds left of the active compile's budget (raises once none is left); outside a
    compile, ``limits.max_compile_seconds``."""
    deadline = _active.get()
    if deadline is None:
        return float(limits.max_compile_seconds)
    check_deadline()
    return max(deadline.limit - (time.perf_counter() - deadline.started), 1e-6)
