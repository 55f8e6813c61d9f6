"""Hostile arguments to the public API: ``Limits``, the front doors' keyword arguments, the
matcher, ``fill_bitmasks`` and ``apply_bitmask``. Each gets :class:`InvalidArgument` naming what
is wrong, before anything changes (issue 17, part A); none is truncated, coerced or passed on
to become a nanobind ``TypeError`` or a numpy ``OverflowError``.

Also the EOS token that a grammar spells (``<|eot_id|>`` in ``start: "yes" <|eot_id|>`` over
Llama 3): the mask and ``consume`` agree on it, and a complete output can always end.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import tokamata
from tokamata import Limits
from tokamata.errors import InvalidArgument

VOCAB = tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])
EOS = 256

# ------------------------------------------------------------------ Limits

INT_FIELDS = ["max_dfa_states", "max_nesting_depth", "max_vocab_size", "max_file_bytes"]

#: (field, value) pairs Limits must refuse: the C++ core holds int32 and finite doubles
BAD_LIMITS: list[tuple[str, Any]] = [
    *[(field, value) for field in INT_FIELDS
      for value in (2**31, 2**63, 1.5, 3.0, math.inf, math.nan, True, 0, -1, "3", None)],
    *[("max_compile_seconds", value) for value in (math.inf, math.nan, -math.inf, 0, -1.0, True, "1", None)],
]


@pytest.mark.parametrize("field, value", BAD_LIMITS, ids=[f"{f}={v!r}" for f, v in BAD_LIMITS])
def test_limits_refuse_what_the_core_cannot_hold(field: str, value: Any) -> None:
    with pytest.raises(InvalidArgument, match=f"Limits.{field}"):
        Limits(**{field: value})


def test_limits_accept_the_extremes() -> None:
    limits = Limits(max_dfa_states=2**31 - 1, max_compile_seconds=1e-3, max_vocab_size=np.int64(7))
    assert limits.max_dfa_states == 2**31 - 1
    assert type(limits.max_vocab_size) is int and limits.max_vocab_size == 7
    # the largest int bound reaches the core without a nanobind TypeError
    big = Limits(**{f.name: 2**31 - 1 for f in Limits.__dataclass_fields__.values() if f.type in (int, "int")})
    m = tokamata.compile_grammar('start: "a"+', VOCAB, limits=big).matcher()
    assert m.consume(97) and m.is_accepting()
