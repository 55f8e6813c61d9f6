"""The natural JSON spelling, written independently of tokamata: the test oracle of
``spelling="natural"`` (tokamata.syntax.json_spelling states the rule).

- Strings and keys: ``json.dumps(text, ensure_ascii=False)``.
- Numbers: the shortest plain decimal of the value (``int`` as ``str``; a float through its
  shortest ``repr``, as a ``Decimal``): no exponent, no trailing fraction zeros, no fraction on
  integral values, ``0`` for ``-0``. Floats whose ``repr`` has neither exponent nor ``.0`` are
  spelled as ``json.dumps`` spells them.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any


def natural_number(value: int | float | Decimal) -> str:
    exact = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    sign = "-" if exact < 0 else ""
    digits = format(exact.copy_abs(), "f")  # (abs() would round to the context's 28 digits)
    whole, _, fraction = digits.partition(".")
    fraction = fraction.rstrip("0")
    return sign + whole + ("." + fraction if fraction else "")


def natural_dumps(value: Any, separators: tuple[str, str] = (",", ":")) -> str:
    """``value`` in natural spelling (compact by default, as ``json.dumps(..., separators=)``)."""
    comma, colon = separators
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float, Decimal)):
        return natural_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + comma.join(natural_dumps(item, separators) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + comma.join(json.dumps(key, ensure_ascii=False) + colon + natural_dumps(item, separators)
                                for key, item in value.items()) + "}"
    raise TypeError(f"not JSON data: {value!r}")


def is_natural_float(value: float) -> bool:
    """Whether ``json.dumps`` already writes ``value`` in natural spelling."""
    return json.dumps(value) == natural_number(value)
