"""Python types the demo generates instances of (``python -m tokamata demo``): a dataclass as
JSON and as a constructor call (issue 19, seed 000 section 5.2)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

from annotated_types import Ge, Le, MaxLen

__all__ = ["Pet"]


@dataclasses.dataclass
class Pet:
    """A pet record, as a small model might fill it in."""

    name: Annotated[str, MaxLen(16)]
    species: Literal["cat", "dog", "bird"]
    age: Annotated[int, Ge(0), Le(30)]
