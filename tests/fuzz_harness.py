"""Running fuzz inputs in a capped child process: a crash, a hang or a memory blow-up is a test
failure with the input saved, never the end of the test run (issue 17, fuzzing in the suite).

One long-lived worker process per fuzz target (``tests/fuzz_worker.py``) is fed inputs over a
pipe, so that an input costs a pickle round trip, not an interpreter start. The worker calls
the target's ``run_input(value)`` (a function of the test module, imported by path in the
worker) and answers with its outcome: a short string on success or on a
:class:`tokamata.TokamataError`, a traceback for anything else (another exception, a failed
property assertion).

Invariants:
- every input gets a verdict within ``timeout`` seconds (``TOKAMATA_FUZZ_TIMEOUT``, default 10)
  of the worker's CPU time, and within ``WALL_FACTOR`` times that of wall time (a loaded
  machine starving the worker does not turn a slow input into a hang)
  and the worker's address space is capped (``RLIMIT_AS``, ``TOKAMATA_FUZZ_MEMORY_MB``,
  default 4096; not under AddressSanitizer, which maps terabytes of shadow memory): a hang is
  killed, a blow-up ends in ``MemoryError`` or a crash;
- a worker that crashed, hung or was killed is replaced before the next input;
- after a hang, the worker's timeout drops to :data:`SHRINK_TIMEOUT` (3 s) for the rest of
  its life (unless made with ``shrink_after_hang=False``, as the findings' replay is), so that Hypothesis shrinks a hang in minutes, not hours;
- an input that ``fuzz_findings.known_open`` recognizes (an open finding in a front end, owned
  by another change) is not run: its outcome is ``known open: <finding>``;
- every failing input is pickled under ``.cache/fuzz-findings/`` (``TOKAMATA_FUZZ_FINDINGS``
  overrides) with a text file beside it (the input's repr and what happened); the failure
  message names both and the command that replays the input:
  ``python tests/fuzz_worker.py --replay FILE``;
- the number of examples per test is ``TOKAMATA_FUZZ_EXAMPLES`` when set (``make fuzz``),
  else the test's own small default (``make test``).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, settings

import fuzz_findings

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).resolve().parent / "fuzz_worker.py"
FINDINGS = Path(os.environ.get("TOKAMATA_FUZZ_FINDINGS", ROOT / ".cache" / "fuzz-findings"))
TIMEOUT = float(os.environ.get("TOKAMATA_FUZZ_TIMEOUT", "10"))
MEMORY_MB = int(os.environ.get("TOKAMATA_FUZZ_MEMORY_MB", "4096"))
#: examples per fuzz test: the environment's (``make fuzz``) or the test's default
EXAMPLES = os.environ.get("TOKAMATA_FUZZ_EXAMPLES")
SHRINK_TIMEOUT = 3.0

_HEADER = struct.Struct("<Q")


def fuzz_settings(default_examples: int, shrink: bool = True) -> settings:
    """Hypothesis settings of a fuzz test: ``default_examples`` unless ``TOKAMATA_FUZZ_EXAMPLES``
    is set; no deadline (the worker's timeout bounds each input), no health checks (inputs
    are large on purpose); ``shrink=False`` for inputs drawn from a size alone (a hang would
    be shrunk one timeout at a time)."""
    examples = int(EXAMPLES) if EXAMPLES else default_examples
    phases = list(Phase) if shrink else [Phase.explicit, Phase.reuse, Phase.generate]
    return settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck),
                    print_blob=True, phases=phases)


class Finding(AssertionError):
    """An input that crashed, hung, blew up or broke a property; ``path`` is where it was saved."""


def save_finding(target: str, value: Any, what: str) -> Path:
    """Pickle ``value`` (and write its repr and ``what``) under :data:`FINDINGS`; returns the pickle."""
    FINDINGS.mkdir(parents=True, exist_ok=True)
    blob = pickle.dumps((target, value), protocol=4)
    path = FINDINGS / f"{Path(target.split(':')[0]).stem}-{hashlib.sha1(blob).hexdigest()[:12]}.pkl"
    path.write_bytes(blob)
    text = repr(value)
    path.with_suffix(".txt").write_text(f"{target}\n{what}\n\ninput ({len(text)} characters of repr):\n"
                                        f"{text[:20_000]}\n")
    return path


def _read_exactly(fd: int, size: int, deadline: "float | _Deadline") -> bytes | None:
    """``size`` bytes from ``fd`` before ``deadline`` (a monotonic time, or a
    :class:`_Deadline`); None on end of file; TimeoutError after it."""
    left = deadline.left if isinstance(deadline, _Deadline) else (lambda: deadline - time.monotonic())
    chunks, missing = [], size
    while missing:
        wait = left()
        if wait <= 0:
            raise TimeoutError
        if not select.select([fd], [], [], wait)[0]:
            continue  # (asks the deadline again: CPU time may be left)
        chunk = os.read(fd, min(missing, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


#: a hang is judged on the worker's CPU time, within this many times its timeout of wall time
WALL_FACTOR = 6.0


def _cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system, all threads) process ``pid`` has used; None where
    ``/proc`` cannot say."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class _Deadline:
    """One input's time: ``seconds`` of the worker's own CPU time (so that a loaded machine,
    which starves the worker, does not make a slow input a hang), but never more than
    ``WALL_FACTOR * seconds`` of wall time (a worker blocked without running still ends).
    Where ``/proc`` is missing, plain wall time."""

    def __init__(self, pid: int, seconds: float) -> None:
        self.pid, self.seconds = pid, seconds
        self.start = time.monotonic()
        self.cpu_start = _cpu_seconds(pid)

    def left(self) -> float:
        now = time.monotonic()
        wall_left = self.start + self.seconds - now
        if wall_left > 0:
            return wall_left
        cpu = _cpu_seconds(self.pid)
        if cpu is None or self.cpu_start is None:
            return 0.0
        return max(0.0, min(self.seconds - (cpu - self.cpu_start), self.start + WALL_FACTOR * self.seconds - now))


class Worker:
    """A child process that runs ``target``'s ``run_input`` on each input sent to it.

    ``target`` is ``"path/to/test_module.py"``; the worker imports it by path (as module
    ``fuzz_target``), once. :meth:`run` returns the outcome string or raises :class:`Finding`.
    """

    def __init__(self, target: str, timeout: float = TIMEOUT, memory_mb: int = MEMORY_MB,
                 shrink_after_hang: bool = True) -> None:
        self.target = str(target)
        self.timeout = timeout
        #: after a hang, drop the timeout to SHRINK_TIMEOUT (for Hypothesis' shrinking; a
        #: replay of known findings keeps its timeout)
        self.shrink_after_hang = shrink_after_hang
        self.memory_mb = memory_mb
        self.inputs = 0
        self.restarts = 0
        #: outcomes by kind ("error InvalidSyntax", "walked", ...), for the summary
        self.outcomes: Counter[str] = Counter()
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            self._stderr = tempfile.TemporaryFile()
            self._process = subprocess.Popen(
                [sys.executable, str(WORKER), self.target, str(self.memory_mb)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, cwd=ROOT)
            # the worker says "ready" once the target module is imported (not timed: imports
            # are not the input's fault)
            ready = _read_exactly(self._process.stdout.fileno(), 5, time.monotonic() + 300)  # type: ignore[union-attr]
            if ready != b"ready":
                raise RuntimeError(f"fuzz worker for {self.target} did not start:\n{self._stderr_tail()}")
        return self._process

    def _stderr_tail(self, size: int = 4000) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0, os.SEEK_END)
        end = self._stderr.tell()
        self._stderr.seek(max(0, end - size))
        return self._stderr.read().decode("utf-8", "replace")

    def _kill(self) -> int | None:
        process, self._process = self._process, None
        if process is None:
            return None
        if process.poll() is None:
            process.kill()
        code = process.wait()
        for stream in (process.stdin, process.stdout):
            try:
                stream.close()  # type: ignore[union-attr]
            except OSError:
                pass
        self.restarts += 1
        return code

    def close(self) -> None:
        if self._process is not None and self._process.poll() is None:
            try:
                self._process.stdin.close()  # type: ignore[union-attr]
                self._process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()
        self._process = None

    def run(self, value: Any) -> str:
        """The outcome of ``run_input(value)`` in the worker; :class:`Finding` (input saved)
        when it crashed, hung, exceeded memory or raised anything but a tokamata error."""
        known = fuzz_findings.known_open(Path(self.target).stem, value)
        if known is not None:
            self.outcomes["known open"] += 1
            return f"known open: {known}"
        process = self._start()
        self.inputs += 1
        payload = pickle.dumps(value, protocol=4)
        try:
            process.stdin.write(_HEADER.pack(len(payload)) + payload)  # type: ignore[union-attr]
            process.stdin.flush()  # type: ignore[union-attr]
            fd = process.stdout.fileno()  # type: ignore[union-attr]
            deadline = _Deadline(process.pid, self.timeout)
            header = _read_exactly(fd, _HEADER.size, deadline)
            body = None if header is None else _read_exactly(fd, _HEADER.unpack(header)[0], deadline)
        except TimeoutError:
            self._kill()
            exceeded = self.timeout
            if self.shrink_after_hang:
                self.timeout = min(self.timeout, SHRINK_TIMEOUT)
            self._fail(value, f"hang: no answer within {exceeded:g} s of CPU time "
                              f"({time.monotonic() - deadline.start:.1f} s of wall time)")
        except BrokenPipeError:
            body = None
        if body is None:
            stderr = self._stderr_tail()
            code = self._kill()
            signal_name = f" ({signal.Signals(-code).name})" if code is not None and code < 0 else ""
            self._fail(value, f"crash: the worker exited with {code}{signal_name}\n--- its stderr (tail)\n{stderr}")
        kind, detail = pickle.loads(body)  # type: ignore[arg-type]
        if kind == "ok":
            self.outcomes[" ".join(detail.split()[:2])] += 1
            return detail
        if detail.rstrip().endswith("MemoryError"):
            self._kill()  # (the heap may be fragmented or exhausted: start afresh)
        self._fail(value, detail)
        raise AssertionError("unreachable")

    def _fail(self, value: Any, what: str) -> None:
        path = save_finding(self.target, value, what)
        shown = repr(value)
        raise Finding(f"{what}\n\ninput: {shown[:2000]}{' ...' if len(shown) > 2000 else ''}\n"
                      f"saved: {path} (and {path.with_suffix('.txt').name})\n"
                      f"replay: {sys.executable} {WORKER.relative_to(ROOT)} --replay {path}")


# ------------------------------------------------------------------ byte-level mutation

#: bytes a mutation inserts or writes over: delimiters of every front end's syntax, escapes,
#: invalid UTF-8, digits (huge counts), and runs that nest deeply
INTERESTING = [b"\\", b"(", b")", b"[", b"]", b"{", b"}", b"|", b"*", b"+", b"?", b'"', b"'", b"/", b":", b",",
               b"-", b"^", b"$", b".", b"#", b"%", b"~", b"<", b">", b"=", b"\x00", b"\xff", b"\xc3", b"\xed\xa0\x80",
               b"\n", b" ", b"0", b"9" * 12, b"-1", b"4294967296", b"((((((((", b"[[[[[[[[", b"{{{{{{{{",
               b"\\u", b"\\x", b"\\U0010FFFF", b"\\p{L}", b"(?", b"::=", b"->", b"..", b"null", b"true", b"1e999"]


def mutated(seeds: list[bytes], interesting: list[bytes] = INTERESTING, max_mutations: int = 6):
    """A Hypothesis strategy: one of ``seeds`` with up to ``max_mutations`` byte-level
    mutations (flip a bit, write or insert an interesting or random chunk, delete, duplicate a
    slice, splice in a slice of another seed, repeat a slice up to 200 times, truncate)."""
    from hypothesis import strategies as st

    chunk = st.one_of(st.sampled_from(interesting), st.binary(min_size=1, max_size=8))
    operation = st.one_of(
        st.tuples(st.just("flip"), st.integers(0, 1 << 20), st.integers(0, 7)),
        st.tuples(st.just("write"), st.integers(0, 1 << 20), chunk),
        st.tuples(st.just("insert"), st.integers(0, 1 << 20), chunk),
        st.tuples(st.just("delete"), st.integers(0, 1 << 20), st.integers(1, 16)),
        st.tuples(st.just("duplicate"), st.integers(0, 1 << 20), st.integers(1, 64), st.integers(0, 1 << 20)),
        st.tuples(st.just("splice"), st.integers(0, len(seeds) - 1), st.integers(0, 1 << 20), st.integers(1, 64),
                  st.integers(0, 1 << 20)),
        st.tuples(st.just("repeat"), st.integers(0, 1 << 20), st.integers(1, 8), st.integers(2, 200)),
        st.tuples(st.just("truncate"), st.integers(0, 1 << 20)),
    )
    return st.builds(lambda i, ops: mutate(seeds[i], ops, seeds),
                     st.integers(0, len(seeds) - 1), st.lists(operation, max_size=max_mutations))


def mutate(data: bytes, operations, seeds: list[bytes]) -> bytes:
    """``data`` after ``operations`` (as :func:`mutated` draws them; positions wrap around)."""
    out = bytearray(data)
    for op in operations:
        at = op[1] % (len(out) + 1)
        if op[0] == "flip" and out:
            out[op[1] % len(out)] ^= 1 << op[2]
        elif op[0] == "write":
            out[at:at + len(op[2])] = op[2]
        elif op[0] == "insert":
            out[at:at] = op[2]
        elif op[0] == "delete":
            del out[at:at + op[2]]
        elif op[0] == "duplicate":
            piece = out[at:at + op[2]]
            to = op[3] % (len(out) + 1)
            out[to:to] = piece
        elif op[0] == "splice":
            other = seeds[op[1]]
            start = op[2] % (len(other) + 1)
            to = op[4] % (len(out) + 1)
            out[to:to] = other[start:start + op[3]]
        elif op[0] == "repeat":
            piece = out[at:at + op[2]]
            out[at:at + op[2]] = piece * op[3]
        elif op[0] == "truncate":
            del out[at:]
    return bytes(out)


def as_text(data: bytes, surrogates: bool) -> str:
    """Mutated bytes as a str for a front end: invalid UTF-8 becomes U+FFFD, or lone
    surrogates (``surrogateescape``: what a JSON string ``"\\udc80"`` decodes to) when
    ``surrogates``."""
    return data.decode("utf-8", "surrogateescape" if surrogates else "replace")


def unit_table(module: str, name: str):
    """``name`` from the unit test module ``tests/unit/MODULE.py`` (a table of cases to seed
    mutations), imported by path under a private name (pytest imports it as a test module)."""
    import importlib.util

    path = ROOT / "tests" / "unit" / f"{module}.py"
    spec = importlib.util.spec_from_file_location(f"_fuzz_seeds_{module}", path)
    loaded = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = loaded  # type: ignore[union-attr]
    spec.loader.exec_module(loaded)  # type: ignore[union-attr]
    return getattr(loaded, name)
