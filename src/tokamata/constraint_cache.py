"""A server's cache of compiled constraints over one vocabulary, keyed by recipe.

Invariants:
- The key of an entry is the :class:`~tokamata.constraint.Recipe` a front door records: the
  kind, the spec (text, or a schema's JSON text with its key order) and every option with
  its default filled in. Equal keys give the very same :class:`~tokamata.Constraint` object
  while it is cached; a compile is a pure function of the key, so every process (every rank
  of a tensor-parallel server) that asks for one key gets an equal constraint. The one
  exception is ``Limits.max_compile_seconds``: a compile near that budget may pass on one
  machine and fail on a slower one.
- Thread-safe, with in-flight de-duplication: while a key compiles, other threads asking for
  it wait for that compile and share its result or its error; the compile itself runs
  outside the cache's lock, so other keys compile meanwhile.
- Errors: a compile error that the key alone decides (:class:`InvalidSyntax`,
  :class:`Unsupported`, :class:`SchemaError`, :class:`InvalidArgument`, and
  :class:`LimitExceeded` of every limit but ``max_compile_seconds``) is cached as the error
  (a server that is sent one bad schema a thousand times compiles it once) and raised as a
  fresh copy to each caller; a ``max_compile_seconds`` failure depends on the machine's load
  and is not cached (the next request compiles again).
- Bounded by bytes: the total of the entries' :meth:`Constraint.memory_bytes` estimates
  (constraints grow while decoding: an entry is measured again on every hit, and every
  entry before each insertion; an error counts 256 bytes) stays at most ``max_bytes`` after every insertion, evicting
  least recently used entries first; an entry bigger than the whole budget is returned but
  not kept. Eviction only drops the cache's reference: constraints in use keep working.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Any

from .compile import build, recipe
from .constraint import Constraint, Recipe
from .errors import InvalidArgument, LimitExceeded, TokamataError

__all__ = ["ConstraintCache"]

#: what a cached error counts against ``max_bytes``
ERROR_BYTES = 256


class ConstraintCache:
    """Compiled constraints over ``vocab`` by (kind, spec, options), at most ``max_bytes``
    (estimated: :meth:`Constraint.memory_bytes`).

    >>> import tokamata
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", None], eos_token_ids=[2])
    >>> cache = tokamata.ConstraintCache(vocab, max_bytes=1 << 20)
    >>> c = cache.get("regex", "a+b")
    >>> c is cache.get("regex", "a+b"), cache.hits, cache.misses
    (True, 1, 1)
    >>> cache.get("json_schema", {"type": "integer"}).recipe.kind
    'json_schema'
    """

    def __init__(self, vocab, *, max_bytes: int = 1 << 30) -> None:
        if not hasattr(vocab, "token_bytes"):
            raise InvalidArgument(f"vocab must be a tokamata.Vocabulary, got {type(vocab).__name__}")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise InvalidArgument(f"max_bytes must be a non-negative int, got {max_bytes!r}")
        self.vocab = vocab
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        # recipe -> (constraint or error, bytes), least recently used first
        self._entries: OrderedDict[Recipe, tuple[Constraint | TokamataError, int]] = OrderedDict()
        self._pending: dict[Recipe, Future] = {}
        self._bytes = 0
        self.hits = 0  #: requests answered from the cache (or by a compile in flight)
        self.misses = 0  #: compiles run
        self.evictions = 0  #: entries dropped to stay within ``max_bytes``

    def get(self, kind: str, spec: Any = None, **options: Any) -> Constraint:
        """The constraint ``tokamata.compile_<kind>(spec, vocab, **options)`` gives
        (``kind``: ``"regex"``, ``"grammar"``, ``"gbnf"``, ``"json"``, ``"json_schema"``),
        compiled at most once per key; raises what that compile raises."""
        return self.get_recipe(recipe(kind, spec, **options))

    def get_recipe(self, key: Recipe) -> Constraint:
        """The constraint of a recipe (as :meth:`get`)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self.hits += 1
                self._entries.move_to_end(key)
                value = entry[0]
                if isinstance(value, Constraint):
                    self._resize(key, value)
            else:
                pending = self._pending.get(key)
                if pending is None:
                    future: Future = Future()
                    self._pending[key] = future
                    self.misses += 1
                else:
                    self.hits += 1
        if entry is not None:
            return _result(value)
        if pending is not None:
            return _result(pending.result())
        try:
            value = build(key, self.vocab)
        except TokamataError as error:
            value = error
        except BaseException as error:  # not tokamata's: the waiters get it, nothing is cached
            with self._lock:
                del self._pending[key]
            future.set_exception(error)
            raise
        with self._lock:
            del self._pending[key]
            if _cacheable(value):
                size = ERROR_BYTES if isinstance(value, TokamataError) else value.memory_bytes()
                if size <= self.max_bytes:
                    self._remeasure()
                    self._entries[key] = (value, size)
                    self._bytes += size
                    self._evict()
        future.set_result(value)
        return _result(value)

    def _remeasure(self) -> None:
        """Measure every entry again (under the lock, before an insertion)."""
        total = 0
        for key, (value, size) in self._entries.items():
            if isinstance(value, Constraint):
                size = value.memory_bytes()
                self._entries[key] = (value, size)
            total += size
        self._bytes = total

    def _resize(self, key: Recipe, constraint: Constraint) -> None:
        """Re-measure a hit entry (under the lock); may evict others, never the entry itself."""
        old = self._entries[key][1]
        size = constraint.memory_bytes()
        if size != old:
            self._entries[key] = (constraint, size)
            self._bytes += size - old
            self._evict(keep=key)

    def _evict(self, keep: Recipe | None = None) -> None:
        while self._bytes > self.max_bytes and self._entries:
            victim = next(iter(self._entries))
            if victim == keep:
                if len(self._entries) == 1:
                    return
                self._entries.move_to_end(victim)
                continue
            _, size = self._entries.pop(victim)
            self._bytes -= size
            self.evictions += 1

    @property
    def num_bytes(self) -> int:
        """The estimated bytes of the cached entries, as last measured."""
        with self._lock:
            return self._bytes

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        """Drop every entry (constraints in use keep working)."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def __repr__(self) -> str:
        return (f"ConstraintCache(entries={len(self)}, bytes={self.num_bytes}, max_bytes={self.max_bytes}, "
                f"hits={self.hits}, misses={self.misses})")


def _cacheable(value: Constraint | TokamataError) -> bool:
    """A constraint, or an error the key alone decides (not a compile-time budget)."""
    return not (isinstance(value, LimitExceeded) and value.limit == "max_compile_seconds")


def _result(value: Constraint | TokamataError) -> Constraint:
    if isinstance(value, TokamataError):
        raise copy.copy(value).with_traceback(None)
    return value
