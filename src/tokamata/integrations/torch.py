"""Applying tokamata bitmasks to torch logits (any device). Imports torch lazily.

Invariant: the result equals the numpy path: bit t of a row set <=> logit t kept, others
become -inf; columns past the bitmask's width become -inf.
"""

from __future__ import annotations

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
    if view.device.type == "cpu":
        import numpy as np

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
