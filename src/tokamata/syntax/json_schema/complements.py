"""Complements and differences of nodes, exact or refused; conservative disjointness.

Invariants:
- ``difference(a, b)`` is exactly the values of ``a`` not in ``b``, or raises
  :class:`Unsupported` naming the keyword (the last key of the path it is given) and its
  pointer. Scalar parts are language differences (numbers inside plain notation,
  :data:`.numbers.PLAIN_ANY`, reported);
  shapes are removed one by one: a piece proven disjoint from a removed shape stays as it is,
  otherwise it is intersected with the removed shape's complement, a finite union of shapes
  (one per member, count bound, rule or witness); a union of shapes told apart by one member
  (a tagged union) is complemented at once, linearly.
- ``_disjoint`` and the emptiness tests say True only when they prove it (a bounded look into
  member schemas); False means "not proven".
- ``not not C`` is ``C``; ``not`` of the false schema is the true one and back.

This is a mixin of :class:`.expand.Expander` (it uses its ``node``, ``limits`` and report).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from ...automata import boolean

from ...automata import derivatives as d
from ...deadline import check_deadline
from ...errors import SchemaError, Unsupported
from . import lexemes as lx
from . import numbers as nm
from . import strings as st
from .nodes import (ALL, FALSE, FALSE_TERM, TRUE, ArrayShape, Conj, Node, ObjectShape, intersect)
from .refs import Path, pointer, unsupported

if TYPE_CHECKING:
    from ...limits import Limits
    from .report import Options, Report

__all__ = ["Complements", "negation"]


def _keyword(path: Path) -> str:
    """The keyword a complement was needed for (the last key of its path)."""
    return path[-1] if path and isinstance(path[-1], str) else "not"


def negation(conj: Conj, path: Path) -> Conj:
    """The conjunction of ``conj``'s complement (``not``), at ``path`` for messages."""
    if conj == FALSE:
        return TRUE
    if conj == TRUE:
        return FALSE
    if len(conj) == 1:
        (term,) = conj
        if isinstance(term, tuple) and term[0] == "not":
            return term[1]  # not not C == C
    return frozenset({("not", conj, path)})


class Complements:
    """Complements, differences and disjointness for :class:`.expand.Expander`."""

    if TYPE_CHECKING:  # what the Expander that mixes this in provides
        limits: Limits
        options: Options
        report: Report
        _computing: set[Conj]

        def node(self, conj: Conj) -> Node: ...
        def _prune(self, conj: Conj) -> bool: ...
        def _notation(self, path: Path) -> None: ...

    # -- complements ------------------------------------------------------------------------
    def complement(self, node: Node, path: Path) -> Node:
        return self.difference(ALL, node, path)

    def difference(self, a: Node, b: Node, path: Path) -> Node:
        """Values of ``a`` not in ``b`` (exact, or :class:`Unsupported`)."""
        if b.number is d.NOTHING or a.number is d.NOTHING:
            number = a.number
        elif b.number is lx.NUMBER:
            number = d.NOTHING
        elif boolean.intersection(a.number, b.number, limits=self.limits) is d.NOTHING:
            number = a.number  # disjoint: nothing to take away (keeps exponents, too)
        else:
            self._notation(path)
            plain = nm.PLAIN_ANY if a.number is lx.NUMBER else \
                boolean.intersection(a.number, nm.PLAIN_ANY, limits=self.limits)
            number = boolean.difference(plain, b.number, self.limits)
        objects = self._shape_difference(a.objects, b.objects, self.complement_object, path)
        arrays = self._shape_difference(a.arrays, b.arrays, self.complement_array, path)
        string = a.string
        if a.string is not d.NOTHING and b.string is not d.NOTHING and \
                boolean.intersection(a.string, b.string, limits=self.limits) is not d.NOTHING:
            string = boolean.difference(a.string, b.string, self.limits)
        return Node(a.null and not b.null, a.true and not b.true, a.false and not b.false, number,
                    string, objects, arrays)

    def _shape_difference(self, shapes: tuple, removed: tuple, complement, path: Path) -> tuple:
        pieces = list(shapes)
        if pieces and len(removed) > 1 and isinstance(removed[0], ObjectShape):
            key = self._discriminator(removed)
            if key is not None:  # complement the whole union at once: linear, not a product
                touching = [p for p in pieces if not all(self._disjoint(p, o) for o in removed)]
                kept = [p for p in pieces if p not in touching]
                if touching:
                    rest = self._discriminated_complement(removed, key, path)
                    kept.extend(intersect(rest, Node(objects=tuple(touching)), self.limits, self._prune).objects)
                return tuple(dict.fromkeys(kept))
        for other in removed:
            check_deadline()
            if not pieces:
                break
            if other.is_any:
                return ()
            kept, touching = [], []
            for piece in pieces:
                (kept if self._disjoint(piece, other) else touching).append(piece)
            if touching:
                node = Node(objects=tuple(touching)) if isinstance(other, ObjectShape) else Node(arrays=tuple(touching))
                rest = complement(other, path)
                node = intersect(rest, node, self.limits, self._prune)  # the condition's members first
                kept.extend(node.objects if isinstance(other, ObjectShape) else node.arrays)
            pieces = kept
        return tuple(dict.fromkeys(pieces))

    def _discriminator(self, shapes: tuple) -> Optional[str]:
        """A member every shape requires, with scalar values no two shapes share (``kind``
        in a tagged union), or None."""
        common = set.intersection(*(set(s.required) for s in shapes))
        for name in sorted(common):
            nodes = []
            for shape in shapes:
                try:
                    node = self.node(shape.schema_of(name))
                except (Unsupported, SchemaError):
                    break
                if node.objects or node.arrays:
                    break
                nodes.append(node)
            else:
                if all(self._scalars_disjoint(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:]):
                    return name
        return None

    def _scalars_disjoint(self, a: Node, b: Node) -> bool:
        if (a.null and b.null) or (a.true and b.true) or (a.false and b.false):
            return False
        for x, y in ((a.number, b.number), (a.string, b.string)):
            if x is not d.NOTHING and y is not d.NOTHING and boolean.intersection(x, y, limits=self.limits) is not d.NOTHING:
                return False
        return True

    def _discriminated_complement(self, shapes: tuple, key: str, path: Path) -> Node:
        """Objects in none of ``shapes``, which are told apart by member ``key``: the key
        missing or matching none of them, or matching shape i and failing it."""
        tags = [shape.schema_of(key) for shape in shapes]
        outside = frozenset().union(*(negation(tag, path) for tag in tags))
        result = [ObjectShape(declared=((key, outside),))]
        for shape, tag in zip(shapes, tags):
            chosen = Node(objects=(ObjectShape(declared=((key, tag),), required=frozenset({key})),))
            result.extend(intersect(chosen, self.complement_object(shape, path), self.limits, self._prune).objects)
        return ALL.replace(objects=tuple(result))

    def complement_object(self, shape: ObjectShape, path: Path) -> Node:
        """Objects failing ``shape``: a required member missing, a declared member with a
        wrong value, a wrong count, an undeclared member breaking a rule or a key outside
        ``names`` (witnesses), or a witness never met (a rule)."""
        shapes = []
        declared = d.alternation(*(lx.string_literal(name) for name, _ in shape.declared))
        for language, conj in shape.rules:
            if conj != TRUE:
                witness = boolean.difference(language, declared, self.limits)
                if witness is not d.NOTHING:
                    shapes.append(ObjectShape(witnesses=((witness, negation(conj, path)),)))
        if shape.names is not lx.ANY_STRING:
            for name, _ in shape.declared:
                if not st.name_accepts(shape.names, name):
                    shapes.append(ObjectShape(declared=((name, TRUE),), required=frozenset({name})))
            outside = boolean.difference(boolean.difference(lx.ANY_STRING, shape.names, self.limits), declared, self.limits)
            if outside is not d.NOTHING:
                shapes.append(ObjectShape(witnesses=((outside, TRUE),)))
        for language, conj in shape.witnesses:
            shapes.append(ObjectShape(rules=((language, negation(conj, path)),)))
        for name, conj in shape.declared:
            # one shape per member: missing (when required) or present with a wrong value
            if name in shape.required:
                shapes.append(ObjectShape(declared=((name, negation(conj, path)),)))
            elif conj != TRUE:
                shapes.append(ObjectShape(declared=((name, negation(conj, path)),), required=frozenset({name})))
        if shape.min_properties > 0:
            shapes.append(ObjectShape(max_properties=shape.min_properties - 1))
        if shape.max_properties is not None:
            shapes.append(ObjectShape(min_properties=shape.max_properties + 1))
        return ALL.replace(objects=tuple(shapes))

    def complement_array(self, shape: ArrayShape, path: Path) -> Node:
        keyword = _keyword(path)
        if shape.unique:
            if "uniqueItems" not in self.options.approximate:
                raise unsupported("uniqueItems", shape.unique[0], f"its complement ({keyword} at "
                                  f"{pointer(path[:-1]) or '/'}: arrays with a duplicate item) is not supported "
                                  "(pass approximate={'uniqueItems'} to ignore it)")
            self.report.add("uniqueItems", pointer(shape.unique[0] + ("uniqueItems",)), "ignored under a "
                            "complement: arrays the complement allows only for their duplicate items are refused")
        shapes = []
        if shape.min_items > 0:
            shapes.append(ArrayShape(max_items=shape.min_items - 1))
        if shape.max_items is not None:
            shapes.append(ArrayShape(min_items=shape.max_items + 1))
        for i, conj in enumerate(shape.prefix):
            if conj != TRUE:
                shapes.append(ArrayShape(prefix=(TRUE,) * i + (negation(conj, path),), min_items=i + 1))
        if shape.rest != TRUE:
            k = len(shape.prefix)
            if shape.rest == FALSE:
                shapes.append(ArrayShape(min_items=k + 1))
            elif k == 0:
                shapes.append(ArrayShape(contains=((negation(shape.rest, path), 1, None),)))
            else:
                raise unsupported(keyword, path[:-1], "the complement of items after prefixItems is not "
                                  "supported")
        for conj, low, high in shape.contains:
            if low > 0:
                shapes.append(ArrayShape(contains=((conj, 0, low - 1),)))
            if high is not None:
                shapes.append(ArrayShape(contains=((conj, high + 1, None),)))
        return ALL.replace(arrays=tuple(shapes))

    # -- disjointness (conservative: True only when proven) ---------------------------------
    def _disjoint(self, a, b, depth: int = 3) -> bool:
        if isinstance(a, ObjectShape):
            node = intersect(Node(objects=(a,)), Node(objects=(b,)), self.limits)
            return all(self._object_empty(s, depth) for s in node.objects)
        node = intersect(Node(arrays=(a,)), Node(arrays=(b,)), self.limits)
        return all(self._array_empty(s, depth) for s in node.arrays)

    def _object_empty(self, shape: ObjectShape, depth: int) -> bool:
        if shape.max_properties is not None and len(shape.required) > shape.max_properties:
            return True
        if any(self._conj_empty(conj, depth) for name, conj in shape.declared if name in shape.required):
            return True
        if shape.min_properties == 0 and not shape.witnesses:
            return False
        # members that may appear at all: declared ones not forbidden, and undeclared keys
        # outside every rule whose schema is false
        allowed = [name for name, conj in shape.declared if FALSE_TERM not in conj]
        forbidden = d.alternation(*[language for language, conj in shape.rules if FALSE_TERM in conj],
                                  *(lx.string_literal(name) for name, _ in shape.declared))
        free = boolean.difference(shape.names, forbidden, self.limits)
        if free is d.NOTHING and shape.min_properties > len(allowed):
            return True
        for language, _ in shape.witnesses:
            if boolean.intersection(free, language, limits=self.limits) is d.NOTHING and \
                    not any(st.name_accepts(language, name) for name in allowed):
                return True
        return False

    def _array_empty(self, shape: ArrayShape, depth: int) -> bool:
        if shape.max_items is not None and shape.min_items > shape.max_items:
            return True
        return any(self._conj_empty(shape.at(i), depth) for i in range(min(shape.min_items, len(shape.prefix) + 1)))

    def _conj_empty(self, conj: Conj, depth: int) -> bool:
        if FALSE_TERM in conj:
            return True
        if depth <= 0 or conj in self._computing:
            return False
        try:
            node = self.node(conj)
        except (Unsupported, SchemaError):
            return False
        if node.null or node.true or node.false or node.number is not d.NOTHING or node.string is not d.NOTHING:
            return False
        return all(self._object_empty(s, depth - 1) for s in node.objects) and \
            all(self._array_empty(s, depth - 1) for s in node.arrays)
