"""Schema documents: the draft, subschema locations, ``$id`` scopes, anchors and ``$ref``.

Invariants:
- A *location* is a subschema addressed by its path from the document root (a tuple of keys
  and indices); ``pointer(path)`` is its JSON pointer, used in every message. Locations get
  small integer ids on first use (:meth:`Document.location`), stable for one document.
- Identifiers are collected once by walking only the keywords that hold subschemas (so an
  ``$id`` inside ``enum``/``const`` data or an unknown keyword is no identifier), draft by
  draft: ``id`` (draft 4) or ``$id``; plain-name fragments in ``$id`` (drafts 6-7) and
  ``$anchor`` / ``$dynamicAnchor`` (2019-09 on) are anchors. In drafts 4-7 the siblings of
  ``$ref`` are ignored, ``$id`` included.
- A reference is resolved against the base URI of the schema it sits in: to a registered
  resource plus a JSON pointer or an anchor. A reference to anything not in the document
  (another file, a meta-schema) raises :class:`Unsupported` naming ``$ref`` and the pointer;
  a dangling pointer or anchor raises :class:`SchemaError`.
- ``$dynamicRef`` / ``$recursiveRef`` are resolved statically only where the dynamic scope
  cannot change the target (one resource declares the anchor); otherwise :class:`Unsupported`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

from ...errors import SchemaError, Unsupported

__all__ = ["Document", "pointer", "DRAFTS", "unsupported", "draft_number"]

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


def pointer(path: Path) -> str:
    """The JSON pointer of ``path`` (``""`` is the root)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def unsupported(keyword: str, path: Path, reason: str = "") -> Unsupported:
    """An :class:`Unsupported` naming ``keyword`` and its JSON pointer (also as attributes)."""
    where = pointer(path) or "/"
    error = Unsupported(f"{keyword} at {where}" + (f": {reason}" if reason else ""))
    error.keyword = keyword  # type: ignore[attr-defined]
    error.pointer = pointer(path)  # type: ignore[attr-defined]
    return error


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
    from ...errors import InvalidArgument
    raise InvalidArgument(f"unknown JSON Schema draft {name!r} (use 4, 6, 7, '2019-09' or '2020-12')")


def _draft_of(schema: Any, default: int = 2020) -> int:
    if isinstance(schema, dict) and isinstance(schema.get("$schema"), str):
        uri = schema["$schema"].rstrip("#")
        if uri in DRAFTS:
            return DRAFTS[uri]
        uri = uri.replace("http://", "https://")
        for known, draft in DRAFTS.items():
            if known.replace("http://", "https://") == uri:
                return draft
        raise unsupported("$schema", (), f"unknown meta-schema {schema['$schema']!r}")
    return default


def _join(base: str, ref: str) -> str:
    if ref.startswith("#"):
        return urldefrag(base)[0] + ref
    if ":" in ref.split("/", 1)[0]:
        return ref  # absolute
    joined = urljoin(base, ref)
    return joined


class Document:
    """One schema document with its resources, anchors and locations."""

    def __init__(self, schema: Any, default_draft: int = 2020):
        self.root = schema
        self.draft = _draft_of(schema, default_draft)
        self.resources: dict[str, Path] = {}   # absolute URI without fragment -> path
        self.anchors: dict[str, Path] = {}     # absolute URI with "#name" -> path
        self.dynamic_anchors: dict[str, list[Path]] = {}  # name -> paths declaring it
        self.recursive_anchors: list[Path] = []
        self.bases: dict[Path, str] = {}       # path of every walked subschema -> base URI
        self._ids: dict[Path, int] = {}
        self._paths: list[Path] = []
        self._walk(schema, (), _DEFAULT_BASE)
        self.resources.setdefault(urldefrag(_DEFAULT_BASE)[0], ())

    # -- walking ----------------------------------------------------------------------------
    def _id_keyword(self) -> str:
        return "id" if self.draft == 4 else "$id"

    def _walk(self, schema: Any, path: Path, base: str) -> None:
        if not isinstance(schema, dict):
            self.bases[path] = base
            return
        ref_only = self.draft <= 7 and "$ref" in schema
        ident = schema.get(self._id_keyword())
        if isinstance(ident, str) and not ref_only:
            joined = _join(base, ident)
            uri, fragment = urldefrag(joined)
            if fragment and self.draft <= 7 and not fragment.startswith("/"):
                self.anchors[uri + "#" + fragment] = path  # plain-name fragment: an anchor
            elif uri:
                base = uri
                self.resources[uri] = path
        self.bases[path] = base
        if path == ():
            self.resources.setdefault(urldefrag(base)[0], ())
        if self.draft >= 2019:
            for keyword in ("$anchor", "$dynamicAnchor"):
                name = schema.get(keyword)
                if isinstance(name, str):
                    self.anchors[urldefrag(base)[0] + "#" + name] = path
                    if keyword == "$dynamicAnchor":
                        self.dynamic_anchors.setdefault(name, []).append(path)
            if schema.get("$recursiveAnchor") is True:
                self.recursive_anchors.append(path)
        if ref_only:
            return
        for keyword in _SCHEMA_VALUED:
            if keyword in schema:
                self._walk(schema[keyword], path + (keyword,), base)
        for keyword in _SCHEMA_MAPS:
            value = schema.get(keyword)
            if isinstance(value, dict):
                for key, sub in value.items():
                    self._walk(sub, path + (keyword, key), base)
        for keyword in _SCHEMA_LISTS:
            value = schema.get(keyword)
            if isinstance(value, list):
                for i, sub in enumerate(value):
                    self._walk(sub, path + (keyword, i), base)
        items = schema.get("items")
        if isinstance(items, list):
            for i, sub in enumerate(items):
                self._walk(sub, path + ("items", i), base)
        elif items is not None:
            self._walk(items, path + ("items",), base)
        deps = schema.get("dependencies")
        if isinstance(deps, dict) and self.draft <= 7:
            for key, sub in deps.items():
                if isinstance(sub, (dict, bool)):
                    self._walk(sub, path + ("dependencies", key), base)

    # -- locations --------------------------------------------------------------------------
    def location(self, path: Path) -> int:
        ident = self._ids.get(path)
        if ident is None:
            ident = self._ids[path] = len(self._paths)
            self._paths.append(path)
        return ident

    def path(self, location: int) -> Path:
        return self._paths[location]

    def value(self, path: Path) -> Any:
        node = self.root
        for key in path:
            try:
                node = node[key]
            except (KeyError, IndexError, TypeError):
                raise SchemaError(f"no schema at {pointer(path) or '/'}") from None
        return node

    def base(self, path: Path) -> str:
        found = self.bases.get(path)
        if found is not None:
            return found
        # a location reached by a JSON pointer into a place the walk skipped: nearest parent
        for cut in range(len(path) - 1, -1, -1):
            found = self.bases.get(path[:cut])
            if found is not None:
                return found
        return _DEFAULT_BASE

    # -- references -------------------------------------------------------------------------
    def resolve(self, ref: Any, at: Path, keyword: str = "$ref") -> Path:
        """The path a reference written at ``at`` (the schema holding it) points to."""
        if not isinstance(ref, str):
            raise SchemaError(f"{keyword} at {pointer(at) or '/'} must be a string, got {ref!r}")
        target = _join(self.base(at), ref)
        uri, fragment = urldefrag(target)
        if target in self.anchors:
            return self.anchors[target]
        resource = self.resources.get(uri)
        if resource is None:
            raise unsupported(keyword, at + (keyword,), f"remote reference {ref!r} (only references "
                              "inside the schema document are supported)")
        if not fragment:
            return resource
        if not fragment.startswith("/"):
            raise SchemaError(f"{keyword} at {pointer(at) or '/'}: no anchor {fragment!r} for {ref!r}")
        path = resource
        node = self.value(resource)
        for token in fragment.split("/")[1:]:
            token = unquote(token).replace("~1", "/").replace("~0", "~")
            if isinstance(node, list):
                try:
                    index = int(token)
                    node = node[index]
                except (ValueError, IndexError):
                    raise SchemaError(f"{keyword} at {pointer(at) or '/'}: {ref!r} does not resolve") from None
                path = path + (index,)
            elif isinstance(node, dict) and token in node:
                node = node[token]
                path = path + (token,)
            else:
                raise SchemaError(f"{keyword} at {pointer(at) or '/'}: {ref!r} does not resolve")
        return path

    def resolve_dynamic(self, ref: Any, at: Path) -> Path:
        """``$dynamicRef``, where static resolution is exact."""
        target = self.resolve(ref, at, "$dynamicRef")
        _, fragment = urldefrag(_join(self.base(at), ref))
        declared = self.value(target)
        is_dynamic = isinstance(declared, dict) and declared.get("$dynamicAnchor") == fragment
        if not is_dynamic or len(self.dynamic_anchors.get(fragment, [])) <= 1:
            return target
        raise unsupported("$dynamicRef", at + ("$dynamicRef",), f"{ref!r} depends on the dynamic scope "
                          f"({len(self.dynamic_anchors[fragment])} resources declare "
                          f"$dynamicAnchor {fragment!r})")

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
