"""Schema documents: the draft, subschema locations, ``$id`` scopes, anchors and ``$ref``.

Invariants:
- The document has one draft: its root's ``$schema``; else the caller's default; else (the
  specification leaves a root without ``$schema`` to the implementation) the draft every
  embedded ``$schema`` declaration names, when they agree, and 2020-12 otherwise. An embedded
  ``$schema`` of another draft than the document's is refused (drafts are never mixed).
- A *path* addresses a subschema from its document's root (a tuple of keys and indices);
  ``pointer(path)`` is its JSON pointer, used in every message. A *location* is a path with
  the dynamic context it is evaluated in (see ``$dynamicRef`` below; empty unless the
  schema declares ``$dynamicAnchor``); locations get small integer ids on first use
  (:meth:`Document.location`), stable for one document.
- Identifiers are collected once by walking only the keywords that hold subschemas (so an
  ``$id`` inside ``enum``/``const`` data or an unknown keyword is no identifier), draft by
  draft: ``id`` (draft 4) or ``$id``; plain-name fragments in ``$id`` (drafts 6-7) and
  ``$anchor`` / ``$dynamicAnchor`` (2019-09 on) are anchors. In drafts 4-7 the siblings of
  ``$ref`` are ignored, ``$id`` included.
- A reference is resolved against the base URI of the schema it sits in: to a resource plus
  a JSON pointer or an anchor. Resources are the document's own (its root and every ``$id``)
  and, on first reference, the documents of the caller's ``registry`` (absolute URI ->
  schema, never fetched): a registered document is walked with its registry URI as its
  retrieval URI (its ``$id``, if any, resolved against it); its paths start with a
  :class:`Remote` marker, so ``pointer`` spells them ``uri#/json/pointer``. It must be of the
  same draft as the document (its ``$schema``, or the document's draft when absent).
  A reference to anything neither in the document nor registered (another file, a
  meta-schema) raises :class:`Unsupported` naming ``$ref`` and the pointer; a dangling
  pointer or anchor raises :class:`SchemaError`.
- ``$dynamicRef`` (2020-12) is exact: the *dynamic context* of a location maps each
  ``$dynamicAnchor`` name to the anchor of the outermost schema resource in the dynamic
  scope declaring it. Evaluation entering a location enters its resource (a ``$ref`` target,
  an embedded ``$id``); :meth:`Document.enter` adds that resource's dynamic anchors whose
  names are not yet bound (so the outermost stays). Locations are (path, context) pairs; the
  contexts are finite (names x declaring anchors), so the expansion stays finite. A
  ``$dynamicRef`` whose initial target declares a matching ``$dynamicAnchor`` goes to the
  context's anchor of that name; otherwise it is a ``$ref``.
- A ``$schema`` naming a registered 2020-12 meta-schema selects its ``$vocabulary``: the
  keywords of the standard vocabularies it leaves out are not keywords of the document
  (:attr:`Document.ignored`, dropped before expansion); an unknown required vocabulary is
  :class:`Unsupported`, an unknown optional one is ignored. Registered documents referenced
  from such a document may not declare a ``$schema`` of their own.
- ``$recursiveRef`` (2019-09) is resolved statically only where the dynamic scope cannot
  change the target (one resource declares ``$recursiveAnchor``); otherwise
  :class:`Unsupported`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from ...deadline import check_deadline
from ...errors import InvalidArgument, SchemaError, Unsupported

__all__ = ["Document", "pointer", "DRAFTS", "unsupported", "draft_number", "Remote", "Context"]

DRAFTS = {
    "http://json-schema.org/draft-04/schema": 4,
    "http://json-schema.org/draft-06/schema": 6,
    "http://json-schema.org/draft-07/schema": 7,
    "https://json-schema.org/draft/2019-09/schema": 2019,
    "https://json-schema.org/draft/2020-12/schema": 2020,
}
_DEFAULT_BASE = "https://tokamata.invalid/schema.json"

_SCHEMA_VALUED = ("additionalProperties", "additionalItems", "contains", "propertyNames", "not",
                  "if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")

Path = tuple
#: a dynamic context: (``$dynamicAnchor`` name, path of the outermost anchor in scope) pairs
Context = frozenset
NO_CONTEXT: Context = frozenset()


@dataclass(frozen=True)
class Remote:
    """The first element of every path into a registered document: its registry URI."""

    uri: str


def pointer(path: Path) -> str:
    """The JSON pointer of ``path`` (``""`` is the root); ``uri#/pointer`` in a registered
    document."""
    if path and isinstance(path[0], Remote):
        return path[0].uri + "#" + pointer(path[1:])
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def unsupported(keyword: str, path: Path, reason: str = "") -> Unsupported:
    """An :class:`Unsupported` naming ``keyword``, at the JSON pointer of ``path``."""
    return Unsupported(keyword, reason, pointer=pointer(path))


def draft_number(name: Any) -> int:
    """4, 6, 7, 2019 or 2020 from a draft name ("draft7", "2020-12", 7, a meta-schema URI)."""
    if isinstance(name, int) and name in (4, 6, 7, 2019, 2020):
        return name
    if isinstance(name, str):
        text = name.strip().lower().rstrip("#")
        if text in DRAFTS:
            return DRAFTS[text]
        for draft, spellings in ((4, ("4", "draft4", "draft-04")), (6, ("6", "draft6", "draft-06")),
                                 (7, ("7", "draft7", "draft-07")), (2019, ("2019-09", "draft2019-09")),
                                 (2020, ("2020-12", "draft2020-12"))):
            if text in spellings:
                return draft
    raise InvalidArgument(f"unknown JSON Schema draft {name!r} (use 4, 6, 7, '2019-09' or '2020-12')")


def _draft_of(schema: Any, default: int = 2020, at: Path = ()) -> int:
    if isinstance(schema, dict) and isinstance(schema.get("$schema"), str):
        uri = schema["$schema"].rstrip("#")
        if uri in DRAFTS:
            return DRAFTS[uri]
        uri = uri.replace("http://", "https://")
        for known, draft in DRAFTS.items():
            if known.replace("http://", "https://") == uri:
                return draft
        raise unsupported("$schema", at, f"unknown meta-schema {schema['$schema']!r}")
    return default


_VOCABULARY = "https://json-schema.org/draft/2020-12/vocab/"
#: the keywords of each standard 2020-12 vocabulary that the compiler reads
VOCABULARIES: dict[str, frozenset[str]] = {
    "core": frozenset(), "meta-data": frozenset(), "content": frozenset(),
    "applicator": frozenset({"prefixItems", "items", "contains", "additionalProperties", "properties",
                             "patternProperties", "dependentSchemas", "propertyNames", "if", "then", "else",
                             "allOf", "anyOf", "oneOf", "not"}),
    "unevaluated": frozenset({"unevaluatedItems", "unevaluatedProperties"}),
    "validation": frozenset({"type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
                             "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
                             "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties",
                             "required", "dependentRequired"}),
    "format-annotation": frozenset({"format"}), "format-assertion": frozenset({"format"}),
}


def _registry(registry: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """The registry keyed by absolute URIs without fragment."""
    out: dict[str, Any] = {}
    for uri, schema in (registry or {}).items():
        if not isinstance(uri, str) or not urlsplit(uri).scheme:
            raise InvalidArgument(f"registry keys must be absolute URIs, got {uri!r}")
        out[urldefrag(uri)[0]] = schema
    return out


def _join(base: str, ref: str) -> str:
    if ref.startswith("#"):
        return urldefrag(base)[0] + ref
    if ":" in ref.split("/", 1)[0]:
        return ref  # absolute
    joined = urljoin(base, ref)
    return joined


#: the keywords the walk of a document records (``id`` is draft 4's ``$id``)
_WALKED_KEYWORDS = ('"$id"', '"id"', '"$anchor"', '"$dynamicAnchor"', '"$recursiveAnchor"')


def _declares_nothing(text: str, root_declares_dialect: bool) -> bool:
    """Whether the schema text shows no keyword the document walk records: no identifier or
    anchor anywhere, and no ``$schema`` but the root's. A text with ``\\u`` escapes may
    spell a keyword escaped: it is walked."""
    if not text or "\\u" in text or any(keyword in text for keyword in _WALKED_KEYWORDS):
        return False
    return text.count('"$schema"') == (1 if root_declares_dialect else 0)


class Document:
    """One schema document with its resources, anchors and locations, and the registered
    documents it refers to."""

    def __init__(self, schema: Any, default_draft: Optional[int] = None,
                 registry: Optional[Mapping[str, Any]] = None, text: str = ""):
        """``text``, when given, is the JSON text ``schema`` was parsed from: if it shows that
        no subschema declares an identifier, anchor or dialect, the walk that records them is
        skipped (every location then has the document's base and resource)."""
        self.root = schema
        self.registry = _registry(registry)
        self.ignored: frozenset[str] = frozenset()  # keywords of vocabularies the dialect leaves out
        declared = isinstance(schema, dict) and "$schema" in schema
        self.draft = self._dialect(schema, 2020 if default_draft is None else default_draft)
        #: the root names no draft and the caller gave none: the embedded declarations may decide
        self._inferring = not declared and default_draft is None
        self._embedded: set[int] = set()  # drafts of the embedded $schema declarations seen
        self._reset()
        if _declares_nothing(text, declared):
            self.bases[()] = _DEFAULT_BASE  # what the walk records for such a document
            self.roots[()] = ()
        else:
            self._walk(schema, (), _DEFAULT_BASE, self.draft, ())
        if self._embedded:
            # The specification leaves a document whose root has no $schema to the
            # implementation: read it in the draft its embedded declarations agree on (a
            # declaration of any other draft, or two of them, is still refused below).
            self.draft = next(iter(self._embedded)) if len(self._embedded) == 1 else self.draft
            self._inferring = False
            self._reset()
            self._walk(schema, (), _DEFAULT_BASE, self.draft, ())
        self.resources.setdefault(urldefrag(_DEFAULT_BASE)[0], ())

    def _reset(self) -> None:
        self.resources: dict[str, Path] = {}   # absolute URI without fragment -> path
        self.anchors: dict[str, Path] = {}     # absolute URI with "#name" -> path
        self.dynamic_anchors: dict[Path, dict[str, Path]] = {}  # resource root -> name -> path
        self.recursive_anchors: list[Path] = []
        self.bases: dict[Path, str] = {}       # path of every walked subschema -> base URI
        self.roots: dict[Path, Path] = {}      # path of every walked subschema -> its resource root
        self._loaded: dict[str, int] = {}      # registry URI -> its draft, once walked
        self._ids: dict[tuple[Path, Context], int] = {}
        # (base URI, reference) -> the path it resolved to (a reference resolved once resolves
        # the same way again: anchors are names, never JSON pointers, so no later walk of a
        # registered document can claim it; failures are not kept)
        self._resolved: dict[tuple[str, str], Path] = {}
        self._locations: list[tuple[Path, Context]] = []

    def _dialect(self, schema: Any, default: int) -> int:
        """The draft of the document; a registered meta-schema's vocabularies set ``ignored``."""
        try:
            return _draft_of(schema, default)
        except Unsupported:
            meta = self.registry.get(urldefrag(schema["$schema"])[0])
            if not isinstance(meta, dict):
                raise
        name = schema["$schema"]
        if _draft_of(meta, 0, (Remote(urldefrag(name)[0]),)) != 2020:
            raise unsupported("$schema", (), f"meta-schema {name!r} is not a 2020-12 dialect")
        vocabularies = meta.get("$vocabulary")
        if vocabularies is None:
            return 2020
        if not isinstance(vocabularies, dict):
            raise SchemaError("$vocabulary of a meta-schema must be an object",
                              pointer=pointer((Remote(urldefrag(name)[0]), "$vocabulary")))
        active = set()
        for uri, required in vocabularies.items():
            known = uri[len(_VOCABULARY):] if uri.startswith(_VOCABULARY) else None
            if known in VOCABULARIES:
                active.add(known)
            elif required is not False:
                raise unsupported("$schema", (), f"meta-schema {name!r} requires the unknown vocabulary {uri!r}")
        kept = set().union(*(VOCABULARIES[v] for v in active))
        self.ignored = frozenset().union(*VOCABULARIES.values()) - kept
        return 2020

    # -- walking ----------------------------------------------------------------------------
    def _walk(self, schema: Any, path: Path, base: str, draft: int, root: Path) -> None:
        check_deadline()  # (depth: bounds.check_document; length: Limits.max_json_values)
        if not isinstance(schema, dict):
            self.bases[path] = base
            self.roots[path] = root
            return
        ref_only = draft <= 7 and "$ref" in schema
        ident = schema.get("id" if draft == 4 else "$id")
        if isinstance(ident, str) and not ref_only:
            joined = _join(base, ident)
            uri, fragment = urldefrag(joined)
            if fragment and draft <= 7 and not fragment.startswith("/"):
                self.anchors[uri + "#" + fragment] = path  # plain-name fragment: an anchor
            elif uri:
                base, root = uri, path
                self.resources.setdefault(uri, path)
        self.bases[path] = base
        self.roots[path] = root
        if path == () or (len(path) == 1 and isinstance(path[0], Remote)):
            self.resources.setdefault(urldefrag(base)[0], path)
        elif _draft_of(schema, draft, path) != draft:
            if self._inferring:
                self._embedded.add(_draft_of(schema, draft, path))
                return
            # validators apply an embedded dialect to its subschema (draft 4's "integer"
            # refuses 1.0, say): refused rather than read in the document's draft
            raise unsupported("$schema", path, f"an embedded $schema of draft {_draft_of(schema, draft, path)} "
                              f"in a draft {draft} schema (drafts are not mixed)")
        if draft >= 2019:
            for keyword in ("$anchor", "$dynamicAnchor"):
                name = schema.get(keyword)
                if isinstance(name, str):
                    self.anchors.setdefault(urldefrag(base)[0] + "#" + name, path)
                    if keyword == "$dynamicAnchor" and draft >= 2020:
                        self.dynamic_anchors.setdefault(root, {}).setdefault(name, path)
            if schema.get("$recursiveAnchor") is True:
                self.recursive_anchors.append(path)
        if ref_only:
            return
        walk = self._walk
        for keyword in _SCHEMA_VALUED:
            if keyword in schema:
                walk(schema[keyword], path + (keyword,), base, draft, root)
        for keyword in _SCHEMA_MAPS:
            value = schema.get(keyword)
            if isinstance(value, dict):
                for key, sub in value.items():
                    walk(sub, path + (keyword, key), base, draft, root)
        for keyword in _SCHEMA_LISTS:
            value = schema.get(keyword)
            if isinstance(value, list):
                for i, sub in enumerate(value):
                    walk(sub, path + (keyword, i), base, draft, root)
        items = schema.get("items")
        if isinstance(items, list):
            for i, sub in enumerate(items):
                walk(sub, path + ("items", i), base, draft, root)
        elif items is not None:
            walk(items, path + ("items",), base, draft, root)
        deps = schema.get("dependencies")
        if isinstance(deps, dict) and draft <= 7:
            for key, sub in deps.items():
                if isinstance(sub, (dict, bool)):
                    walk(sub, path + ("dependencies", key), base, draft, root)

    def _load(self, uri: str) -> None:
        """Walk the registered document ``uri`` (once)."""
        if uri in self._loaded:
            return
        root = (Remote(uri),)
        schema = self.registry[uri]
        self._loaded[uri] = draft = _draft_of(schema, self.draft, root)
        if self.ignored and isinstance(schema, dict) and "$schema" in schema:
            self._loaded[uri] = -1  # its own dialect: not mixed with the document's vocabularies
        self.resources.setdefault(uri, root)
        self._walk(schema, root, uri, draft, root)

    def _resource(self, uri: str) -> Optional[Path]:
        """The root path of resource ``uri``: the document's, a registered document's, or one
        embedded in a registered document (all registered documents are walked to find it)."""
        found = self.resources.get(uri)
        if found is None and uri in self.registry:
            self._load(uri)
            found = self.resources.get(uri)
        if found is None and len(self._loaded) < len(self.registry):
            for key in self.registry:
                try:
                    self._load(key)
                except Unsupported:
                    continue  # an unknown meta-schema: not searched
            found = self.resources.get(uri)
        return found

    # -- locations --------------------------------------------------------------------------
    def location(self, path: Path, context: Context = NO_CONTEXT) -> int:
        """The id of ``path`` evaluated in dynamic ``context``."""
        key = (path, context)
        ident = self._ids.get(key)
        if ident is None:
            ident = self._ids[key] = len(self._locations)
            self._locations.append(key)
        return ident

    def path(self, location: int) -> Path:
        return self._locations[location][0]

    def context(self, location: int) -> Context:
        return self._locations[location][1]

    def value(self, path: Path) -> Any:
        node, keys = self.root, path
        if path and isinstance(path[0], Remote):
            node, keys = self.registry[path[0].uri], path[1:]
        for key in keys:
            try:
                node = node[key]
            except (KeyError, IndexError, TypeError):
                raise SchemaError("no schema", pointer=pointer(path)) from None
        return node

    def _nearest(self, table: dict, path: Path) -> Any:
        found = table.get(path)
        if found is not None:
            return found
        # a location reached by a JSON pointer into a place the walk skipped: nearest parent
        for cut in range(len(path) - 1, -1, -1):
            found = table.get(path[:cut])
            if found is not None:
                return found
        return None

    def base(self, path: Path) -> str:
        return self._nearest(self.bases, path) or _DEFAULT_BASE

    def enter(self, context: Context, path: Path) -> Context:
        """The dynamic context once evaluation enters ``path`` (and so its resource): names
        its resource declares with ``$dynamicAnchor`` are bound unless already bound."""
        if not self.dynamic_anchors:
            return context
        root = self._nearest(self.roots, path)
        declared = self.dynamic_anchors.get(root if root is not None else ())
        if not declared:
            return context
        bound = {name for name, _ in context}
        new = [(name, where) for name, where in declared.items() if name not in bound]
        return context | frozenset(new) if new else context

    # -- references -------------------------------------------------------------------------
    def resolve(self, ref: Any, at: Path, keyword: str = "$ref") -> Path:
        """The path a reference written at ``at`` (the schema holding it) points to."""
        if not isinstance(ref, str):
            raise SchemaError(f"{keyword} must be a string, got {ref!r}", pointer=pointer(at + (keyword,)))
        base = self.base(at)
        found = self._resolved.get((base, ref))
        if found is None:
            found = self._resolved[(base, ref)] = self._resolve(base, ref, at, keyword)
        return found

    def _resolve(self, base: str, ref: str, at: Path, keyword: str) -> Path:
        target = _join(base, ref)
        uri, fragment = urldefrag(target)
        # an anchor may be declared in a registered document not walked yet: look it up first
        resource = self.resources.get(uri) if target in self.anchors else self._resource(uri)
        if target in self.anchors:
            return self._checked(self.anchors[target], ref, at, keyword)
        if resource is None:
            raise unsupported(keyword, at + (keyword,), f"remote reference {ref!r} (only references "
                              "inside the schema document or to documents in the registry are "
                              "supported; nothing is fetched)")
        if not fragment:
            return self._checked(resource, ref, at, keyword)
        if not fragment.startswith("/"):
            raise SchemaError(f"no anchor {fragment!r} for {ref!r}", pointer=pointer(at + (keyword,)))
        path = resource
        node = self.value(resource)
        for token in fragment.split("/")[1:]:
            token = unquote(token).replace("~1", "/").replace("~0", "~")
            if isinstance(node, list):
                try:
                    index = int(token)
                    node = node[index]
                except (ValueError, IndexError):
                    raise SchemaError(f"{ref!r} does not resolve", pointer=pointer(at + (keyword,))) from None
                path = path + (index,)
            elif isinstance(node, dict) and token in node:
                node = node[token]
                path = path + (token,)
            else:
                raise SchemaError(f"{ref!r} does not resolve", pointer=pointer(at + (keyword,)))
        return self._checked(path, ref, at, keyword)

    def _checked(self, path: Path, ref: str, at: Path, keyword: str) -> Path:
        """``path``, after checking that a registered document holding it is of our draft."""
        if path and isinstance(path[0], Remote):
            draft = self._loaded[path[0].uri]
            if draft == -1:
                raise unsupported(keyword, at + (keyword,), f"{ref!r} is in a registered document with its "
                                  "own $schema, the schema's dialect has other vocabularies (dialects are "
                                  "not mixed)")
            if draft != self.draft:
                raise unsupported(keyword, at + (keyword,), f"{ref!r} is in a registered document of "
                                  f"draft {draft}, the schema is draft {self.draft} (drafts are not mixed)")
        return path

    def resolve_dynamic(self, ref: Any, at: Path, context: Context = NO_CONTEXT) -> Path:
        """``$dynamicRef`` written at ``at``, evaluated in dynamic ``context``."""
        target = self.resolve(ref, at, "$dynamicRef")
        _, fragment = urldefrag(_join(self.base(at), ref))
        declared = self.value(target)
        if not (isinstance(declared, dict) and declared.get("$dynamicAnchor") == fragment):
            return target  # no bookend: a $ref
        for name, where in context:
            if name == fragment:
                return where
        return target

    def resolve_recursive(self, ref: Any, at: Path) -> Path:
        """``$recursiveRef`` (2019-09), where static resolution is exact."""
        target = self.resolve(ref, at, "$recursiveRef")
        declared = self.value(target)
        if not (isinstance(declared, dict) and declared.get("$recursiveAnchor") is True):
            return target
        if len(self.recursive_anchors) <= 1:
            return target
        raise unsupported("$recursiveRef", at + ("$recursiveRef",), "the target depends on the dynamic "
                          "scope (several resources declare $recursiveAnchor)")
