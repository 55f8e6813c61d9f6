"""The serving-engine contract tests (tests/serving/: vLLM and SGLang backends against the
engines' own classes) run in their own environment, .cache/venv-serving, which `make
serving-env` builds from PyPI (vLLM and SGLang without their heavy dependencies). Here they run
in a subprocess with that interpreter; without that environment this test is skipped."""

from __future__ import annotations

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVING_PY = ROOT / ".cache" / "venv-serving" / "bin" / "python"


def test_serving_engine_contracts():
    if not SERVING_PY.exists():
        pytest.skip("no serving environment: run `make serving-env` (vLLM 0.33.0 and SGLang 0.5.23 from PyPI "
                    "into .cache/venv-serving), then `make test` or `make test-serving`")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([str(SERVING_PY), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/serving"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and " skipped" not in done.stdout.splitlines()[-1], done.stdout[-2000:]
