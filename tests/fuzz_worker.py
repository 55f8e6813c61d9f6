"""The child process of ``fuzz_harness.Worker``: runs one fuzz target's ``run_input`` on each
input it reads from stdin, and answers on stdout.

Usage: ``python tests/fuzz_worker.py TARGET_MODULE.py MEMORY_MB`` (what the harness runs), or
``python tests/fuzz_worker.py --replay FINDING.pkl`` to rerun a saved finding in the
foreground (its traceback, or the crash, shows directly).

Protocol: each message either way is an 8-byte little-endian length and a pickle. In: the
input. Out: ``("ok", outcome)`` when ``run_input`` returned ``outcome`` (a str), or
``("bug", traceback)`` when it raised anything (``run_input`` itself turns tokamata errors into
outcomes). The worker writes ``ready`` once the target module is imported.

Invariants: the address space is capped at MEMORY_MB (``RLIMIT_AS``) before the target is
imported, except under AddressSanitizer (``libasan`` in ``LD_PRELOAD``), whose shadow memory
needs terabytes of address space; no core files are written.
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import resource
import struct
import sys
import traceback
from pathlib import Path

_HEADER = struct.Struct("<Q")
TESTS = Path(__file__).resolve().parent


def _import_target(path: str):
    for folder in (str(TESTS), str(Path(path).resolve().parent)):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("fuzz_target", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["fuzz_target"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _cap_memory(memory_mb: int) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        return
    limit = memory_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _read(stream) -> bytes | None:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    return stream.read(_HEADER.unpack(header)[0])


def serve(target: str, memory_mb: int) -> None:
    _cap_memory(memory_mb)
    run_input = _import_target(target).run_input
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # (anything a target prints must not corrupt the protocol)
    stdout.write(b"ready")
    stdout.flush()
    while (payload := _read(stdin)) is not None:
        value = pickle.loads(payload)
        try:
            answer = ("ok", str(run_input(value)))
        except BaseException:  # noqa: BLE001 (every other outcome is a finding)
            answer = ("bug", traceback.format_exc())
        out = pickle.dumps(answer, protocol=4)
        stdout.write(_HEADER.pack(len(out)) + out)
        stdout.flush()


def replay(path: str) -> None:
    target, value = pickle.loads(Path(path).read_bytes())
    print(f"target {target}\ninput {value!r:.2000}")
    print("outcome:", _import_target(target).run_input(value))


if __name__ == "__main__":
    if sys.argv[1] == "--replay":
        replay(sys.argv[2])
    else:
        serve(sys.argv[1], int(sys.argv[2]))
