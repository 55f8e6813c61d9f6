"""The packaging configuration, checked without compiling anything: what ``pip install .``
requires, the extras, and what the source distribution holds (built in-process with
scikit-build-core's PEP 517 hook, which copies files and compiles nothing).

The real build (sdist -> wheel -> fresh venv -> quick start) takes minutes on 2 cores: it is
``tests/integration/test_wheel.py``, behind ``@pytest.mark.slow`` (``make test-wheel``).
"""

from __future__ import annotations

import re
import sys
import tarfile
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
CMAKE = (ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
EXTRAS = {"torch", "transformers", "llama-cpp", "vllm", "sglang", "test", "bench", "docs"}


def test_numpy_is_the_only_required_dependency():
    assert [re.split(r"[<>=!~ ;\[]", d)[0] for d in PYPROJECT["project"]["dependencies"]] == ["numpy"]


def test_the_extras():
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert set(extras) == EXTRAS
    assert all(extras[name] for name in EXTRAS)
    assert PYPROJECT["project"]["scripts"] == {"tokamata": "tokamata.cli:main"}


def cmake_sources() -> list[str]:
    """Every file CMakeLists.txt compiles: the C++ sources and the Cython-compiled modules."""
    cpp = re.findall(r"\b(cpp/[\w/]+\.cpp)\b", CMAKE)
    modules = re.search(r"set\(TOKAMATA_CYTHON_MODULES\s+(.*?)\)", CMAKE, re.DOTALL).group(1).split()
    return cpp + [f"src/tokamata/{m}.py" for m in modules]


def test_cmake_sources_exist():
    sources = cmake_sources()
    assert len(sources) > 20
    assert [s for s in sources if not (ROOT / s).is_file()] == []


def test_the_wheel_gets_the_package_the_extension_and_the_stub():
    """scikit-build-core puts ``wheel.packages`` (the whole folder) and CMake's installs in the
    wheel: the extension goes into tokamata/, beside its stub and the py.typed marker."""
    assert PYPROJECT["tool"]["scikit-build"]["wheel"]["packages"] == ["src/tokamata"]
    assert "install(TARGETS _core LIBRARY DESTINATION tokamata)" in CMAKE
    for name in ("_core.pyi", "py.typed", "__init__.py", "__main__.py"):
        assert (ROOT / "src" / "tokamata" / name).is_file()


def test_the_sdist_holds_what_the_build_needs(tmp_path, monkeypatch):
    build = pytest.importorskip("scikit_build_core.build", reason="needs scikit-build-core (`make install`)")
    monkeypatch.chdir(ROOT)
    name = build.build_sdist(str(tmp_path))
    with tarfile.open(tmp_path / name) as sdist:
        members = {m.split("/", 1)[1] for m in sdist.getnames() if "/" in m}
    needed = ["pyproject.toml", "CMakeLists.txt", "README.md", "src/tokamata/_core.pyi", "src/tokamata/py.typed",
              *cmake_sources(), *(str(p.relative_to(ROOT)) for p in (ROOT / "cpp" / "include").rglob("*.hpp"))]
    assert [f for f in needed if f not in members] == []
    assert not [m for m in members if m.split("/")[0] in (".venv", ".cache", "build", "site", ".git")]
