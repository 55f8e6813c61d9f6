"""Schema keywords -> :class:`~.nodes.Node`: the set of values each subschema allows.

Invariants:
- ``node(conj)`` is exactly the set of JSON values valid against every term of ``conj``
  (modulo the reported narrowings), computed keyword by keyword: a keyword that constrains
  one JSON type is a node letting every other type through, and the keywords of a schema
  are intersected. Members of objects and arrays stay unexpanded :data:`~.nodes.Conj` sets,
  so recursion through properties/items never loops here.
- A location is a subschema path evaluated in a dynamic context (see :mod:`.refs`): the
  context of the location being expanded (``self._context``) passes to its members and
  references, entering their resources (:meth:`~.refs.Document.enter`).
- Applicators at the same level (``$ref``, ``allOf``, ``anyOf``, ``oneOf``, ``not``,
  ``if``/``then``/``else``, ``dependentSchemas``) are expanded eagerly; a cycle among them
  (a schema that refers to itself without descending into a member) is a
  :class:`SchemaError`.
- Complements (``not``, ``oneOf``, ``else``, ``maxContains``) are exact or refused: scalar
  parts by language difference (numbers inside plain notation), object and array shapes by
  the finite unions of :meth:`Expander.complement_object` / ``complement_array``, after
  proving disjointness where possible; anything else raises :class:`Unsupported` with the
  keyword and pointer.
- Every keyword that cannot be enforced exactly raises :class:`Unsupported` naming it and its
  JSON pointer, unless the caller opted into the named approximation (then reported).
  ``uniqueItems`` is the exception decided later: shapes carry the paths of the schemas that
  asked for it, and the emitter enforces or refuses it once every keyword constraining the
  items (siblings, ``allOf``, references) has been intersected in.
- String languages are built in every spelling (closed under spelling, as the nodes' algebra
  needs). With ``spelling="natural"`` the string keywords (lengths, ``pattern``, ``format``)
  are also built from :func:`~.natural.natural_char` and recorded as the natural spellings
  of the language (:meth:`~.natural.Naturalizer.known` of :attr:`Expander.natural`), which
  the emitter then reads instead of rewriting the language.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Optional

from ...automata import boolean

from ...automata import derivatives as d
from ...deadline import check_deadline
from ...errors import LimitExceeded, SchemaError, Unsupported
from ...limits import Limits
from . import formats as fm
from . import lexemes as lx
from . import numbers as nm
from . import strings as st
from .natural import Naturalizer, natural_char
from .nodes import (ALL, ANY_ARRAY, ANY_OBJECT, EMPTY, FALSE, FALSE_TERM, TRUE, ArrayShape, Conj, Node,
                    ObjectShape, intersect, only, union)
from ..regex import MAX_COUNT
from .bounds import MAX_DEPTH
from .refs import NO_CONTEXT, Document, Path, pointer, unsupported
from .complements import Complements
from .report import Options, Report
from .values import VALUE_TAG
from .values import value_node as exact_value_node

__all__ = ["Expander"]

_MAX_CASES = 256  # dependentRequired/dependentSchemas case splits per schema


#: the values of each ``type`` name other than "integer" (whose spelling depends on the draft);
#: nodes are immutable, so one of each serves every schema
_TYPE_NODES: dict[str, Node] = {
    "null": Node(null=True), "boolean": Node(true=True, false=True), "number": Node(number=lx.NUMBER),
    "string": Node(string=lx.ANY_STRING), "object": Node(objects=(ANY_OBJECT,)), "array": Node(arrays=(ANY_ARRAY,)),
}


class Expander(Complements):
    """Computes nodes for locations and conjunctions of one document (memoized)."""

    def __init__(self, document: Document, options: Options, limits: Limits, report: Report, source: str = ""):
        self.doc = document
        self.options = options
        self.limits = limits
        self.report = report
        self._location_nodes: dict[int, Node] = {}
        self._conj_nodes: dict[Conj, Node] = {}
        self._expanding: set[int] = set()
        self._computing: set[Conj] = set()
        self._proving = 0
        self._context = NO_CONTEXT
        self._integer = lx.INTEGER_DRAFT4 if document.draft == 4 else nm.INTEGER_ANY
        self._integer_node = Node(number=self._integer)
        self._annotations = _mentions_unevaluated(document, source)
        #: the natural spellings of this compile's string languages (used with spelling="natural")
        self.natural = Naturalizer(limits)
        self._patterns: dict[str, list[d.Expr]] = {}  # pattern -> its contents (a type's dates share one)

    # -- entry points -----------------------------------------------------------------------
    def conj(self, path: Path) -> Conj:
        """The conjunction of the one location: ``path`` entered from the location being expanded."""
        return frozenset({self.doc.location(path, self.doc.enter(self._context, path))})

    def node(self, conj: Conj) -> Node:
        found = self._conj_nodes.get(conj)
        if found is not None:
            return found
        self._computing.add(conj)
        try:
            result = ALL
            for term in (conj if len(conj) == 1 else sorted(conj, key=repr)):  # (a fixed order)
                result = intersect(result, self.term(term), self.limits, self._prune)
                if result.is_empty:
                    break
        finally:
            self._computing.discard(conj)
        self._conj_nodes[conj] = result
        return result

    def term(self, term: Any) -> Node:
        if isinstance(term, int):
            return self.location(term)
        tag = term[0]
        if tag == "false":
            return EMPTY
        if tag == "const":
            return self.value_node(json.loads(term[1]), term[2])
        if tag == "not":
            return self.complement(self.node(term[1]), term[2])
        if tag == VALUE_TAG:
            return exact_value_node(term[1], self.limits)
        raise AssertionError(f"unknown term {term!r}")  # pragma: no cover

    def location(self, location: int) -> Node:
        found = self._location_nodes.get(location)
        if found is not None:
            return found
        path = self.doc.path(location)
        if location in self._expanding:
            raise SchemaError("the schema refers to itself without descending into a member (infinite "
                              "recursion)", pointer=pointer(path))
        bound = min(self.limits.max_nesting_depth, MAX_DEPTH)  # (the C stack of compiled code)
        if len(self._expanding) > bound:  # ($ref chains, nested applicators)
            error = LimitExceeded("max_nesting_depth", len(self._expanding), bound)
            error.pointer = pointer(path)
            raise error
        check_deadline()
        self._expanding.add(location)
        outer, self._context = self._context, self.doc.context(location)
        try:
            result = self._schema(self.doc.value(path), path)
        finally:
            self._expanding.discard(location)
            self._context = outer
        self._location_nodes[location] = result
        return result

    def _prune(self, conj: Conj) -> bool:
        """Cheap emptiness proof for shape pruning (one level deep; never re-enters a
        conjunction being computed)."""
        if conj in self._computing or any(isinstance(t, int) and t in self._expanding for t in conj):
            return False
        if self._proving >= 2:  # proofs nest (a proof computes nodes, which prune): bound them
            return FALSE_TERM in conj
        self._proving += 1
        try:
            return self._conj_empty(conj, 1)
        finally:
            self._proving -= 1

    def sub(self, path: Path) -> Node:
        return self.location(self.doc.location(path, self.doc.enter(self._context, path)))

    # -- one schema object ------------------------------------------------------------------
    def _schema(self, schema: Any, path: Path) -> Node:
        if schema is True:
            return ALL
        if schema is False:
            return EMPTY
        if not isinstance(schema, dict):
            raise SchemaError(f"a schema must be an object or a boolean, got {schema!r}", pointer=pointer(path))
        if self.doc.ignored:  # keywords of vocabularies the dialect leaves out
            schema = {k: v for k, v in schema.items() if k not in self.doc.ignored}
        draft = self.doc.draft
        parts: list[Node] = []
        if "$ref" in schema:
            parts.append(self.sub(self.doc.resolve(schema["$ref"], path)))
            if draft <= 7:
                return parts[0]
        if draft >= 2020 and "$dynamicRef" in schema:
            parts.append(self.sub(self.doc.resolve_dynamic(schema["$dynamicRef"], path, self._context)))
        if draft == 2019 and "$recursiveRef" in schema:
            parts.append(self.sub(self.doc.resolve_recursive(schema["$recursiveRef"], path)))
        if "type" in schema:
            parts.append(self._type(schema["type"], path))
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list):
                raise SchemaError("enum must be an array", pointer=pointer(path + ("enum",)))
            parts.append(self._enum(values, path))
        if "const" in schema and draft >= 6:
            parts.append(self.value_node(schema["const"], path + ("const",)))
        number = self._number_keywords(schema, path)
        if number is not None:
            parts.append(only(number=number))
        string = self._string_keywords(schema, path)
        if string is not None:
            parts.append(only(string=string))
        objects = self._object_keywords(schema, path)
        if objects is not None:
            parts.append(only(objects=objects))
        arrays = self._array_keywords(schema, path)
        if arrays is not None:
            parts.append(only(arrays=arrays))
        for keyword in ("allOf", "anyOf", "oneOf"):
            if keyword in schema:
                members = schema[keyword]
                if not isinstance(members, list) or not members:
                    raise SchemaError(f"{keyword} must be a non-empty array", pointer=pointer(path + (keyword,)))
                nodes = [self.sub(path + (keyword, i)) for i in range(len(members))]
                parts.append(self._combine(keyword, nodes, path + (keyword,)))
        if "not" in schema:
            parts.append(self.complement(self.sub(path + ("not",)), path + ("not",)))
        if "if" in schema and draft >= 7:
            parts.append(self._conditional(schema, path))
        result = ALL
        for part in parts:
            result = intersect(result, part, self.limits, self._prune)
        if draft >= 2019 and ("unevaluatedProperties" in schema or "unevaluatedItems" in schema):
            result = self._unevaluated(result, schema, path)
        return result

    def _combine(self, keyword: str, nodes: list[Node], path: Path) -> Node:
        if keyword == "allOf":
            result = ALL
            for node in nodes:
                result = intersect(result, node, self.limits, self._prune)
            return result
        if keyword == "anyOf":
            result = EMPTY
            for node in nodes:
                result = union(result, node)
            return result
        result = EMPTY  # oneOf: each member minus all the others
        for i, node in enumerate(nodes):
            only_this = node
            check_deadline()
            for j, other in enumerate(nodes):
                if i != j:
                    only_this = self.difference(only_this, other, path)
                    if only_this.is_empty:
                        break
            result = union(result, only_this)
        return result

    def _conditional(self, schema: dict, path: Path) -> Node:
        condition = self.sub(path + ("if",))
        then = self.sub(path + ("then",)) if "then" in schema else ALL
        otherwise = self.sub(path + ("else",)) if "else" in schema else ALL
        if then is ALL and otherwise is ALL:
            if not self._annotations:
                return ALL
            try:  # "if" alone still evaluates members, for unevaluated* elsewhere
                return union(condition, self.complement(condition, path + ("if",)))
            except Unsupported:
                return ALL
        taken = intersect(condition, then, self.limits, self._prune)
        not_taken = self.difference(otherwise, condition, path + ("if",))
        return union(taken, not_taken)

    # -- types and values -------------------------------------------------------------------
    def _type(self, types: Any, path: Path) -> Node:
        names = types if isinstance(types, list) else [types]
        node = EMPTY
        for name in names:
            part = self._integer_node if name == "integer" else _TYPE_NODES.get(name) if isinstance(name, str) else None
            if part is None:
                raise SchemaError(f"unknown type {name!r}", pointer=pointer(path + ("type",)))
            node = part if node is EMPTY else union(node, part)
        return node

    def _enum(self, values: list, path: Path) -> Node:
        """The union of the enum's values, built in one pass per type (enums may be long)."""
        strings = [v for v in values if isinstance(v, str)]
        numbers = []
        node = Node(string=self._strings(strings))
        shapes_objects: list = []
        shapes_arrays: list = []
        for i, value in enumerate(values):
            if isinstance(value, str):
                continue
            part = self.value_node(value, path + ("enum", i))
            if part.number is not d.NOTHING:
                numbers.append(part.number)
            shapes_objects.extend(part.objects)
            shapes_arrays.extend(part.arrays)
            node = Node(node.null or part.null, node.true or part.true, node.false or part.false, node.number,
                        node.string, node.objects, node.arrays)
        return node.replace(number=d.alternation(*numbers), objects=tuple(dict.fromkeys(shapes_objects)),
                       arrays=tuple(dict.fromkeys(shapes_arrays)))

    def _strings(self, texts: list[str]) -> d.Expr:
        """Every spelling of the strings ``texts`` (with ``spelling="natural"``, their natural
        spellings recorded for the emitter)."""
        if not texts:
            return d.NOTHING
        string = lx.string_literal(texts[0]) if len(texts) == 1 else lx.string_literals(texts)
        if self.options.natural:
            self.natural.known(string, lx.string_literals(texts, natural_char))
        return string

    def value_node(self, value: Any, path: Path) -> Node:
        """The node of exactly one JSON value (``const``, one ``enum`` member)."""
        if value is None:
            return Node(null=True)
        if value is True:
            return Node(true=True)
        if value is False:
            return Node(false=True)
        if isinstance(value, (int, float, Decimal)):
            self._notation(path)
            return Node(number=nm.number_value(nm.to_decimal(value, pointer(path)), self.limits))
        if isinstance(value, str):
            return Node(string=self._strings([value]))
        if isinstance(value, list):
            prefix = tuple(self._const(item, path) for item in value)
            return Node(arrays=(ArrayShape(prefix, FALSE, len(value), len(value)),))
        if isinstance(value, dict):
            declared = tuple((key, self._const(item, path)) for key, item in value.items())
            shape = ObjectShape(declared, frozenset(value), ((lx.ANY_STRING, FALSE),))
            return Node(objects=(shape,))
        raise SchemaError(f"not a JSON value: {value!r}", pointer=pointer(path))

    def _const(self, value: Any, path: Path) -> Conj:
        return frozenset({("const", json.dumps(value, default=str), path)})

    def _notation(self, path: Path) -> None:
        if self.options.natural:  # (the spelling line says it: natural numbers have no exponent)
            return
        self.report.add("number-notation", pointer(path),
                        "numbers are generated in plain decimal notation (no exponent)")

    # -- numbers and strings ----------------------------------------------------------------
    def _number_keywords(self, schema: dict, path: Path) -> Optional[d.Expr]:
        where = lambda k: pointer(path + (k,))  # noqa: E731
        limits = self.limits
        exprs = []
        draft4 = self.doc.draft == 4
        for keyword, strict_keyword, lower in (("minimum", "exclusiveMinimum", True),
                                               ("maximum", "exclusiveMaximum", False)):
            build = nm.at_least if lower else nm.at_most
            if keyword in schema:
                strict = draft4 and schema.get(strict_keyword) is True
                exprs.append(build(nm.to_decimal(schema[keyword], where(keyword)), strict, limits))
            value = schema.get(strict_keyword)
            if value is not None and not draft4:
                exprs.append(build(nm.to_decimal(value, where(strict_keyword)), True, limits))
        if "multipleOf" in schema:
            step = nm.to_decimal(schema["multipleOf"], where("multipleOf"))
            if step <= 0:
                raise SchemaError("multipleOf must be positive", pointer=where("multipleOf"))
            exprs.append(nm.multiple_of(step, limits))
        if not exprs:
            return None
        self._notation(path)
        return boolean.intersection(nm.PLAIN_ANY, *exprs, limits=limits)

    def _count(self, schema: dict, keyword: str, path: Path) -> Optional[int]:
        if keyword not in schema:
            return None
        value = schema[keyword]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SchemaError(f"{keyword} must be a non-negative integer, got {value!r}",
                              pointer=pointer(path + (keyword,)))
        if value > MAX_COUNT:
            raise unsupported(keyword, path, f"{value} is more than the engine counts to ({MAX_COUNT})")
        return value

    def _string_keywords(self, schema: dict, path: Path) -> Optional[d.Expr]:
        low = self._count(schema, "minLength", path)
        high = self._count(schema, "maxLength", path)
        form = self._format(schema["format"], path + ("format",)) if "format" in schema else None
        if low is None and high is None and "pattern" not in schema and form is None:
            return None
        spellings = ("any", "natural") if self.options.natural else ("any",)
        patterns = self._pattern(schema["pattern"], path, spellings) if "pattern" in schema else None
        strings = [self._string_language(low, high, None if patterns is None else patterns[k], form, spelling)
                   for k, spelling in enumerate(spellings)]
        if self.options.natural:
            self.natural.known(strings[0], strings[1])
        return strings[0]

    def _pattern(self, pattern: Any, path: Path, spellings: tuple[str, ...]) -> list[d.Expr]:
        """The contents of ``pattern`` in each of ``spellings`` (read once per compile)."""
        found = self._patterns.get(pattern) if isinstance(pattern, str) else None
        if found is None:
            found = st.pattern_contents(pattern, "pattern", pointer(path + ("pattern",)), self.limits,
                                        [fm.SPELLINGS[s] for s in spellings])
            self._patterns[pattern] = found
        return found

    def _string_language(self, low: Optional[int], high: Optional[int], pattern: Optional[d.Expr],
                         form: Optional[str], spelling: str) -> d.Expr:
        """The strings of the string keywords in ``spelling`` (see :data:`.formats.SPELLINGS`),
        ``pattern`` the pattern's content in that spelling."""
        contents = []
        if low is not None or high is not None:
            contents.append(st.length_content(low or 0, high, fm.SPELLINGS[spelling]))
        if pattern is not None:
            contents.append(pattern)
        if form is not None:
            contents.append(fm.format_content(form, spelling))
        if low is not None and high is None and low <= 1 and len(contents) > 1:
            # ANY{0,} is every content, ANY{1,} every non-empty one: implied when another
            # content cannot be empty. Dropping it keeps the language and spares every
            # state of the string an intersection (a derivative per member plus an
            # emptiness search)
            others = contents[1:]
            if not low or any(not c.nullable for c in others):
                contents = others
        return lx.string_of(boolean.intersection(*contents, limits=self.limits))

    def _format(self, name: Any, path: Path) -> Optional[str]:
        """``name`` when it is a format enforced here (see :func:`.formats.format_content`),
        None when it is not enforced (reported)."""
        if not isinstance(name, str):
            raise SchemaError("format must be a string", pointer=pointer(path))
        if name in fm.FORMATS:
            if name in fm.SUBSETS:
                self.report.add("format-subset", pointer(path), fm.SUBSETS[name])
            return name
        if name in fm.NOT_REGULAR:
            if "format" in self.options.approximate:
                self.report.add("format", pointer(path), f"format {name!r} is not enforced")
                return None
            raise unsupported("format", path[:-1], fm.NOT_REGULAR[name])
        if self.options.ignore_unknown_formats:
            self.report.add("format", pointer(path), f"unknown format {name!r} is not enforced")
            return None
        raise unsupported("format", path[:-1], f"unknown format {name!r} (pass ignore_unknown_formats=True "
                          "to ignore it)")

    # -- objects ----------------------------------------------------------------------------
    def _object_keywords(self, schema: dict, path: Path) -> Optional[tuple[ObjectShape, ...]]:
        draft = self.doc.draft
        keys = ("properties", "patternProperties", "additionalProperties", "required", "propertyNames",
                "minProperties", "maxProperties", "dependentRequired", "dependentSchemas",
                "dependencies")
        if not any(k in schema for k in keys):
            return None
        properties = schema.get("properties", {})
        if not isinstance(properties, dict):
            raise SchemaError("properties must be an object", pointer=pointer(path + ("properties",)))
        patterns = []
        for pattern in _of_type(schema, "patternProperties", dict, path):
            where = path + ("patternProperties", pattern)
            language = lx.string_of(st.pattern_content(pattern, "patternProperties", pointer(where), self.limits))
            patterns.append((language, self.conj(where)))
        rules = list(patterns)
        additional = None
        if "additionalProperties" in schema:
            additional = self.conj(path + ("additionalProperties",))
        elif self.options.strict and "properties" in schema:
            additional = FALSE
        if additional is not None and additional != TRUE:
            others = d.alternation(*(language for language, _ in patterns))
            rules.append((boolean.difference(lx.ANY_STRING, others, self.limits), additional))
        base = ObjectShape(rules=tuple(r for r in rules if r[1] != TRUE))
        if "additionalProperties" in schema or not self._annotations:
            evaluated = lx.ANY_STRING  # (no unevaluated* reads it: skip the names' language)
        else:
            evaluated = d.alternation(lx.string_literals(list(properties)) if properties else d.NOTHING,
                                      *(language for language, _ in patterns))
        declared: dict[str, Conj] = {}
        for name in properties:
            own = self.conj(path + ("properties", name))
            matching = [conj for language, conj in patterns if st.name_accepts(language, name)]
            declared[name] = own.union(*matching)
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise SchemaError("required must be an array of strings", pointer=pointer(path + ("required",)))
        names = lx.ANY_STRING
        if "propertyNames" in schema:
            names = self.sub(path + ("propertyNames",)).string
        shape = ObjectShape(tuple(declared.items()), frozenset(), base.rules, names,
                            self._count(schema, "minProperties", path) or 0,
                            self._count(schema, "maxProperties", path), evaluated=evaluated)
        with_required = self.require(shape, required, path + ("required",))
        shapes = [with_required] if with_required is not None else []
        dependent_required = {key: (needed, path + ("dependentRequired", key)) for key, needed in
                              (_of_type(schema, "dependentRequired", dict, path) if draft >= 2019 else {}).items()}
        dependent_schemas: dict[str, Path] = {}
        if draft >= 2019:
            for key in _of_type(schema, "dependentSchemas", dict, path):
                dependent_schemas[key] = path + ("dependentSchemas", key)
        elif isinstance(schema.get("dependencies"), dict):
            for key, value in schema["dependencies"].items():
                if isinstance(value, list):
                    dependent_required[key] = (value, path + ("dependencies", key))
                else:
                    dependent_schemas[key] = path + ("dependencies", key)
        for key, (needed, at) in dependent_required.items():
            shapes = self._split(shapes, key, lambda s, needed=needed, at=at: self.require(s, needed, at), path)
        for key, where in dependent_schemas.items():
            objects = self.sub(where).objects
            shapes = self._split(shapes, key, lambda s, objects=objects: self._meet(s, objects), path)
        return tuple(shapes)

    def _unevaluated(self, node: Node, schema: dict, path: Path) -> Node:
        """Apply ``unevaluatedProperties`` / ``unevaluatedItems`` to the node of the whole
        schema object (its siblings and in-place applicators already intersected)."""
        objects, arrays = node.objects, node.arrays
        if "unevaluatedProperties" in schema:
            extra = self.conj(path + ("unevaluatedProperties",))
            shapes = []
            for shape in objects:
                left = boolean.difference(lx.ANY_STRING, shape.evaluated, self.limits)
                declared = tuple((name, conj if st.name_accepts(shape.evaluated, name) else conj | extra)
                                 for name, conj in shape.declared)
                rules = shape.rules + (((left, extra),) if extra != TRUE and left is not d.NOTHING else ())
                shapes.append(shape.replace(declared=declared, rules=rules, evaluated=lx.ANY_STRING))
            objects = tuple(shapes)
        if "unevaluatedItems" in schema:
            extra = self.conj(path + ("unevaluatedItems",))
            array_shapes = []
            for array in arrays:
                if array.contains:
                    raise unsupported("unevaluatedItems", path, "together with contains (items evaluated "
                                      "by contains depend on their values)")
                if array.evaluated != -1:
                    n = array.evaluated
                    prefix = tuple(c | extra if i >= n else c for i, c in enumerate(array.prefix))
                    array = array.replace(prefix=prefix, rest=array.rest | extra)
                array_shapes.append(array.replace(evaluated=-1))
            arrays = tuple(array_shapes)
        return node.replace(objects=objects, arrays=arrays)

    def require(self, shape: Optional[ObjectShape], names: list, at: Path) -> Optional[ObjectShape]:
        """``shape`` with ``names`` (written at ``at``) required (declared after the others when
        new); None when a required member is forbidden by ``propertyNames``."""
        if not isinstance(names, list):
            raise SchemaError(f"expected an array of names, got {names!r}", pointer=pointer(at))
        if shape is None:
            return None
        declared = dict(shape.declared)
        unplaced = set(shape.unplaced)
        for i, name in enumerate(names):
            if not isinstance(name, str):
                raise SchemaError(f"required names must be strings, got {name!r}", pointer=pointer(at + (i,)))
            if name not in declared:
                declared[name] = shape.undeclared_schema(name)
                unplaced.add(name)
            if not st.name_accepts(shape.names, name) or declared[name] == FALSE:
                return None
        return shape.replace(declared=tuple(declared.items()), required=shape.required | frozenset(names),
                       unplaced=frozenset(unplaced))

    def _forbid(self, shape: ObjectShape, name: str) -> Optional[ObjectShape]:
        if name in shape.required:
            return None
        declared = dict(shape.declared)
        unplaced = shape.unplaced if name in declared else shape.unplaced | {name}
        declared[name] = FALSE
        return shape.replace(declared=tuple(declared.items()), unplaced=unplaced)

    def _meet(self, shape: ObjectShape, objects: tuple[ObjectShape, ...]) -> list[ObjectShape]:
        node = intersect(Node(objects=(shape,)), Node(objects=objects), self.limits, self._prune)
        return list(node.objects)

    def _split(self, shapes: list, key: str, present, path: Path) -> list:
        """Case split on whether member ``key`` is present."""
        out: list[ObjectShape] = []
        for shape in shapes:
            absent = self._forbid(shape, key)
            if absent is not None:
                out.append(absent)
            with_key = self.require(shape, [key], path)
            if with_key is not None:
                result = present(with_key)
                if isinstance(result, list):
                    out.extend(result)
                elif result is not None:
                    out.append(result)
        if len(out) > _MAX_CASES:
            raise LimitExceeded("max_grammar_symbols", len(out), _MAX_CASES)
        return out

    # -- arrays -----------------------------------------------------------------------------
    def _array_keywords(self, schema: dict, path: Path) -> Optional[tuple[ArrayShape, ...]]:
        draft = self.doc.draft
        keys = ("items", "prefixItems", "additionalItems", "minItems", "maxItems", "contains",
                "uniqueItems")
        if not any(k in schema for k in keys):
            return None
        prefix: tuple[Conj, ...] = ()
        rest: Optional[Conj] = None
        if draft >= 2020:
            items = _of_type(schema, "prefixItems", list, path)
            prefix = tuple(self.conj(path + ("prefixItems", i)) for i in range(len(items)))
            if "items" in schema:
                rest = self.conj(path + ("items",))
        else:
            items = schema.get("items")
            if isinstance(items, list):
                prefix = tuple(self.conj(path + ("items", i)) for i in range(len(items)))
                if "additionalItems" in schema:
                    rest = self.conj(path + ("additionalItems",))
            elif items is not None:
                rest = self.conj(path + ("items",))
        low = self._count(schema, "minItems", path) or 0
        high = self._count(schema, "maxItems", path)
        contains: tuple = ()
        if "contains" in schema and draft >= 6:
            at_least = self._count(schema, "minContains", path) if draft >= 2019 else None
            at_most = self._count(schema, "maxContains", path) if draft >= 2019 else None
            at_least = 1 if at_least is None else at_least
            if at_least > 0 or at_most is not None:
                contains = ((self.conj(path + ("contains",)), at_least, at_most),)
        # exact or refused by the emitter, once every keyword of the items is known
        unique = (path,) if schema.get("uniqueItems") is True and (high is None or high > 1) else ()
        if high is not None and low > high:
            return ()
        evaluated = -1 if rest is not None else len(prefix)
        return (ArrayShape(prefix, TRUE if rest is None else rest, low, high, contains, unique, evaluated),)


def _of_type(schema: dict, keyword: str, kind: type, path: Path) -> Any:
    """``schema[keyword]`` (empty when absent), which must be a ``kind`` (dict or list)."""
    value = schema.get(keyword)
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise SchemaError(f"{keyword} must be an {'object' if kind is dict else 'array'}",
                          pointer=pointer(path + (keyword,)))
    return value


def _mentions_unevaluated(document: Document, source: str) -> bool:
    """Whether ``unevaluatedProperties``/``unevaluatedItems`` may occur anywhere in the
    schema or its registry (then annotations are tracked). A text search, conservative: the
    schema's own JSON text when the caller gave one without ``\\u`` escapes (an escape could
    spell a keyword), else the JSON of the parsed documents (``json.dumps`` never escapes
    ASCII letters)."""
    documents = list(document.registry.values())
    if source and "\\u" not in source:
        text = source + (json.dumps(documents, default=str) if documents else "")
    else:
        text = json.dumps([document.root, documents], default=str)
    return "unevaluatedProperties" in text or "unevaluatedItems" in text
