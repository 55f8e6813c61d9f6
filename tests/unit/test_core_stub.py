"""The extension's stub (src/tokamata/_core.pyi) says what the extension has: every class,
function, method and property of ``tokamata._core`` is in the stub with the same parameter
names, and the stub names nothing the extension lacks. (mypy's stubtest cannot read nanobind's
function objects, so the names and parameters are compared here, from nanobind's own
signatures.)"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

from tokamata import _core

STUB = pathlib.Path(_core.__file__).resolve().parent / "_core.pyi"
if not STUB.is_file():  # an installed (non-editable) build keeps the stub beside the sources
    STUB = pathlib.Path(__file__).resolve().parents[2] / "src" / "tokamata" / "_core.pyi"


def _stub() -> dict[str, dict[str, list[str] | None]]:
    """{class or "" for module level: {name: parameter names, or None for a property}}."""
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    found: dict[str, dict[str, list[str] | None]] = {"": {}}

    def params(fn: ast.FunctionDef) -> list[str]:
        names = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        return [n for n in names if n not in ("self", "cls")]

    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[""][node.name] = params(node)
        elif isinstance(node, ast.ClassDef):
            members: dict[str, list[str] | None] = {}
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    is_property = any(isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list)
                    members[item.name] = None if is_property else params(item)
            found[node.name] = members
    return found


def _runtime_params(fn) -> list[str]:
    """Parameter names from nanobind's signature text, e.g. ``def f(self, a: int, b: str = ...)``."""
    text = getattr(fn, "__nb_signature__", None)
    if not text:
        return []
    signature = text[0][0] if isinstance(text, tuple) and isinstance(text[0], tuple) else str(text)
    inside = signature[signature.index("(") + 1: signature.rindex(")")]
    depth, current, parts = 0, "", []
    for ch in inside:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current)
    names = [re.split(r"[:=]", p.strip(), maxsplit=1)[0].strip() for p in parts]
    return [n for n in names if n not in ("self", "cls", "*", "/") and not n.startswith("*")]


def _runtime() -> dict[str, dict[str, object]]:
    found: dict[str, dict[str, object]] = {"": {}}
    for name in dir(_core):
        if name.startswith("_"):
            continue
        value = getattr(_core, name)
        if isinstance(value, type):
            found[name] = {m: getattr(value, m) for m in vars(value) if not m.startswith("_")}
            if "__init__" in vars(value) or "__new__" in vars(value):
                found[name]["__init__"] = vars(value).get("__init__") or vars(value).get("__new__")
        elif callable(value):
            found[""][name] = value
    return found


STUBBED = _stub()
RUNTIME = _runtime()


def test_same_classes_and_functions():
    assert sorted(STUBBED) == sorted(RUNTIME)
    assert sorted(STUBBED[""]) == sorted(RUNTIME[""])


@pytest.mark.parametrize("cls", sorted(c for c in RUNTIME if c))
def test_same_members(cls):
    stub_members = {m for m in STUBBED[cls] if not m.startswith("__")}
    runtime_members = {m for m in RUNTIME[cls] if not m.startswith("__")}
    assert stub_members == runtime_members, cls


@pytest.mark.parametrize("cls", sorted(RUNTIME))
def test_same_parameter_names(cls):
    for name, value in RUNTIME[cls].items():
        expected = STUBBED[cls].get(name)
        if name == "__init__" and "__init__" not in STUBBED[cls]:
            continue  # a class the stub leaves without a constructor is made by a factory
        if expected is None or isinstance(value, property):
            continue
        runtime = _runtime_params(value)
        if runtime:
            assert runtime == expected, f"{cls}.{name}: runtime {runtime}, stub {expected}"
