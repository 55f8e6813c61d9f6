"""The bridge from Python expressions (:mod:`.derivatives`) to the native arena
(``_core.ExprArena``), in which grammar lexers are expanded by C++ (``_core.DerivativeDfa``).

Invariants:
- ``Bridge.to_arena(expr)`` is the id of an arena node with the same language as ``expr``.
  It is memoized on the expression (``Expr._native`` packs the bridge's generation, whether
  the node holds a foreign leaf, and the id), so a subterm shared by terminals or schemas is
  imported once per generation; imports are batched (one call per expression tree).
- The arena derives every kind natively except text-until-stop and decimal divisibility,
  and intersections/differences over those: they enter as FOREIGN leaves with the facts the
  native code needs (nullability, byte classes, first bytes, lengths, text depth), and the
  arena asks :func:`.derivatives.derivative` for their derivatives through a callback that
  imports the result. The arena's constructors normalize as the Python ones do, so a
  language reached in either space has one node.
- ``clear_interned()`` (``tokamata.clear_caches``) starts a new bridge (a new arena and
  generation) once the arena holds more than ``ARENA_NODES_KEPT`` nodes. Lexers made before
  keep their arena (and keep working); expressions memoized for an older generation are
  imported again when used.
- Structural keys of native lexer states are ``key_base`` + node id, where ``key_base``
  (bit 62 and the generation) keeps them apart from the Python engine's keys (expression
  ids, far below 2**62) and from other generations' keys, in the shared row caches.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from array import array

import numpy as np

from .. import _core
from ..caches import register_process_cache
from . import analysis
from . import derivatives as d

__all__ = ["Bridge", "bridge", "reset"]

_FOREIGN = 12  # the arena's kind for the nodes it derives through the callback
_AND, _DIFF = d.Kind.AND, d.Kind.DIFF
_MAX_INT32 = (1 << 31) - 1
_generations = itertools.count(1)


_mask_words: dict[int, array] = {}


def _words(mask: int) -> array:
    """A 256-bit mask as eight int32 words, low first (cached: masks repeat)."""
    words = _mask_words.get(mask)
    if words is None:
        words = array("i")
        words.frombytes(mask.to_bytes(32, "little", signed=False))
        if len(_mask_words) < 65536:
            _mask_words[mask] = words
    return words


class Bridge:
    """One arena, its generation, and the Python expressions behind its foreign leaves."""

    def __init__(self) -> None:
        from ..limits import DEFAULT_LIMITS

        self.arena = _core.ExprArena()
        self.generation = next(_generations)
        #: arena keys of this generation: bit 62, then the generation above the node id
        self.key_base = (1 << 62) | (self.generation << 32)
        self.foreign: list[d.Expr] = []  # handle -> Python expression
        # emptiness searches of intersections/differences made by derivatives use the default
        # budget, as the Python constructors do (derivatives pass no limits)
        self.arena.set_search_budget(DEFAULT_LIMITS.max_dfa_states)
        self_ref = weakref.ref(self)  # the arena must not keep the bridge alive

        def derive_foreign(handle: int, byte: int) -> int:
            owner = self_ref()
            assert owner is not None  # (the arena that calls this belongs to the bridge)
            return owner.to_arena(d.derivative(owner.foreign[handle], byte))

        self.arena.set_foreign_derivative(derive_foreign)

    def to_arena(self, node: d.Expr) -> int:
        """The arena id of ``node`` (imported with every subterm not imported yet)."""
        found = node._native
        if found >> 33 == self.generation:
            return found & 0xFFFFFFFF
        # (no lock: the arena dedupes, so a race at worst gives a foreign expression two
        # handles; a Python lock held across the import could deadlock with the foreign
        # callback of a walk that holds the arena's mutex)
        return _import(self, node)

    def _facts(self, node: d.Expr, records: array) -> None:
        """The FACTS of a foreign leaf (see ExprArena::import_nodes)."""
        handle = len(self.foreign)
        self.foreign.append(node)
        longest = analysis.max_length(node)
        depth, text_infinite = analysis.text_depth_facts(node, {})
        records.extend((handle, int(node.nullable), int(analysis.inside_character(node)), int(analysis.infinite(node)),
                        -1 if longest is None else min(longest, _MAX_INT32), min(depth, analysis.UNLIMITED),
                        int(text_infinite)))
        records.extend(_words(d.first_bytes(node) & ((1 << 256) - 1)))
        node_cuts = d.cuts(node)
        records.append(len(node_cuts))
        records.extend(node_cuts)


#: ``clear_caches()`` keeps the arena while it holds at most this many nodes (about 100 bytes
#: each): like the Python expressions that outlive ``clear_interned()`` in the front ends'
#: caches (formats, key literals, JSON string pieces), whose memoized derivatives are kept
#: with them, the arena keeps their native counterparts, so a format is imported and derived
#: once per process, not once per schema.
ARENA_NODES_KEPT = 400_000


def _import(bridge: Bridge, node: d.Expr) -> int:
    """Import ``node``'s subterms not imported yet in one batch. While the batch is built,
    its nodes' ``_native`` is negative, ``-1 - (batch << 32 | index << 1 | foreign)``; the
    arena ids replace it once the arena has them (another thread may import the same nodes
    meanwhile: its batch number differs, and hash-consing makes the double import harmless)."""
    generation = bridge.generation
    mark = generation << 33
    serial = next(_batches) & 0x3FFFFFFF
    in_batch = -1 - (serial << 32)  # the marks of this batch are in_batch - (index << 1 | foreign)
    records = array("i")
    order: list[d.Expr] = []
    CONCAT, ALT, REPEAT, TAGGED, BYTES, UTF8 = d.Kind.CONCAT, d.Kind.ALT, d.Kind.REPEAT, d.Kind.TAGGED, d.Kind.BYTES, d.Kind.UTF8
    AND, DIFF = _AND, _DIFF
    stack = [node]
    while stack:  # post-order without recursion: concatenations may be long
        top = stack[-1]
        memo = top._native
        if memo >> 33 == generation or (memo < 0 and (in_batch - memo) >> 32 == 0):
            stack.pop()
            continue
        kind = top.kind
        args = top.args
        missing = False
        if kind == CONCAT or kind == ALT or kind == AND or kind == DIFF:
            for c in args:
                memo = c._native
                if memo >> 33 != generation and not (memo < 0 and (in_batch - memo) >> 32 == 0):
                    stack.append(c)
                    missing = True
        elif kind == REPEAT or kind == TAGGED:
            c = args[0]
            memo = c._native
            if memo >> 33 != generation and not (memo < 0 and (in_batch - memo) >> 32 == 0):
                stack.append(c)
                missing = True
        if missing:
            continue
        stack.pop()
        has_foreign = 0
        if kind == BYTES:
            records.append(kind)
            records.extend(_words(args[0]))
        elif kind == UTF8:
            records.extend((kind, args[1], len(args[0])))
            for lo, hi in args[0]:
                records.append(lo)
                records.append(hi)
        elif kind == REPEAT or kind == TAGGED:
            memo = args[0]._native
            if memo < 0:
                local = in_batch - memo
                has_foreign = local & 1
                ref = -1 - (local >> 1)
            else:
                has_foreign = (memo >> 32) & 1
                ref = memo & 0xFFFFFFFF
            if kind == REPEAT:
                records.extend((kind, ref, args[1], args[2]))
            else:
                records.extend((kind, ref, args[1]))
        elif kind == d.Kind.NOTHING or kind == d.Kind.EPSILON:
            records.append(kind)
        elif kind == CONCAT or kind == ALT or kind == AND or kind == DIFF:
            records.append(kind)
            if kind == ALT or kind == AND:
                records.append(len(args))
            for c in args:
                memo = c._native
                if memo < 0:
                    local = in_batch - memo
                    has_foreign |= local & 1
                    records.append(-1 - (local >> 1))
                else:
                    has_foreign |= (memo >> 32) & 1
                    records.append(memo & 0xFFFFFFFF)
            if kind == AND or kind == DIFF:
                records.append(has_foreign)
                if has_foreign:
                    bridge._facts(top, records)
        else:  # text until a stop string, decimal divisibility
            has_foreign = 1
            records.append(_FOREIGN)
            bridge._facts(top, records)
        top._native = in_batch - ((len(order) << 1) | has_foreign)
        order.append(top)
    if order:
        ids = bridge.arena.import_nodes(np.frombuffer(records, dtype=np.int32))
        for expr, ident in zip(order, ids):
            expr._native = mark | (((in_batch - expr._native) & 1) << 32) | ident
    return node._native & 0xFFFFFFFF


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
    one holds more than :data:`ARENA_NODES_KEPT` nodes or ``force``."""
    global _bridge
    with _bridge_lock:
        if _bridge is not None and (force or _bridge.arena.size > ARENA_NODES_KEPT):
            _bridge = None


register_process_cache("native expression arena (kept while small)", reset)
