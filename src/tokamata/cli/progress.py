"""Progress of the command line's set-up steps (loading a model or a vocabulary, compiling), on
stderr.

Invariants:
- Results go to stdout, progress to stderr, so ``--json`` output and pipes stay clean.
- On a terminal a step shows a live spinner (rich) while it runs; elsewhere (pipes, CI logs) it
  prints one line when it starts and one with its time when it ends. ``quiet`` prints nothing.
- A step that raises leaves no half-drawn spinner behind.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Iterator

__all__ = ["Progress"]


class Progress:
    """Announces set-up steps on stderr (see the module docstring)."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.live = not quiet and sys.stderr.isatty()

    def note(self, message: str) -> None:
        if not self.quiet:
            print(f"[tokamata] {message}", file=sys.stderr, flush=True)

    @contextmanager
    def step(self, what: str) -> Iterator[None]:
        start = time.perf_counter()
        if self.live:
            from rich.console import Console

            with Console(stderr=True).status(f"{what} ..."):
                yield
        else:
            self.note(f"{what} ...")
            yield
        self.note(f"{what}: done in {time.perf_counter() - start:.1f} s")
