"""The package type-checks: mypy over ``src/tokamata`` (with the extension's stub
``_core.pyi`` standing for the extension) finds no error, under the ``[tool.mypy]``
settings in pyproject.toml. mypy's stubtest cannot read nanobind's function objects (every
function "is not a function" to it), so tests/unit/test_core_stub.py compares the stub with
the extension instead."""

from __future__ import annotations

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_mypy_finds_no_error() -> None:
    api = pytest.importorskip("mypy.api", reason="mypy is a test dependency (make test installs it)")
    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml"),
                                      "--cache-dir", str(ROOT / ".cache" / "mypy"), str(ROOT / "src" / "tokamata")])
    assert status == 0, stdout + stderr
    assert "Success: no issues found" in stdout, stdout
