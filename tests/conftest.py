"""Shared pytest setup. Keep it small: helpers live in their own modules next to this file.

- ``tests/`` is put on ``sys.path`` so that tests import helper modules by name
  (``import real_tokenizers``) whatever pytest's import mode.
"""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
