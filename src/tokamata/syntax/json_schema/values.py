"""Finite sets of JSON values a schema denotes, for exact ``uniqueItems``.

A *value* here is a hashable key, one per JSON value and member order:
``("null",)``, ``("true",)``, ``("false",)``, ``("number", text)`` with ``text`` the value's
canonical decimal spelling (no exponent, no trailing fraction zeros, ``0`` never ``-0``),
``("string", text)``, ``("array", (value, ...))`` and ``("object", ((name, value), ...))``
(members in the order a shape declares them).

Invariants:
- :meth:`ValueSets.values` returns *every* value of ``node(conj)`` and nothing else, or
  raises :class:`NotFinite` with the reason (the set is infinite, has more than the bound's
  values, or could not be proven finite: refusing a finite set is allowed, claiming a wrong
  one never). Scalars come from the node's byte languages intersected with the canonical
  spellings (one word per value), enumerated by a walk of their derivatives that stops at a
  cycle (infinitely many words) or past the bound; a completeness check then proves that the
  language holds no spelling of any other value. Arrays need a bounded length and finite
  positions; objects need every member outside the declared ones forbidden; the candidates
  are then filtered by the shape's remaining constraints with :meth:`ValueSets.holds`.
- :func:`equality_key` is JSON Schema equality: numbers by mathematical value (the canonical
  text), strings by code points, arrays elementwise, objects whatever their member order;
  ``true``, ``false``, ``null``, numbers and strings are never equal to one another.
- ``(VALUE_TAG, value)`` is a :data:`~.nodes.Conj` term whose node is exactly the one value
  with all its spellings (:func:`value_node`): intersected with a schema it gives the
  schema's spellings of that value. Its tag sorts before every other term's (terms are
  intersected in ``repr`` order), so an object keeps the member order of its value.
- :meth:`ValueSets.holds` is exact membership of a value in ``node(conj)``.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Optional

from ...automata import boolean

from ...automata import derivatives as d
from ...automata.analysis import infinite
from ...errors import LimitExceeded
from ...limits import Limits
from ..json_spelling import NATURAL_NUMBER, NATURAL_STRING
from . import lexemes as lx
from . import numbers as nm
from .nodes import FALSE, FALSE_TERM, ArrayShape, Conj, Node, ObjectShape
from .strings import name_accepts

__all__ = ["NotFinite", "ValueSets", "VALUE_TAG", "value_node", "value_term", "equality_key", "to_json"]

#: the tag of a one-value term (``"="`` sorts before the tags of other terms and before ints)
VALUE_TAG = "="

Value = tuple

#: one spelling per number (no exponent, no trailing fraction zeros, no ``-0``) and per
#: string (raw where JSON allows, else the short escape, else ``\\u00xx``): the natural spelling
CANONICAL_NUMBER, CANONICAL_STRING = NATURAL_NUMBER, NATURAL_STRING


class NotFinite(Exception):
    """The value set is infinite, larger than the bound, or not proven finite (``reason``)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def value_term(value: Value) -> tuple:
    """The Conj term of exactly ``value``."""
    return (VALUE_TAG, value)


def value_node(value: Value, limits: Limits) -> Node:
    """The node of exactly ``value``, every spelling of it (numbers: every plain spelling)."""
    tag = value[0]
    if tag == "null":
        return Node(null=True)
    if tag == "true":
        return Node(true=True)
    if tag == "false":
        return Node(false=True)
    if tag == "number":
        return Node(number=nm.number_value(Decimal(value[1]), limits))
    if tag == "string":
        return Node(string=lx.string_literal(value[1]))
    if tag == "array":
        items = value[1]
        prefix = tuple(frozenset({value_term(item)}) for item in items)
        return Node(arrays=(ArrayShape(prefix, FALSE, len(items), len(items)),))
    members = value[1]
    declared = tuple((name, frozenset({value_term(item)})) for name, item in members)
    return Node(objects=(ObjectShape(declared, frozenset(name for name, _ in members), ((lx.ANY_STRING, FALSE),)),))


def equality_key(value: Value) -> Any:
    """Equal for values JSON Schema calls equal (``uniqueItems``, ``enum``)."""
    tag = value[0]
    if tag == "array":
        return ("array", tuple(equality_key(item) for item in value[1]))
    if tag == "object":
        return ("object", frozenset((name, equality_key(item)) for name, item in value[1]))
    return value


def to_json(value: Value) -> Any:
    """The value as Python JSON data (numbers as ``Decimal``)."""
    tag = value[0]
    if tag in ("null", "true", "false"):
        return {"null": None, "true": True, "false": False}[tag]
    if tag == "number":
        return Decimal(value[1])
    if tag == "string":
        return value[1]
    if tag == "array":
        return [to_json(item) for item in value[1]]
    return {name: to_json(item) for name, item in value[1]}


class ValueSets:
    """Finite value sets and membership over one :class:`~.expand.Expander`'s nodes
    (memoized per conjunction; the bound is ``Limits.max_unique_items_values``)."""

    def __init__(self, expander, limits: Limits):
        self.expander = expander
        self.limits = limits
        self.bound = limits.max_unique_items_values
        self._found: dict[Conj, Any] = {}  # conj -> list of values, or the NotFinite raised
        self._busy: set[Conj] = set()

    # -- finite sets ------------------------------------------------------------------------
    def values(self, conj: Conj) -> list[Value]:
        """Every value of ``conj``, in a fixed order. Values equal under :func:`equality_key`
        appear once per member order the schema's shapes give them (objects only)."""
        found = self._found.get(conj)
        if found is None:
            if conj in self._busy:
                raise NotFinite("a recursive item schema")
            self._busy.add(conj)
            try:
                found = self._values(conj)
            except NotFinite as error:
                found = error
            except LimitExceeded as error:
                found = NotFinite(f"the item language is too large to enumerate ({error})")
            finally:
                self._busy.discard(conj)
            self._found[conj] = found
        if isinstance(found, NotFinite):
            raise found
        return found

    def _values(self, conj: Conj) -> list[Value]:
        if FALSE_TERM in conj:
            return []
        node = self.expander.node(conj)
        out: dict[Value, None] = {}  # member orders of one object value are kept apart
        distinct: set = set()

        def add(value: Value) -> None:
            out[value] = None
            distinct.add(equality_key(value))
            if len(distinct) > self.bound:
                raise NotFinite(f"more than {self.bound} distinct values")

        for flag, constant in ((node.null, ("null",)), (node.true, ("true",)), (node.false, ("false",))):
            if flag:
                add(constant)
        if node.number is not d.NOTHING:
            texts = self._words(boolean.intersection(node.number, CANONICAL_NUMBER, limits=self.limits))
            numbers = [("number", text.decode()) for text in texts]
            spelled = d.alternation(*(nm.number_value(Decimal(v[1]), self.limits) for v in numbers))
            if boolean.difference(node.number, spelled, self.limits) is not d.NOTHING:
                raise NotFinite("numbers spelled outside plain notation")
            for value in numbers:
                add(value)
        if node.string is not d.NOTHING:
            if infinite(node.string):  # a string value has finitely many spellings
                raise NotFinite("an infinite item language")
            texts = self._words(boolean.intersection(node.string, CANONICAL_STRING, limits=self.limits))
            strings = [("string", json.loads(text.decode("utf-8"))) for text in texts]
            spelled = lx.string_literals([v[1] for v in strings])
            if boolean.difference(node.string, spelled, self.limits) is not d.NOTHING:
                raise NotFinite("a string language not closed under spelling")  # pragma: no cover
            for value in strings:
                add(value)
        for shape in node.arrays:
            for value in self._arrays(shape):
                add(value)
        for shape in node.objects:
            for value in self._objects(shape):
                add(value)
        return list(out)

    def _words(self, expr: d.Expr) -> list[bytes]:
        """Every word of ``expr``, or NotFinite past the bound or at a cycle (every live
        derivative is non-empty, so a cycle of live states means infinitely many words)."""
        if expr is d.NOTHING:
            return []
        # suffixes per state as cons cells (byte, rest), None for the empty word: long
        # constant strings are not copied once per character
        suffixes: dict[int, list] = {}
        on_path: set[int] = set()
        budget = self.limits.max_dfa_states
        stack: list[tuple[d.Expr, Optional[list]]] = [(expr, None)]
        while stack:
            node, edges = stack.pop()
            if edges is None:
                if node.id in suffixes:
                    continue
                if node.id in on_path:
                    raise NotFinite("an infinite item language")
                budget -= 1
                if budget < 0:
                    raise NotFinite("the item language is too large to enumerate")
                on_path.add(node.id)
                starts = (0,) + d.cuts(node)
                edges = []
                for i, lo in enumerate(starts):
                    after = d.derivative(node, lo)
                    if after is not d.NOTHING:
                        hi = starts[i + 1] - 1 if i + 1 < len(starts) else 255
                        edges.append((lo, hi, after))
                # each byte of a live class starts at least one word of its own
                if node.nullable + sum(hi - lo + 1 for lo, hi, _ in edges) > self.bound:
                    raise NotFinite(f"more than {self.bound} distinct values")
                stack.append((node, edges))
                stack.extend((after, None) for _, _, after in edges if after.id not in suffixes)
                continue
            words: list = [None] if node.nullable else []
            for lo, hi, after in edges:
                tails = suffixes[after.id]
                if len(words) + (hi - lo + 1) * len(tails) > self.bound:
                    raise NotFinite(f"more than {self.bound} distinct values")
                words.extend((byte, tail) for byte in range(lo, hi + 1) for tail in tails)
            suffixes[node.id] = words
            on_path.discard(node.id)
        out = []
        for cell in suffixes[expr.id]:
            word = bytearray()
            while cell is not None:
                word.append(cell[0])
                cell = cell[1]
            out.append(bytes(word))
        return out

    def _arrays(self, shape: ArrayShape) -> list[Value]:
        k = len(shape.prefix)
        high = shape.max_items
        if FALSE_TERM in shape.rest:
            high = k if high is None else min(high, k)
        if high is None:
            rest = self.values(shape.rest)
            if not rest:
                high = k
            elif shape.unique:  # distinct items: no more past the prefix than rest has values
                high = k + len(rest)
            else:
                raise NotFinite("arrays of unbounded length")
        if shape.min_items > high:
            return []
        found: list[Value] = []
        distinct: set = set()
        partial: list[tuple] = [()]
        candidates = 0
        for length in range(high + 1):
            if length >= shape.min_items:
                for items in partial:
                    if self._array_holds(shape, items):
                        found.append(("array", items))
                        distinct.add(equality_key(found[-1]))
                        if len(distinct) > self.bound:
                            raise NotFinite(f"more than {self.bound} distinct values")
            if length == high:
                break
            options = self.values(shape.at(length))
            if shape.unique:  # an item equal to an earlier one can never be completed
                partial = [items + (v,) for items in partial for v in options
                           if equality_key(v) not in {equality_key(x) for x in items}]
            else:
                partial = [items + (v,) for items in partial for v in options]
            candidates += len(partial)
            if candidates > 64 * self.bound:
                raise NotFinite(f"more than {self.bound} distinct values")
            if not partial:
                break
        return found

    def _objects(self, shape: ObjectShape) -> list[Value]:
        forbidden = d.alternation(*(language for language, conj in shape.rules
                                    if FALSE_TERM in conj or self.expander.node(conj).is_empty),
                                  *(lx.string_literal(name) for name, _ in shape.declared))
        if boolean.difference(shape.names, forbidden, self.limits) is not d.NOTHING:
            raise NotFinite("objects with members other than the declared ones")
        partial: list[tuple] = [()]
        for name, conj in shape.declared:
            present = name_accepts(shape.names, name) and FALSE_TERM not in conj
            options = self.values(conj) if present else []
            grown = [] if name in shape.required else list(partial)
            grown.extend(members + ((name, v),) for members in partial for v in options)
            partial = grown
            if len(partial) > 64 * self.bound:
                raise NotFinite(f"more than {self.bound} distinct values")
        return [("object", members) for members in partial if self._object_holds(shape, members)]

    # -- membership -------------------------------------------------------------------------
    def holds(self, conj: Conj, value: Value) -> bool:
        """Whether ``value`` is in ``node(conj)`` (exact)."""
        if FALSE_TERM in conj:
            return False
        if not conj:
            return True
        node = self.expander.node(conj)
        tag = value[0]
        if tag == "null":
            return node.null
        if tag == "true":
            return node.true
        if tag == "false":
            return node.false
        if tag == "number":
            return node.number is not d.NOTHING and boolean.intersection(
                node.number, nm.number_value(Decimal(value[1]), self.limits), limits=self.limits) is not d.NOTHING
        if tag == "string":
            return node.string is not d.NOTHING and boolean.intersection(
                node.string, lx.string_literal(value[1]), limits=self.limits) is not d.NOTHING
        if tag == "array":
            return any(self._array_holds(shape, value[1]) for shape in node.arrays)
        return any(self._object_holds(shape, value[1]) for shape in node.objects)

    def _array_holds(self, shape: ArrayShape, items: tuple) -> bool:
        if len(items) < shape.min_items or (shape.max_items is not None and len(items) > shape.max_items):
            return False
        if not all(self.holds(shape.at(i), item) for i, item in enumerate(items)):
            return False
        for conj, at_least, at_most in shape.contains:
            count = sum(1 for item in items if self.holds(conj, item))
            if count < at_least or (at_most is not None and count > at_most):
                return False
        if shape.unique and len({equality_key(item) for item in items}) < len(items):
            return False
        return True

    def _object_holds(self, shape: ObjectShape, members: tuple) -> bool:
        names = [name for name, _ in members]
        if not shape.required <= set(names) or len(names) < shape.min_properties \
                or (shape.max_properties is not None and len(names) > shape.max_properties):
            return False
        for name, item in members:
            if not name_accepts(shape.names, name) or not self.holds(shape.schema_of(name), item):
                return False
        for language, conj in shape.witnesses:
            if not any(name_accepts(language, name) and self.holds(conj, item) for name, item in members):
                return False
        return True

