"""Extract the vocab-only GGUF files and their test vectors from llama-cpp-python's sdist.

Usage: python tools/extract_vocabs.py SDIST_DIR OUT_DIR
"""

from __future__ import annotations

import pathlib
import sys
import tarfile


def main() -> None:
    sdist_dir, out_dir = map(pathlib.Path, sys.argv[1:3])
    archives = sorted(sdist_dir.glob("llama_cpp_python-*.tar.gz"))
    if not archives:
        sys.exit(f"no llama_cpp_python sdist in {sdist_dir}")
    out_dir.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archives[-1]) as archive:
        for member in archive.getmembers():
            name = pathlib.PurePosixPath(member.name)
            if member.isfile() and "vendor/llama.cpp/models" in member.name and name.name.startswith("ggml-vocab-"):
                source = archive.extractfile(member)
                assert source is not None
                (out_dir / name.name).write_bytes(source.read())


if __name__ == "__main__":
    main()
