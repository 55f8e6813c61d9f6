"""Python source text of a type's values: writing one (:func:`dump_python`) and reading one back
(:func:`parse_python`), the language of :mod:`.python_grammar`.

Why a reader of our own, not ``eval``, ``ast.literal_eval`` or ``ast.parse``: the text comes
from a model, so it is untrusted; ``eval`` runs it. ``ast.literal_eval`` runs no code but
takes a different language (any whitespace, comments, ``0x10``, implicit string
concatenation, ``1_000``, no constructor calls) and ``ast.parse`` costs memory and recursion
on hostile input before we could refuse anything. The reader here takes exactly the
grammar's language, character by character, with the nesting bounded by
``Limits.max_json_depth``; what it reads goes to the one converter, :func:`.values.build`.

Invariants:
- :func:`parse_python` accepts exactly the texts of the compact layout: ``", "`` after each
  comma, ``": "`` after each dict key, no whitespace elsewhere (none before or after the
  value); strings with the escapes of :func:`.scalars.python_char`; numbers
  ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?`` (an integer literal is an ``int``, any
  other a ``Decimal`` until the type decides). A text outside the language is a
  :class:`~tokamata.ParseError` whose ``span`` is where reading stopped.
- :func:`dump_python` writes what the grammar accepts: all fields of a record in order
  (defaults too), ``repr`` of strings and ints, floats in plain decimal notation (their
  shortest ``repr`` read exactly), sets sorted where their items sort.
"""

from __future__ import annotations

import enum
import re
from typing import Any

from ...errors import InvalidArgument, LimitExceeded, ParseError
from ...limits import Limits
from .json_text import input_text, iso_text, plain_number, sorted_items
from .model import Choice, FixedTuple, Mapping, Node, Record, Scalar, Sequence, Union, type_name
from .scalars import PY_SHORT_ESCAPES
from .values import ISO_CALLS, Call, Name, PyFrozenset, PySet, PyTuple, build, fits

__all__ = ["parse_python", "dump_python"]

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_HEX = re.compile(r"[0-9a-fA-F]+")
_CONSTANTS = {"True": True, "False": False, "None": None}


class _Reader:
    def __init__(self, text: str, limits: Limits):
        self.text = text
        self.i = 0
        self.limits = limits

    def fail(self, message: str, end: int | None = None) -> ParseError:
        end = self.i + 1 if end is None else end
        return ParseError(message, text=self.text, span=(self.i, min(max(end, self.i), len(self.text))))

    def expect(self, literal: str) -> None:
        if not self.text.startswith(literal, self.i):
            raise self.fail(f"expected {literal!r}")
        self.i += len(literal)

    def peek(self, literal: str) -> bool:
        return self.text.startswith(literal, self.i)

    def value(self, depth: int) -> Any:
        if depth > self.limits.max_json_depth:
            raise LimitExceeded("max_json_depth", depth, self.limits.max_json_depth)
        if self.i >= len(self.text):
            raise self.fail("expected a value")
        c = self.text[self.i]
        if c in "'\"":
            return self.string(c)
        if c == "-" or c.isdigit():
            return self.number()
        if c == "[":
            return self.items("[", "]", depth)
        if c == "(":
            self.i += 1
            if self.peek(")"):
                self.i += 1
                return PyTuple()
            first = self.value(depth + 1)
            if self.peek(",)"):
                self.i += 2
                return PyTuple((first,))
            rest = [first]
            while self.peek(", "):
                self.i += 2
                rest.append(self.value(depth + 1))
            if len(rest) < 2:
                raise self.fail("expected ',)' (a tuple of one) or ', '")
            self.expect(")")
            return PyTuple(rest)
        if c == "{":
            return self.braces(depth)
        match = _NAME.match(self.text, self.i)
        if match is None:
            raise self.fail(f"unexpected {c!r}")
        name = match.group()
        self.i = match.end()
        if name in _CONSTANTS:
            return _CONSTANTS[name]
        if not self.peek("("):
            return Name(name)
        self.i += 1
        if name in ("set", "frozenset") and self.peek(")"):
            self.i += 1
            return PySet([]) if name == "set" else PyFrozenset([])
        if name == "frozenset":
            inner = self.braces(depth)
            if not isinstance(inner, PySet):
                raise self.fail("expected frozenset({...}) of items")
            self.expect(")")
            return PyFrozenset(inner.items)
        args: list = []
        kwargs: list[tuple[str, Any]] = []
        first = True
        while not self.peek(")"):
            if not first:
                self.expect(", ")
            first = False
            match = _NAME.match(self.text, self.i)
            if match and "." not in match.group() and self.text.startswith("=", match.end()):
                self.i = match.end() + 1
                kwargs.append((match.group(), self.value(depth + 1)))
            else:
                if kwargs:
                    raise self.fail("a positional argument after keyword arguments")
                args.append(self.value(depth + 1))
        self.i += 1
        return Call(name, args, kwargs)

    def items(self, open_: str, close: str, depth: int) -> list:
        self.expect(open_)
        out: list = []
        if self.peek(close):
            self.i += 1
            return out
        out.append(self.value(depth + 1))
        while self.peek(", "):
            self.i += 2
            out.append(self.value(depth + 1))
        self.expect(close)
        return out

    def braces(self, depth: int) -> Any:
        """``{...}``: a dict (``{}`` or with ``key: value``) or a set (items)."""
        self.expect("{")
        if self.peek("}"):
            self.i += 1
            return {}
        first = self.value(depth + 1)
        if not self.peek(": "):
            items = [first]
            while self.peek(", "):
                self.i += 2
                items.append(self.value(depth + 1))
            self.expect("}")
            return PySet(items)
        out = {}
        key = first
        while True:
            self.expect(": ")
            if not isinstance(key, str):
                raise self.fail("dict keys must be strings")
            out[key] = self.value(depth + 1)
            if not self.peek(", "):
                break
            self.i += 2
            key = self.value(depth + 1)
        self.expect("}")
        return out

    def number(self) -> Any:
        from decimal import Decimal

        match = _NUMBER.match(self.text, self.i)
        if match is None:
            raise self.fail("expected a number")
        self.i = match.end()
        if match.group(1) is None and match.group(2) is None:
            return int(match.group())
        return Decimal(match.group())

    def string(self, quote: str) -> str:
        start = self.i
        self.i += 1
        out: list[str] = []
        text = self.text
        while True:
            if self.i >= len(text):
                self.i = start
                raise self.fail("an unterminated string", len(text))
            c = text[self.i]
            if c == quote:
                self.i += 1
                return "".join(out)
            code = ord(c)
            if code < 0x20 or code == 0x7F or 0xD800 <= code <= 0xDFFF:
                raise self.fail(f"the character {c!r} must be escaped in a string")
            if c != "\\":
                out.append(c)
                self.i += 1
                continue
            letter = text[self.i + 1:self.i + 2]
            if letter in PY_SHORT_ESCAPES:
                out.append(PY_SHORT_ESCAPES[letter])
                self.i += 2
                continue
            width = {"x": 2, "u": 4, "U": 8}.get(letter)
            digits = text[self.i + 2:self.i + 2 + width] if width else ""
            if not width or len(digits) != width or not _HEX.fullmatch(digits):
                raise self.fail(f"an escape this syntax does not take: {text[self.i:self.i + 2]!r}", self.i + 2)
            value = int(digits, 16)
            if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
                raise self.fail(f"the escape {text[self.i:self.i + 2 + width]!r} is not a character",
                                self.i + 2 + width)
            out.append(chr(value))
            self.i += 2 + width


def parse_python(text: str | bytes, node: Node, limits: Limits) -> Any:
    """The value of ``node``'s type that the Python ``text`` spells."""
    text = input_text(text)
    reader = _Reader(text, limits)
    data = reader.value(0)
    if reader.i != len(text):
        raise reader.fail("text after the value", len(text))
    try:
        return build(node, data, "python")
    except ParseError as error:
        error.text = text
        raise


def dump_python(value: Any, node: Node) -> str:
    """``value`` as Python source in the grammar's language."""
    out: list[str] = []
    _write(value, node, node.path, out)
    return "".join(out)



def _sub(value: Any, node: Node, path: str) -> str:
    out: list[str] = []
    _write(value, node, path, out)
    return "".join(out)


def _write(value: Any, node: Node, path: str, out: list[str]) -> None:
    if isinstance(node, Union):
        for option in node.options:
            if fits(value, option):
                return _write(value, option, path, out)
        raise InvalidArgument(f"{value!r:.60} is not a value of any option of the union", path=path)
    if not fits(value, node):
        raise InvalidArgument(f"{value!r:.60} is not a value of this type", path=path)
    if isinstance(node, Scalar):
        kind = node.kind
        if kind == "float":
            out.append(plain_number(float(value), path))
        elif kind == "decimal":
            out.append(f"Decimal('{plain_number(value, path)}')")
        elif kind in ISO_CALLS:
            out.append(f"{ISO_CALLS[kind]}('{iso_text(value, kind, path)}')")
        else:  # int, str, bool, None
            out.append(repr(value))
    elif isinstance(node, Choice):
        out.append(f"{type_name(type(value))}.{value.name}" if isinstance(value, enum.Enum) else repr(value))
    elif isinstance(node, Sequence):
        items = sorted_items(value) if node.kind in ("set", "frozenset") else list(value)
        parts = [_sub(v, node.item, path + "[]") for v in items]
        if node.kind == "list":
            out.append("[" + ", ".join(parts) + "]")
        elif node.kind == "tuple":
            out.append(_tuple(parts))
        elif node.kind == "set":
            out.append("{" + ", ".join(parts) + "}" if parts else "set()")
        else:
            out.append("frozenset({" + ", ".join(parts) + "})" if parts else "frozenset()")
    elif isinstance(node, FixedTuple):
        out.append(_tuple([_sub(v, n, f"{path}[{i}]") for i, (v, n) in enumerate(zip(value, node.items))]))
    elif isinstance(node, Mapping):
        out.append("{" + ", ".join(f"{k!r}: {_sub(v, node.value, path + '{}')}" for k, v in value.items()) + "}")
    else:
        assert isinstance(node, Record)
        parts = []
        for f in node.fields:
            if node.kind == "typeddict":
                if f.name not in value:
                    continue
                field_value = value[f.name]
            else:
                field_value = getattr(value, f.name)
            parts.append(f"{f.key}={_sub(field_value, f.node, f'{path}.{f.name}')}")
        out.append(f"{node.name}(" + ", ".join(parts) + ")")
    return None


def _tuple(parts: list[str]) -> str:
    if len(parts) == 1:
        return f"({parts[0]},)"
    return "(" + ", ".join(parts) + ")"
