"""Token bitmasks: allocation, validation, and applying them to logits.

Invariants: a bitmask is int32 ``[batch, ceil(V/32)]``, C-contiguous, on the CPU; bit
``t % 32`` of word ``t // 32`` is 1 iff token ``t`` is allowed. ``apply_bitmask`` sets the
logits of disallowed tokens to ``-inf`` in place (numpy arrays and torch tensors, any
device for torch), and columns past the bitmask's width are disallowed.
"""

from __future__ import annotations

import numpy as np

from .errors import InvalidArgument

__all__ = ["allocate_bitmask", "apply_bitmask", "check_bitmask", "bitmask_width", "token_bitmask_row"]


def bitmask_width(vocab_size: int) -> int:
    return (int(vocab_size) + 31) // 32


def allocate_bitmask(batch: int, vocab_size: int) -> np.ndarray:
    """A zeroed int32 ``[batch, ceil(vocab_size/32)]`` numpy array.

    >>> allocate_bitmask(2, 100).shape
    (2, 4)
    """
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch <= 0:
        raise InvalidArgument(f"batch must be a positive int, got {batch!r}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)) or vocab_size <= 0:
        raise InvalidArgument(f"vocab_size must be a positive int, got {vocab_size!r}")
    return np.zeros((int(batch), bitmask_width(vocab_size)), dtype=np.int32)


def token_bitmask_row(token_ids, vocab_size: int) -> np.ndarray:
    """One int32 bitmask row of ``ceil(vocab_size/32)`` words allowing exactly ``token_ids``
    (e.g. the EOS ids, for sequences that have finished).

    >>> token_bitmask_row([0, 33], 40).tolist()
    [1, 2]
    """
    row = np.zeros(bitmask_width(vocab_size), dtype=np.uint32)
    for t in token_ids:
        t = int(t)
        if not 0 <= t < vocab_size:
            raise InvalidArgument(f"token id {t} out of range [0, {vocab_size})")
        row[t >> 5] |= np.uint32(1 << (t & 31))
    return row.view(np.int32)


def check_bitmask(bitmask, vocab_size: int):
    """Validate a caller's bitmask buffer; returns it (as an object the core accepts)."""
    if isinstance(bitmask, np.ndarray):
        dtype, shape, contiguous, device = bitmask.dtype, bitmask.shape, bitmask.flags.c_contiguous, "cpu"
        writeable = bitmask.flags.writeable
    elif type(bitmask).__module__.startswith("torch"):
        dtype, shape, contiguous = bitmask.dtype, tuple(bitmask.shape), bitmask.is_contiguous()
        device, writeable = bitmask.device.type, True
    else:
        raise InvalidArgument(f"bitmask must be a numpy array or torch tensor, got {type(bitmask).__name__}")
    if str(dtype) not in ("int32", "torch.int32"):
        raise InvalidArgument(f"bitmask dtype must be int32, got {dtype}")
    if len(shape) != 2:
        raise InvalidArgument(f"bitmask must be 2-D [batch, ceil(V/32)], got shape {tuple(shape)}")
    need = bitmask_width(vocab_size)
    if shape[1] < need:
        raise InvalidArgument(f"bitmask has {shape[1]} words per row, vocabulary of {vocab_size} needs {need}")
    if not contiguous:
        raise InvalidArgument("bitmask must be C-contiguous")
    if device != "cpu":
        raise InvalidArgument(f"bitmask must be on the CPU to be filled, got device {device}")
    if not writeable:
        raise InvalidArgument("bitmask is read-only")
    return bitmask


def _unpack_numpy(bitmask: np.ndarray, width: int) -> np.ndarray:
    bits = np.unpackbits(np.ascontiguousarray(bitmask).view(np.uint8), axis=-1, bitorder="little")
    allowed = np.zeros(bits.shape[:-1] + (width,), dtype=bool)
    n = min(width, bits.shape[-1])
    allowed[..., :n] = bits[..., :n].astype(bool)
    return allowed


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
        from .integrations.torch import apply_bitmask_torch

        return apply_bitmask_torch(logits, bitmask)
    if not isinstance(logits, np.ndarray):
        raise InvalidArgument(f"logits must be a numpy array or torch tensor, got {type(logits).__name__}")
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
    allowed = _unpack_numpy(mask, view.shape[1])
    view[~allowed] = -np.inf
    return logits
