"""Token bitmasks: allocation, validation, unpacking (applying them to logits is
``integrations/apply.py``).

Invariants: a bitmask is int32 ``[batch, ceil(V/32)]``, C-contiguous, on the CPU; bit
``t % 32`` of word ``t // 32`` is 1 iff token ``t`` is allowed; columns past the bitmask's
width are disallowed.
"""

from __future__ import annotations

import operator

import numpy as np

from .errors import InvalidArgument

__all__ = ["allocate_bitmask", "check_bitmask", "bitmask_width", "token_bitmask_row", "unpack_bitmask"]


def bitmask_width(vocab_size: int) -> int:
    return (int(vocab_size) + 31) // 32


def allocate_bitmask(batch: int, vocab_size: int) -> np.ndarray:
    """A zeroed int32 ``[batch, ceil(vocab_size/32)]`` numpy array.

    >>> allocate_bitmask(2, 100).shape
    (2, 4)
    """
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or not 0 < batch < 2**31:
        raise InvalidArgument(f"batch must be an int in [1, 2**31), got {batch!r}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)) or not 0 < vocab_size < 2**31:
        raise InvalidArgument(f"vocab_size must be an int in [1, 2**31), got {vocab_size!r}")
    return np.zeros((int(batch), bitmask_width(vocab_size)), dtype=np.int32)


def token_bitmask_row(token_ids, vocab_size: int) -> np.ndarray:
    """One int32 bitmask row of ``ceil(vocab_size/32)`` words allowing exactly ``token_ids``
    (e.g. the EOS ids, for sequences that have finished).

    >>> token_bitmask_row([0, 33], 40).tolist()
    [1, 2]
    """
    row = np.zeros(bitmask_width(vocab_size), dtype=np.uint32)
    for token in token_ids:
        try:  # ints and integer scalars; a float is refused, never truncated
            t = operator.index(token)
        except TypeError:
            raise InvalidArgument(f"token id must be an int, got {type(token).__name__} {token!r:.40}") from None
        if isinstance(token, bool):
            raise InvalidArgument("token id must be an int, got bool")
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


def unpack_bitmask(bitmask: np.ndarray, width: int) -> np.ndarray:
    """A bool ``[..., width]`` array from an int32 ``[..., W]`` bitmask (columns past the
    bitmask's ``32 * W`` bits are False).

    >>> unpack_bitmask(np.array([[0b101]], dtype=np.int32), 4).tolist()
    [[True, False, True, False]]
    """
    bits = np.unpackbits(np.ascontiguousarray(bitmask).view(np.uint8), axis=-1, bitorder="little")
    allowed = np.zeros(bits.shape[:-1] + (width,), dtype=bool)
    n = min(width, bits.shape[-1])
    allowed[..., :n] = bits[..., :n].astype(bool)
    return allowed
