"""What an integration is given to constrain with: a compiled constraint, or a Python type.

Invariant: integrations take either a :class:`~tokamata.Constraint` (used as it is) or a type
that :func:`tokamata.compile_type` accepts (a dataclass, a pydantic model, ...), which they
compile over the vocabulary they are given, JSON syntax unless told otherwise; a type without
a vocabulary is an :class:`~tokamata.InvalidArgument`.
"""

from __future__ import annotations

from typing import Any

from ..compile import compile_type
from ..constraint import Constraint
from ..errors import InvalidArgument

__all__ = ["resolve_constraint"]


def resolve_constraint(spec: Any, vocab=None, syntax: str = "json") -> Constraint:
    """``spec`` itself if it is a constraint, else ``compile_type(spec, vocab, syntax=syntax)``.

    >>> import dataclasses, tokamata
    >>> @dataclasses.dataclass
    ... class Flag:
    ...     on: bool
    >>> vocab = tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(128)] + [None], eos_token_ids=[128])
    >>> resolve_constraint(Flag, vocab).parse('{"on":true}')
    Flag(on=True)
    """
    if isinstance(spec, Constraint):
        return spec
    if vocab is None:
        raise InvalidArgument(f"a type ({getattr(spec, '__name__', type(spec).__name__)}) needs vocab= to be "
                              "compiled: pass the model's tokamata.Vocabulary")
    return compile_type(spec, vocab, syntax=syntax)
