"""The C++ core's own unit tests (``cpp/tests/``), built and run without Python bindings.

Configures ``cpp/tests`` with CMake into ``build/cpp-tests`` (Ninja, Debug), builds the
``tokamata_cpp_tests`` executable (every ``cpp/src/*.cpp`` plus the test sources; incremental
after the first build) and runs it: the test passes iff the executable exits 0 with the summary
"N tests, 0 failed"; on failure the output is shown (each failed check with file:line under its
test's "[ FAIL ]" line, and the summary; passing tests' lines are left out).

The same tests run a second time built with AddressSanitizer and UndefinedBehaviorSanitizer
(``-DTOKAMATA_SANITIZE=ON``, into ``build/cpp-tests-asan``): the short sanitizer run of
``make test`` (``make test-asan`` runs the Python tests over a sanitized extension). A finding
aborts the executable (UB is not recoverable there), so zero findings is a passing run.

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
#: (build directory, extra CMake definitions): plain, and sanitized
BUILDS = {"debug": (ROOT / "build" / "cpp-tests", []),
          "asan-ubsan": (ROOT / "build" / "cpp-tests-asan", ["-DTOKAMATA_SANITIZE=ON"])}


def _tool(name: str) -> str | None:
    """``name`` beside the running interpreter (a virtual environment's bin/), else on PATH."""
    beside = pathlib.Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


def _run(command: list[str], timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)


def _shown(step: str, result: subprocess.CompletedProcess[str]) -> str:
    # the runner's passing lines ("[ RUN  ]", "[  OK  ]") are left out: what remains are the
    # failed checks, each under its test's "[ FAIL ]" line, and the summary
    lines = [line for line in result.stdout.splitlines() if not line.startswith(("[ RUN  ]", "[  OK  ]"))]
    stdout = "\n".join(lines)
    return f"{step} exited {result.returncode}\n--- stdout\n{stdout}\n--- stderr\n{result.stderr}"


@pytest.mark.parametrize("build", list(BUILDS))
def test_cpp_unit_tests_build_and_pass(build: str) -> None:
    directory, definitions = BUILDS[build]
    executable = directory / "tokamata_cpp_tests"
    cmake, ninja = _tool("cmake"), _tool("ninja")
    if cmake is None or ninja is None:
        pytest.skip(f"the C++ unit tests need cmake and ninja (beside sys.executable or on PATH): found cmake={cmake}, "
                    f"ninja={ninja}")
    configured = _run([cmake, "-S", str(SOURCE), "-B", str(directory), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Debug",
                       f"-DCMAKE_MAKE_PROGRAM={ninja}", *definitions], timeout=120)  # (quick when configured)
    assert configured.returncode == 0, _shown("cmake (configure)", configured)
    built = _run([cmake, "--build", str(directory)], timeout=1200)
    assert built.returncode == 0, _shown("cmake --build", built)
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
    env.pop("LD_PRELOAD", None)  # (the executable is instrumented itself)
    ran = _run([str(executable)], timeout=600, env=env)
    assert ran.returncode == 0, _shown(str(executable.relative_to(ROOT)), ran)
    assert "ERROR: AddressSanitizer" not in ran.stderr and "runtime error:" not in ran.stderr, _shown("sanitizers", ran)
    summary = ran.stdout.strip().splitlines()[-1]
    assert summary.endswith(" 0 failed"), _shown("summary", ran)
