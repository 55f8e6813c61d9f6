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
- ``clear_interned()`` (``tokamata.clear_caches``) starts a new bridge: a new arena and
  generation. Lexers made before keep their arena (and keep working); expressions memoized
  for an older generation are imported again when used.
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
from . import derivatives as d

__all__ = ["Bridge", "bridge", "reset"]

_FOREIGN = 12  # the arena's kind for the nodes it derives through the callback
_AND, _DIFF = d._AND, d._DIFF
_MAX_INT32 = (1 << 31) - 1
_generations = itertools.count(1)


def _words(mask: int) -> array:
    """A 256-bit mask as eight int32 words, low first."""
    words = array("i")
    words.frombytes(mask.to_bytes(32, "little", signed=False))
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
            return owner.to_arena(d.derivative(owner.foreign[handle], byte))

        self.arena.set_foreign_derivative(derive_foreign)

    def to_arena(self, node: d.Expr) -> int:
        """The arena id of ``node`` (imported with every subterm not imported yet)."""
        mark = self.generation << 33
        found = node._native
        if found is not None and found >> 33 == self.generation:
            return found & 0xFFFFFFFF
        # (no lock: the arena dedupes, so a race at worst gives a foreign expression two
        # handles; a Python lock held across the import could deadlock with the foreign
        # callback of a walk that holds the arena's mutex)
        return self._import(node, mark)

    def _import(self, node: d.Expr, mark: int) -> int:
        generation = self.generation
        records = array("i")
        order: list[d.Expr] = []
        batch: dict[int, int] = {}  # expression id -> record index
        foreign_in: dict[int, bool] = {}  # expression id -> holds a foreign leaf
        CONCAT, ALT, REPEAT, TAGGED = d._CONCAT, d._ALT, d._REPEAT, d._TAGGED
        stack = [node]
        while stack:  # post-order without recursion: concatenations may be long
            top = stack[-1]
            memo = top._native
            if (memo is not None and memo >> 33 == generation) or top.id in batch:
                stack.pop()
                continue
            kind = top.kind
            if kind == CONCAT or kind == ALT or kind == _AND or kind == _DIFF:
                children = top.args
            elif kind == REPEAT or kind == TAGGED:
                children = top.args[:1]
            else:
                children = ()
            missing = [c for c in children
                       if not ((c._native is not None and c._native >> 33 == generation) or c.id in batch)]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            refs = []
            has_foreign = False
            for c in children:
                index = batch.get(c.id)
                if index is None:
                    refs.append(c._native & 0xFFFFFFFF)
                    has_foreign = has_foreign or bool((c._native >> 32) & 1)
                else:
                    refs.append(-1 - index)
                    has_foreign = has_foreign or foreign_in[c.id]
            args = top.args
            if kind == d._BYTES:
                records.append(kind)
                records.extend(_words(args[0]))
            elif kind == d._UTF8:
                records.extend((kind, args[1], len(args[0])))
                for lo, hi in args[0]:
                    records.extend((lo, hi))
            elif kind == CONCAT:
                records.extend((kind, refs[0], refs[1]))
            elif kind == ALT:
                records.extend((kind, len(refs)))
                records.extend(refs)
            elif kind == REPEAT:
                records.extend((kind, refs[0], args[1], args[2]))
            elif kind == TAGGED:
                records.extend((kind, refs[0], args[1]))
            elif kind == _AND or kind == _DIFF:
                if kind == _AND:
                    records.extend((kind, len(refs)))
                    records.extend(refs)
                else:
                    records.extend((kind, refs[0], refs[1]))
                records.append(1 if has_foreign else 0)
                if has_foreign:
                    self._facts(top, records)
            elif kind == d._NOTHING or kind == d._EPSILON:
                records.append(kind)
            else:  # text until a stop string, decimal divisibility
                has_foreign = True
                records.append(_FOREIGN)
                self._facts(top, records)
            batch[top.id] = len(order)
            foreign_in[top.id] = has_foreign
            order.append(top)
        if not order:
            return node._native & 0xFFFFFFFF
        ids = self.arena.import_nodes(np.frombuffer(records, dtype=np.int32))
        for expr, ident in zip(order, ids):
            expr._native = mark | (int(foreign_in[expr.id]) << 32) | ident
        return node._native & 0xFFFFFFFF

    def _facts(self, node: d.Expr, records: array) -> None:
        """The FACTS of a foreign leaf (see ExprArena::import_nodes)."""
        from ..slices import UNLIMITED, _text_depth
        from .boolean import _infinite, _max_length
        from .dfa import _inside_character

        handle = len(self.foreign)
        self.foreign.append(node)
        longest = _max_length(node)
        depth, text_infinite = _text_depth(node, {})
        records.extend((handle, int(node.nullable), int(_inside_character(node)), int(_infinite(node)),
                        -1 if longest is None else min(longest, _MAX_INT32), min(depth, UNLIMITED),
                        int(text_infinite)))
        records.extend(_words(d.first_bytes(node) & ((1 << 256) - 1)))
        node_cuts = d.cuts(node)
        records.append(len(node_cuts))
        records.extend(node_cuts)


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


def reset() -> None:
    """Start a new arena with the next use (lexers made before keep theirs)."""
    global _bridge
    with _bridge_lock:
        _bridge = None
