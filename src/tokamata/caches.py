"""The owner of tokamata's process-wide caches: every module that keeps state across compiles
registers here how to drop it, and :func:`clear_caches` walks the registry.

Invariants:
- A cache is registered by the module that owns it, when that module is imported; a cache
  whose module was never imported does not exist, so nothing needs clearing there.
- Clearing never breaks what exists: constraints and matchers hold what they use, and later
  compiles just start cold (see each registered cache's own docstring).
- Process caches take no argument; vocabulary caches take the vocabulary whose attached
  state (shared token rows, boundary events) they drop.
"""

from __future__ import annotations

import threading
from typing import Callable

__all__ = ["clear_caches", "register_process_cache", "register_vocabulary_cache", "registered_caches"]

_lock = threading.Lock()
_process: dict[str, Callable[[], object]] = {}
_vocabulary: dict[str, Callable[[object], object]] = {}


def register_process_cache(name: str, clear: Callable[[], object]) -> None:
    """Register ``clear()`` as the way to drop the process-wide cache ``name``."""
    with _lock:
        _process[name] = clear


def register_vocabulary_cache(name: str, drop: Callable[[object], object]) -> None:
    """Register ``drop(vocab)`` as the way to drop the per-vocabulary cache ``name``."""
    with _lock:
        _vocabulary[name] = drop


def registered_caches() -> tuple[list[str], list[str]]:
    """The names of the registered process and vocabulary caches."""
    with _lock:
        return sorted(_process), sorted(_vocabulary)


def clear_caches(vocab=None) -> None:
    """Release process-wide caches: the interned automaton expressions with their memoized
    derivatives, the front ends' spellings of string literals (JSON Schema keys, enum
    strings) and, if ``vocab`` is given, the token rows and boundary events shared by its
    constraints. (The native arena of lexers is released only once it holds more than
    ``tokamata.automata.native.ARENA_NODES_KEPT`` nodes: expressions the front ends keep
    across calls, such as formats, keep their native counterparts while it lives.)

    Long-running servers that compile many distinct constraints can call this now and then;
    constraints and matchers that exist keep working (they hold what they use), later
    compiles just start cold.

    >>> import tokamata
    >>> tokamata.clear_caches()
    """
    with _lock:
        process = list(_process.values())
        vocabulary = list(_vocabulary.values())
    for clear in process:
        clear()
    if vocab is not None:
        for drop in vocabulary:
            drop(vocab)
