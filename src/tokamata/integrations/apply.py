"""Applying token bitmasks to logits: numpy arrays here, torch tensors (any device) through
:mod:`.torch`, which imports torch lazily.

Invariant: ``apply_bitmask`` sets the logits of disallowed tokens to ``-inf`` in place (bit t
of a row set <=> logit t kept), and columns past the bitmask's width are disallowed; the numpy
and the torch paths agree. Logits must be floating point (an integer array cannot hold
``-inf``): anything else raises :class:`InvalidArgument` before anything is written.
float16/32/64 numpy logits (and CPU torch logits, :mod:`.torch`) whose columns are aligned and a
positive number of elements apart (contiguous, or a field of an array of records such as
llama.cpp's token data) are masked by the C++ core (``_core.apply_bitmask``, without the GIL);
other floating types (``longdouble``) and layouts go through numpy's unpacked boolean mask,
with the same result.
"""

from __future__ import annotations

import numpy as np

from .. import _core
from ..bitmask import unpack_bitmask
from ..errors import InvalidArgument

__all__ = ["apply_bitmask"]


def apply_bitmask(logits, bitmask):
    """Set disallowed logits to ``-inf`` in place and return ``logits``.

    ``logits`` is ``[V]`` or ``[B, V]`` (numpy or torch); ``bitmask`` has one row per batch
    row (or one row for ``[V]`` logits).

    >>> import numpy as np
    >>> logits = np.zeros((1, 3), dtype=np.float32); mask = np.array([[0b101]], dtype=np.int32)
    >>> apply_bitmask(logits, mask).tolist()
    [[0.0, -inf, 0.0]]
    """
    if type(logits).__module__.startswith("torch"):
        from .torch import apply_bitmask_torch

        return apply_bitmask_torch(logits, bitmask)
    if not isinstance(logits, np.ndarray):
        raise InvalidArgument(f"logits must be a numpy array or torch tensor, got {type(logits).__name__}")
    if logits.dtype.kind != "f":
        raise InvalidArgument(f"logits must be floating point to hold -inf, got dtype {logits.dtype}")
    mask = np.asarray(bitmask)
    if mask.dtype != np.int32:
        raise InvalidArgument(f"bitmask dtype must be int32, got {mask.dtype}")
    squeeze = logits.ndim == 1
    view = logits[None, :] if squeeze else logits
    if view.ndim != 2:
        raise InvalidArgument(f"logits must be [V] or [B, V], got shape {logits.shape}")
    if mask.ndim == 1:
        mask = mask[None, :]
    if mask.ndim != 2 or mask.shape[0] != view.shape[0]:
        raise InvalidArgument(f"bitmask shape {mask.shape} does not match logits shape {logits.shape}")
    if not view.flags.writeable:
        raise InvalidArgument("logits are read-only")
    # (flags.aligned: the data pointer and strides are multiples of the element's alignment;
    # cheaper than view.ctypes.data, which builds a ctypes object: this runs once per token)
    if view.dtype in _NATIVE and view.flags.aligned and (
            view.shape[1] < 2 or (view.strides[1] > 0 and view.strides[1] % view.itemsize == 0)):
        if mask.shape[1] > 1 and mask.strides[1] != 4:
            mask = np.ascontiguousarray(mask)
        _core.apply_bitmask(view, mask)
        return logits
    allowed = unpack_bitmask(mask, view.shape[1])
    view[~allowed] = -np.inf
    return logits


#: numpy dtypes the C++ core masks
_NATIVE = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))
