"""The shape of a user's schema document, checked before anything walks it.

A schema handed in as Python data may be anything: nested past any stack, self-referencing
(``s["not"] = s``), or small in memory but huge written out (one dict reused at every level
of a tree). Every later walk over the document (identifiers, expansion, ``json.dumps``) is
recursive and trusts what this module checked.

Invariants:
- :func:`check_document` walks each container (``dict``, ``list``, ``tuple``) without
  recursion, in time linear in the number of distinct Python containers (a container reached
  again is not walked again).
- A document that contains itself (a cycle of Python objects) is a :class:`SchemaError`
  with the JSON pointer of the reference that closes the cycle; so is an object key that is
  not a string, and an int too long for Python to write as text.
- Nesting deeper than ``Limits.max_json_depth`` containers (at most :data:`MAX_DEPTH`,
  whatever the field says) is ``LimitExceeded`` naming it,
  with ``pointer`` where the bound is crossed; more than ``Limits.max_json_values`` values,
  counted as written out (a container reused in several places counts each time), is
  ``LimitExceeded`` naming that field. So the recursive walks that follow are bounded in
  depth and the document's walks in length.
- :func:`text_within_bounds` decides from a schema's JSON text alone, without parsing or
  walking, that the parsed document passes :func:`check_document` (True only when it does).
"""

from __future__ import annotations

from typing import Any, Iterator

from ...deadline import check_deadline
from ...errors import LimitExceeded, SchemaError
from ...limits import Limits

__all__ = ["check_document", "text_within_bounds", "MAX_DEPTH"]

#: the most nesting the recursive walks are given, whatever ``Limits.max_json_depth`` says:
#: compiled (Cython) code does not check Python's recursion limit, and past this depth the
#: C stack would overflow (a crash, not an error)
MAX_DEPTH = 1_000

_CONTAINERS = (dict, list, tuple)


def _children(value: Any, prefix: str, keys: list) -> Iterator:
    """(key, child) pairs of a container; an object's keys must be strings."""
    if isinstance(value, dict):
        for key in value:
            if key.__class__ is not str and not isinstance(key, str):
                raise SchemaError(f"object keys must be strings, got {key!r}", pointer=_pointer(prefix, keys))
        return iter(value.items())
    return enumerate(value)


def _check_scalar(value: Any, prefix: str, keys: list) -> None:
    """An int Python cannot write as text (``sys.set_int_max_str_digits``) is refused here,
    not by the first ``str`` or ``json.dumps`` of it."""
    try:
        str(value)
    except ValueError:
        raise SchemaError(f"an integer of {value.bit_length()} bits is more digits than Python converts "
                          "to text (sys.set_int_max_str_digits)", pointer=_pointer(prefix, keys)) from None


def _pointer(prefix: str, keys: list) -> str:
    return prefix + "".join("/" + str(k).replace("~", "~0").replace("/", "~1") for k in keys)


def _limit(limit: str, value: int, bound: int, where: str) -> LimitExceeded:
    error = LimitExceeded(limit, value, bound)
    error.pointer = where
    return error


def check_document(document: Any, limits: Limits, prefix: str = "") -> None:
    """Check ``document`` (see the module docstring); ``prefix`` starts every pointer (a
    registry document's ``uri#``)."""
    if not isinstance(document, _CONTAINERS):
        return
    max_depth, max_values = min(limits.max_json_depth, MAX_DEPTH), limits.max_json_values
    containers = _CONTAINERS
    done: dict[int, tuple[int, int]] = {}  # id of a container walked -> (height, values written out)
    # each frame: [container, its remaining children, height so far, values so far]
    stack: list[list] = [[document, _children(document, prefix, []), 1, 1]]
    keys: list = []  # the key of each open frame but the first
    open_ids = {id(document)}
    while stack:
        frame = stack[-1]
        child = None
        for key, child in frame[1]:
            if not isinstance(child, containers):
                if child.__class__ is int and child.bit_length() > 3000:
                    _check_scalar(child, prefix, keys + [key])
                frame[3] += 1
                child = None
                continue
            ident = id(child)
            if ident in open_ids:
                raise SchemaError("the schema contains itself (a cycle of Python objects is no JSON document)",
                                  pointer=_pointer(prefix, keys + [key]))
            known = done.get(ident)
            if known is None:
                break  # walked below
            height, values = known
            if len(stack) + height > max_depth:
                raise _limit("max_json_depth", len(stack) + height, max_depth, _pointer(prefix, keys + [key]))
            frame[2] = max(frame[2], height + 1)
            frame[3] += values
            if frame[3] > max_values:
                raise _limit("max_json_values", frame[3], max_values, _pointer(prefix, keys + [key]))
            child = None
        if child is not None:  # a container not walked yet: walk it now
            if len(stack) + 1 > max_depth:
                raise _limit("max_json_depth", len(stack) + 1, max_depth, _pointer(prefix, keys + [key]))
            if not len(done) & 1023:
                check_deadline()
            keys.append(key)
            open_ids.add(id(child))
            stack.append([child, _children(child, prefix, keys), 1, 1])
            continue
        stack.pop()  # every child seen
        container = frame[0]
        open_ids.discard(id(container))
        done[id(container)] = (frame[2], frame[3])
        if frame[3] > max_values:
            raise _limit("max_json_values", frame[3], max_values, _pointer(prefix, keys))
        if stack:
            parent = stack[-1]
            parent[2] = max(parent[2], frame[2] + 1)
            parent[3] += frame[3]
            keys.pop()


def text_within_bounds(text: str, limits: Limits) -> bool:
    """Is ``json.loads(text)`` sure to pass :func:`check_document` (True: the walk can be
    skipped)? Parsed text has no cycles, no shared containers, string keys only and no int
    too long to write (``json.loads`` refuses one); each of its values starts at a character
    of its own, so there are at most ``len(text)`` of them, and each nesting level opens with
    a ``{`` or a ``[``, so the depth is at most their count. False says nothing.

    >>> text_within_bounds('{"type": "object", "properties": {"a": {}}}', Limits())
    True
    >>> text_within_bounds("[" * 300 + "]" * 300, Limits())
    False
    """
    return (len(text) <= limits.max_json_values
            and text.count("{") + text.count("[") <= min(limits.max_json_depth, MAX_DEPTH))
