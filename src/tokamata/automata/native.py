"""The bridge from Python expressions (:mod:`.derivatives`) to the native arena
(``_core.ExprArena``), in which grammar lexers are expanded by C++ (``_core.DerivativeDfa``).

Invariants:
- ``Bridge.to_arena(expr)`` is the id of an arena node with the same language as ``expr``.
  It is memoized on the expression (``Expr._native`` packs the bridge's generation and the
  id), so a subterm shared by terminals or schemas is imported once per generation; imports
  are batched (one call per expression tree).
- Every kind is imported as plain data, the parametric leaves included: text until a stop
  string as its stop bytes, KMP position and pending character; decimal divisibility as
  ``k``, phase and fraction digits read, with ``p`` and the remainder as base-10**9 limbs
  (exact for any size); a substring leaf as its state, pending bytes (packed in one int) and
  the text's code points (the arena builds, once per text, the suffix automaton that Python
  builds only for its own derivatives). The arena derives all of them natively (no
  callback into Python), and its constructors normalize as the Python ones do, so a
  language reached in either space has one node.
- ``clear_interned()`` (``tokamata.clear_caches``) starts a new bridge (a new arena and
  generation) once the arena's footprint (its nodes plus its suffix automata's states) is
  more than ``ARENA_NODES_KEPT``. Lexers made before keep their arena (and keep working);
  expressions memoized for an older generation are imported again when used. The process
  caches' byte bound (:class:`tokamata.caches.CacheBounds`) counts the arena's
  ``memory_bytes`` and, when over, starts a new bridge whatever its footprint.
- Structural keys of native lexer states are ``key_base`` + node id, where ``key_base``
  (bit 62 and the generation) keeps them apart from the Python engine's keys (expression
  ids, far below 2**62) and from other generations' keys, in the shared row caches.
"""

from __future__ import annotations

import itertools
import struct
import threading
from array import array

import numpy as np

from .. import _core
from ..caches import register_process_cache
from . import derivatives as d

__all__ = ["Bridge", "bridge", "reset"]

_LIMB = 10 ** 9  # DECMOD's p and remainder cross as base-10**9 limbs, low first
_generations = itertools.count(1)


_mask_words: dict[int, tuple[int, ...]] = {}
_EIGHT_WORDS = struct.Struct("<8i")


def _words(mask: int) -> tuple[int, ...]:
    """A 256-bit mask as eight int32 words, low first (cached: masks repeat)."""
    words = _mask_words.get(mask)
    if words is None:
        words = _EIGHT_WORDS.unpack(mask.to_bytes(32, "little", signed=False))
        if len(_mask_words) < 65536:
            _mask_words[mask] = words
    return words


class Bridge:
    """One arena and its generation."""

    def __init__(self) -> None:
        from ..limits import DEFAULT_LIMITS

        self.arena = _core.ExprArena()
        self.generation = next(_generations)
        #: arena keys of this generation: bit 62, then the generation above the node id
        self.key_base = (1 << 62) | (self.generation << 32)
        # emptiness searches of intersections/differences made by derivatives use the default
        # budget, as the Python constructors do (derivatives pass no limits)
        self.arena.set_search_budget(DEFAULT_LIMITS.max_dfa_states)

    def to_arena(self, node: d.Expr) -> int:
        """The arena id of ``node`` (imported with every subterm not imported yet)."""
        found = node._native
        if found >> 32 == self.generation:
            return found & 0xFFFFFFFF
        # (no lock: the arena dedupes, so a race at worst imports a node twice)
        _import(self, [node])
        return node._native & 0xFFFFFFFF

    def to_arena_many(self, nodes: "list[d.Expr]") -> list[int]:
        """The arena ids of ``nodes``, those not imported yet in one batch."""
        generation = self.generation
        missing = [node for node in nodes if node._native >> 32 != generation]
        if missing:
            _import(self, missing)
        return [node._native & 0xFFFFFFFF for node in nodes]

    def tagged_many(self, nodes: "list[d.Expr | None]") -> list[int]:
        """The arena ids of ``derivatives.tagged(nodes[i], i)`` (``NOTHING`` where ``nodes[i]``
        is None or ``NOTHING``, as ``tagged`` gives), made in the arena without building the
        tagged Python expressions: the same ids as importing those expressions (the arena
        hash-conses a tag as ``tagged`` does)."""
        present = [node for node in nodes if node is not None and node is not d.NOTHING]
        ids = iter(self.to_arena_many(present))
        records: list[int] = []
        for index, node in enumerate(nodes):
            if node is None or node is d.NOTHING:
                records.append(d.Kind.NOTHING)
            else:
                records.extend((d.Kind.TAGGED, next(ids), index))
        if not records:
            return []
        return list(self.arena.import_nodes(np.frombuffer(array("i", records), dtype=np.int32)))


def _limbs(value: int, records: list[int]) -> None:
    """``value`` (a natural) as its number of base-10**9 limbs, then the limbs, low first."""
    limbs = []
    while value:
        value, limb = divmod(value, _LIMB)
        limbs.append(limb)
    records.append(len(limbs))
    records.extend(limbs)


#: ``clear_caches()`` keeps the arena while it holds at most this many nodes (about 200 bytes
#: each): like the Python expressions that outlive ``clear_interned()`` in the front ends'
#: caches (formats, key literals, JSON string pieces), whose memoized derivatives are kept
#: with them, the arena keeps their native counterparts, so a format is imported and derived
#: once per process, not once per schema.
ARENA_NODES_KEPT = 400_000


def _import(bridge: Bridge, roots: "list[d.Expr]") -> int:
    """Import the subterms of ``roots`` not imported yet, in one batch; returns how many nodes
    the batch imported (each imported node's ``_native`` then holds its arena id). While the
    batch is built, its nodes' ``_native`` is negative, ``-1 - (batch << 32 | index)``; the arena ids replace
    it once the arena has them (another thread may import the same nodes meanwhile: its batch
    number differs, and hash-consing makes the double import harmless)."""
    generation = bridge.generation
    mark = generation << 32
    serial = next(_batches) & 0x3FFFFFFF
    in_batch = -1 - (serial << 32)  # the marks of this batch are in_batch - index
    records: list[int] = []  # (converted once at the end: an array's append parses its argument)
    order: list[d.Expr] = []
    K = d.Kind
    CONCAT, ALT, REPEAT, TAGGED, BYTES, UTF8 = K.CONCAT, K.ALT, K.REPEAT, K.TAGGED, K.BYTES, K.UTF8
    AND, DIFF, UNTIL, DECMOD, SUBSTRING = K.AND, K.DIFF, K.UNTIL, K.DECMOD, K.SUBSTRING
    NOTHING, EPSILON = K.NOTHING, K.EPSILON
    stack = roots[::-1]
    while stack:  # post-order without recursion: concatenations may be long
        top = stack[-1]
        memo = top._native
        if memo >> 32 == generation or (memo < 0 and (in_batch - memo) >> 32 == 0):
            stack.pop()
            continue
        kind = top.kind
        args = top.args
        if kind == CONCAT or kind == ALT or kind == AND or kind == DIFF:
            children = args
        elif kind == REPEAT or kind == TAGGED or (kind == UNTIL and args[2] is not None):
            children = args[:1] if kind != UNTIL else args[2:]
        else:
            children = ()
        missing = False
        for c in children:
            memo = c._native
            if memo >> 32 != generation and not (memo < 0 and (in_batch - memo) >> 32 == 0):
                stack.append(c)
                missing = True
        if missing:
            continue
        stack.pop()
        if kind == BYTES:
            records.append(kind)
            records.extend(_words(args[0]))
        elif kind == UTF8:
            records.extend((kind, args[1], len(args[0])))
            for lo, hi in args[0]:
                records.append(lo)
                records.append(hi)
        elif kind == REPEAT or kind == TAGGED:
            records.append(kind)
            memo = args[0]._native  # an arena id, or -1 - i for the i-th record of this batch
            records.append(-1 - (in_batch - memo) if memo < 0 else memo & 0xFFFFFFFF)
            records.extend(args[1:])
        elif kind == NOTHING or kind == EPSILON:
            records.append(kind)
        elif kind == CONCAT or kind == ALT or kind == AND or kind == DIFF:
            records.append(kind)
            if kind == ALT or kind == AND:
                records.append(len(args))
            for c in args:
                memo = c._native
                records.append(-1 - (in_batch - memo) if memo < 0 else memo & 0xFFFFFFFF)
        elif kind == UNTIL:  # pending character (None: at a boundary), matched, stop
            stop = args[0]
            if args[2] is None:
                ref = 0  # NOTHING: no character in progress
            else:
                memo = args[2]._native
                ref = -1 - (in_batch - memo) if memo < 0 else memo & 0xFFFFFFFF
            records.extend((kind, ref, args[1], len(stop)))
            records.extend(stop)
        elif kind == DECMOD:  # p, k, phase, r, t, then the byte markers (Python's leaf cuts)
            records.extend((kind, args[1], args[2], args[4]))
            _limbs(args[0], records)
            _limbs(args[3], records)
        elif kind == SUBSTRING:  # state, pending bytes (count << 24, then the bytes), text
            pending = args[2]
            code_points = args[0].code_points
            packed = len(pending) << 24 | int.from_bytes(pending + bytes(3 - len(pending)), "big")
            records.extend((kind, args[1], packed, len(code_points)))
            records.extend(code_points)
        else:
            raise TypeError(f"no native import for expression kind {kind}")
        top._native = in_batch - len(order)
        order.append(top)
    if order:
        ids = bridge.arena.import_nodes(np.frombuffer(array("i", records), dtype=np.int32))
        for expr, ident in zip(order, ids):
            expr._native = mark | ident
    return len(order)


_batches = itertools.count()


_bridge: Bridge | None = None
_bridge_lock = threading.Lock()


def bridge() -> Bridge:
    """The bridge of the current generation (made on first use)."""
    global _bridge
    found = _bridge
    if found is None:
        with _bridge_lock:
            if _bridge is None:
                _bridge = Bridge()
            found = _bridge
    return found


def reset(force: bool = False) -> None:
    """Start a new arena with the next use (lexers made before keep theirs), if the current
    one's footprint is more than :data:`ARENA_NODES_KEPT` nodes or ``force``."""
    global _bridge
    with _bridge_lock:
        if _bridge is not None and (force or _bridge.arena.footprint > ARENA_NODES_KEPT):
            _bridge = None


def arena_bytes() -> int:
    """The bytes the current arena holds (``ExprArena.memory_bytes``, an O(1) estimate)."""
    found = _bridge
    return 0 if found is None else int(found.arena.memory_bytes)


register_process_cache("native expression arena (kept while small)", reset, size=arena_bytes,
                       evict=lambda: reset(force=True))
