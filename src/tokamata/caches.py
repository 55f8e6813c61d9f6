"""The owner of tokamata's process-wide caches: every module that keeps state across compiles
registers here how to drop it, and :func:`clear_caches` walks the registry; the caches that
grow with what a process compiles report their size in bytes, and their total is bounded.

Invariants:
- A cache is registered by the module that owns it, when that module is imported; a cache
  whose module was never imported does not exist, so nothing needs clearing there.
- Clearing never breaks what exists: constraints and matchers hold what they use, and later
  compiles just start cold (see each registered cache's own docstring).
- Process caches take no argument; vocabulary caches take the vocabulary whose attached
  state (shared token rows, boundary events) they drop.
- Bounded by bytes (:class:`CacheBounds`, set with :func:`set_cache_bounds`): a process cache
  registered with ``size`` reports its bytes in O(1) (an estimate, documented by its owner);
  :func:`enforce_cache_bounds` runs at the start of every compile (:mod:`.deadline`) and, while
  the sizes' total is over ``CacheBounds.process_bytes``, evicts the largest such cache whole
  (its ``evict``, else its ``clear``). So a process that compiles constraint after constraint
  holds at most the bound plus what one compile adds, plus what live constraints hold.
- Per-vocabulary token-row caches hold at most ``CacheBounds.shared_rows_bytes`` of rows each
  (:func:`shared_row_capacity`); once full, a new row replaces one that no live constraint
  holds and that was not used lately (CLOCK), else it stays with the constraint that made it.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Callable, Optional

from .errors import InvalidArgument

__all__ = ["CacheBounds", "cache_bounds", "cache_bytes", "clear_caches", "enforce_cache_bounds",
           "register_process_cache", "register_vocabulary_cache", "registered_caches", "set_cache_bounds",
           "shared_row_capacity"]

_lock = threading.Lock()
_process: dict[str, Callable[[], object]] = {}
_vocabulary: dict[str, Callable[[object], object]] = {}
_sizes: dict[str, tuple[Callable[[], int], Callable[[], object]]] = {}


@dataclasses.dataclass(frozen=True)
class CacheBounds:
    """The byte bounds of tokamata's process-wide caches (:func:`set_cache_bounds`).

    :param process_bytes: the most the sized process caches (interned automaton expressions
        with their memoized derivatives, the native expression arena) hold together between
        compiles; past it, the largest is dropped at the start of the next compile.
    :param shared_rows_bytes: the most token rows one vocabulary's shared row cache holds
        (each row is ``ceil(V/32) * 4`` bytes; once full, a new row replaces one no live constraint
        holds, else it is not shared).

    >>> import tokamata
    >>> tokamata.cache_bounds().process_bytes // 2**20
    256
    """

    process_bytes: int = 256 * 2 ** 20
    shared_rows_bytes: int = 16 * 2 ** 20

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidArgument(f"CacheBounds.{field.name} must be a non-negative int, not {value!r}")


_bounds = CacheBounds()


def cache_bounds() -> CacheBounds:
    """The bounds in force."""
    return _bounds


def set_cache_bounds(bounds: Optional[CacheBounds] = None, **fields: int) -> CacheBounds:
    """Set the bounds (a whole :class:`CacheBounds`, or some of its fields by name) and return
    the previous ones. A smaller ``process_bytes`` takes effect at the next compile; a new
    ``shared_rows_bytes`` for row caches made after the call (``clear_caches(vocab)`` remakes
    a vocabulary's).

    >>> import tokamata
    >>> old = tokamata.set_cache_bounds(process_bytes=64 * 2**20)
    >>> tokamata.cache_bounds().process_bytes == 64 * 2**20
    True
    >>> _ = tokamata.set_cache_bounds(old)
    """
    global _bounds
    new = dataclasses.replace(bounds or _bounds, **fields)
    with _lock:
        old, _bounds = _bounds, new
    return old


def shared_row_capacity(row_bytes: int) -> int:
    """How many rows of ``row_bytes`` bytes a vocabulary's shared row cache holds (at least 1)."""
    return max(1, _bounds.shared_rows_bytes // max(1, row_bytes))


def register_process_cache(name: str, clear: Callable[[], object], *, size: Optional[Callable[[], int]] = None,
                           evict: Optional[Callable[[], object]] = None) -> None:
    """Register ``clear()`` as the way to drop the process-wide cache ``name``; with ``size()``
    (its bytes, O(1)), the cache counts against ``CacheBounds.process_bytes`` and is dropped
    whole by ``evict()`` (default: ``clear()``) when over."""
    with _lock:
        _process[name] = clear
        if size is not None:
            _sizes[name] = (size, evict or clear)


def register_vocabulary_cache(name: str, drop: Callable[[object], object]) -> None:
    """Register ``drop(vocab)`` as the way to drop the per-vocabulary cache ``name``."""
    with _lock:
        _vocabulary[name] = drop


def registered_caches() -> tuple[list[str], list[str]]:
    """The names of the registered process and vocabulary caches."""
    with _lock:
        return sorted(_process), sorted(_vocabulary)


def cache_bytes() -> dict[str, int]:
    """The bytes each sized process cache holds now (estimates; see :class:`CacheBounds`).

    >>> import tokamata
    >>> all(n >= 0 for n in tokamata.cache_bytes().values())
    True
    """
    with _lock:
        sized = list(_sizes.items())
    return {name: int(size()) for name, (size, _) in sized}


def enforce_cache_bounds() -> list[str]:
    """Evict sized process caches, largest first, until their total is within
    ``CacheBounds.process_bytes``; returns the names of those evicted."""
    sizes = cache_bytes()
    total = sum(sizes.values())
    evicted: list[str] = []
    if total <= _bounds.process_bytes:
        return evicted
    for name, size in sorted(sizes.items(), key=lambda item: -item[1]):
        if total <= _bounds.process_bytes:
            break
        with _lock:
            evict = _sizes[name][1]
        evict()
        evicted.append(name)
        total -= size
    return evicted


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
