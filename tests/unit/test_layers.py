"""The package's import graph: layers point one way, and nothing imports in a cycle.

Every ``import`` of every module under src/tokamata (module level and inside functions alike,
``if TYPE_CHECKING:`` blocks excepted) is an edge. The layers, bottom to top:

  0 base          errors, limits, deadline, gc_pause, caches, _core, vocab, trie, bitmask, healing (token
                  healing: prompt ids and the trie)
  1 automata      automata/*
  2 grammar       grammar/* (IR, lexer, parser), slices (the vocabulary's slices, built from an
                  automaton)
  3 front ends    syntax/*; constraint and matcher (the one Constraint and Matcher), canonical_core,
                  canonical_native
                  (a matcher core with its canonical filter state)
  4 front doors   compile, constraint_cache (compiles through the front doors)
  5 integrations  integrations/*
  6 generation    generate/* (the Pipeline over model backends; uses the integrations' helpers)
  7 the face      tokamata (the package), __main__, cli/*

A module may import its own layer or a lower one, never a higher one; and the graph has no
cycles (a cycle would make the order of imports, and so the meaning of a partial import,
depend on which module a user imports first).
"""

from __future__ import annotations

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "src" / "tokamata"

LAYERS = [  # (layer, module name prefixes), most specific prefix first where they overlap
    (0, ("tokamata.errors", "tokamata.limits", "tokamata.deadline", "tokamata.gc_pause", "tokamata.caches", "tokamata._core",
         "tokamata.vocab", "tokamata.trie", "tokamata.bitmask", "tokamata.healing")),
    (1, ("tokamata.automata",)),
    (2, ("tokamata.grammar", "tokamata.slices")),
    (3, ("tokamata.syntax", "tokamata.constraint", "tokamata.matcher", "tokamata.canonical_core",
         "tokamata.canonical_native")),
    (4, ("tokamata.compile", "tokamata.constraint_cache")),
    (5, ("tokamata.integrations",)),
    (6, ("tokamata.generate",)),
    (7, ("tokamata.__main__", "tokamata.cli", "tokamata")),
]


def _modules() -> dict[str, pathlib.Path]:
    found = {"tokamata._core": PACKAGE / "_core.pyi"}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def layer_of(module: str) -> int:
    best = None
    for layer, prefixes in LAYERS:
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (layer, len(prefix))
    assert best is not None, f"{module} is in no layer: add it to LAYERS in {__file__}"
    return best[0]


def _targets(module: str, node: ast.AST) -> list[str]:
    """The tokamata modules an import statement names (a name imported from a package is the
    submodule of that name when there is one, else the package)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        assert isinstance(node, ast.ImportFrom)
        if node.level:
            is_package = MODULES[module].name == "__init__.py"
            base = module.split(".")
            base = base[: len(base) - node.level + (1 if is_package else 0)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        names = [f"{target}.{alias.name}" if f"{target}.{alias.name}" in MODULES else target for alias in node.names]
    out = []
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name.startswith("tokamata") and name != module:
            out.append(name)
    return out


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        graph[module] = set()
        if path.suffix == ".pyi":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                typing_only.update(id(inner) for inner in ast.walk(node))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in typing_only:
                graph[module].update(_targets(module, node))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_is_read():
    graph = import_graph()
    assert "tokamata.automata.derivatives" in graph["tokamata.automata.boolean"]
    assert "tokamata.syntax.regex" in graph["tokamata.syntax.regex_lower"]
    assert "tokamata.constraint" in graph["tokamata.compile"]


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_layers_point_down():
    upward = []
    for module, targets in import_graph().items():
        for target in targets:
            if layer_of(target) > layer_of(module):
                upward.append(f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})")
    assert upward == []


def private_uses(module: str, tree: ast.AST) -> set[str]:
    """``module: name`` for every private (single-underscore) name of another tokamata module
    that ``module``'s code uses: imported by name, or read as an attribute of an imported module
    (``d._ALT``). Private modules (``_core``) are not private names."""
    found = set()
    aliases = {}  # local name -> tokamata module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            targets = _targets(module, node)
            for alias, target in zip(node.names, targets + [None] * len(node.names)):
                local = alias.asname or alias.name
                if target is not None and target.endswith("." + alias.name):
                    aliases[local] = target  # a submodule
                elif alias.name.startswith("_") and not alias.name.startswith("__") and target:
                    found.add(f"{module}: {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("tokamata") and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.add(f"{module}: {aliases[node.value.id]}.{node.attr}")
    return found


def test_no_private_names_across_modules():
    """What another module needs is public API of its home module (the expression kinds are
    ``derivatives.Kind``, the facts ``automata/analysis.py``)."""
    crossing = set()
    for module, path in MODULES.items():
        if path.suffix != ".pyi":
            crossing |= private_uses(module, ast.parse(path.read_text(encoding="utf-8")))
    assert sorted(crossing) == []


def test_private_uses_are_found():
    source = "from . import derivatives as d\nfrom .boolean import _secret, clear\nx = d._ALT + d.Kind.ALT\n"
    found = private_uses("tokamata.automata.analysis", ast.parse(source))
    assert found == {"tokamata.automata.analysis: _secret",
                     "tokamata.automata.analysis: tokamata.automata.derivatives._ALT"}
