"""The C++ core's own unit tests (``cpp/tests/``), built and run without Python bindings.

Configures ``cpp/tests`` with CMake into ``build/cpp-tests`` (Ninja, Debug), builds the
``tokamata_cpp_tests`` executable (every ``cpp/src/*.cpp`` plus the test sources; incremental
after the first build) and runs it: the test passes iff the executable exits 0 with the summary
"N tests, 0 failed"; on failure the output is shown (each failed check with file:line under its
test's "[ FAIL ]" line, and the summary; passing tests' lines are left out).

CMake and Ninja are taken from beside ``sys.executable`` first (the project's ``.venv`` has
both), else from ``PATH``; without them the test is skipped, saying so.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = ROOT / "cpp" / "tests"
BUILD = ROOT / "build" / "cpp-tests"
EXECUTABLE = BUILD / "tokamata_cpp_tests"


def _tool(name: str) -> str | None:
    """``name`` beside the running interpreter (a virtual environment's bin/), else on PATH."""
    beside = pathlib.Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


def _run(command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _shown(step: str, result: subprocess.CompletedProcess[str]) -> str:
    # the runner's passing lines ("[ RUN  ]", "[  OK  ]") are left out: what remains are the
    # failed checks, each under its test's "[ FAIL ]" line, and the summary
    lines = [line for line in result.stdout.splitlines() if not line.startswith(("[ RUN  ]", "[  OK  ]"))]
    stdout = "\n".join(lines)
    return f"{step} exited {result.returncode}\n--- stdout\n{stdout}\n--- stderr\n{result.stderr}"


def test_cpp_unit_tests_build_and_pass() -> None:
    cmake, ninja = _tool("cmake"), _tool("ninja")
    if cmake is None or ninja is None:
        pytest.skip(f"the C++ unit tests need cmake and ninja (beside sys.executable or on PATH): found cmake={cmake}, "
                    f"ninja={ninja}")
    configured = _run([cmake, "-S", str(SOURCE), "-B", str(BUILD), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Debug",
                       f"-DCMAKE_MAKE_PROGRAM={ninja}"], timeout=120)  # (quick when already configured)
    assert configured.returncode == 0, _shown("cmake (configure)", configured)
    built = _run([cmake, "--build", str(BUILD)], timeout=600)
    assert built.returncode == 0, _shown("cmake --build", built)
    ran = _run([str(EXECUTABLE)], timeout=300)
    assert ran.returncode == 0, _shown(str(EXECUTABLE.relative_to(ROOT)), ran)
    summary = ran.stdout.strip().splitlines()[-1]
    assert summary.endswith(" 0 failed"), _shown("summary", ran)
