"""Shared pytest setup. Keep it small: helpers live in their own modules next to this file.

- ``tests/`` is put on ``sys.path`` so that tests import helper modules by name
  (``import real_tokenizers``) whatever pytest's import mode.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# llama.cpp and torch share libgomp; busy-waiting OpenMP threads crawl on 2 shared cores.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
