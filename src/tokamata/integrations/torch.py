"""Applying tokamata bitmasks to torch logits (any device). Imports torch lazily.

Invariant: the result equals the numpy path: bit t of a row set <=> logit t kept, others
become -inf; columns past the bitmask's width become -inf.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgument


def _torch():
    try:
        import torch
    except ImportError as error:  # pragma: no cover
        raise ImportError("torch is needed for torch tensors: pip install 'tokamata[torch]'") from error
    return torch


def bitmask_to_bool(bitmask, vocab_size: int, device=None):
    """Unpack an int32 ``[B, W]`` bitmask (numpy or torch) to a bool ``[B, vocab_size]`` tensor."""
    torch = _torch()
    mask = torch.as_tensor(bitmask)
    if mask.dtype != torch.int32:
        raise InvalidArgument(f"bitmask dtype must be int32, got {mask.dtype}")
    if device is not None:
        mask = mask.to(device, non_blocking=True)
    shifts = torch.arange(32, device=mask.device, dtype=torch.int32)
    bits = (mask.unsqueeze(-1) >> shifts) & 1
    allowed = bits.reshape(mask.shape[0], -1).bool()
    width = allowed.shape[1]
    if width >= vocab_size:
        return allowed[:, :vocab_size]
    pad = torch.zeros(mask.shape[0], vocab_size - width, dtype=torch.bool, device=mask.device)
    return torch.cat([allowed, pad], dim=1)


def apply_bitmask_torch(logits, bitmask):
    """In place: logits[~allowed] = -inf. ``logits`` is ``[V]`` or ``[B, V]``, floating point."""
    if not logits.is_floating_point():
        raise InvalidArgument(f"logits must be floating point to hold -inf, got dtype {logits.dtype}")
    squeeze = logits.dim() == 1
    view = logits.unsqueeze(0) if squeeze else logits
    if view.dim() != 2:
        raise InvalidArgument(f"logits must be [V] or [B, V], got shape {tuple(logits.shape)}")
    if view.device.type == "cpu" and _native(view, bitmask):
        from .. import _core

        mask = bitmask if bitmask.ndim == 2 else bitmask[None]
        if mask.shape[0] != view.shape[0]:
            raise InvalidArgument(f"bitmask batch {mask.shape[0]} does not match logits batch {view.shape[0]}")
        if isinstance(mask, np.ndarray):
            mask = np.ascontiguousarray(mask)
        elif not mask.is_contiguous():
            mask = mask.contiguous()
        _core.apply_bitmask(view, mask)
        return logits
    if view.device.type == "cpu":
        from ..bitmask import unpack_bitmask

        mask = bitmask.numpy() if hasattr(bitmask, "numpy") else np.asarray(bitmask)
        if mask.dtype != np.int32:
            raise InvalidArgument(f"bitmask dtype must be int32, got {mask.dtype}")
        if mask.ndim == 1:
            mask = mask[None, :]
        allowed = _torch().from_numpy(unpack_bitmask(mask, view.shape[1]))  # numpy unpacking is faster on CPU
    else:
        allowed = bitmask_to_bool(bitmask, view.shape[1], device=view.device)
    if allowed.shape[0] != view.shape[0]:
        raise InvalidArgument(f"bitmask batch {allowed.shape[0]} does not match logits batch {view.shape[0]}")
    view.masked_fill_(~allowed, float("-inf"))
    return logits


def _native(view, bitmask) -> bool:
    """Whether the C++ core masks these CPU logits in place through their buffer: float32/64,
    float16 or bfloat16 with contiguous columns, not tracked by autograd, and an int32 bitmask
    of rank 1 or 2 (a CPU tensor or a numpy array); anything else takes the torch ops."""
    torch = _torch()
    return (view.dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64)
            and (view.shape[1] < 2 or view.stride(1) == 1) and not view.requires_grad
            and ((isinstance(bitmask, torch.Tensor) and bitmask.dtype == torch.int32
                  and bitmask.device.type == "cpu")
                 or (isinstance(bitmask, np.ndarray) and bitmask.dtype == np.int32))
            and bitmask.ndim in (1, 2))
