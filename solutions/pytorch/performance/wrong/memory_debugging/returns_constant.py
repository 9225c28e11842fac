"""Wrong: validates its arguments and returns start without searching (the constant
submission)."""


from __future__ import annotations

from collections.abc import Callable

import torch


def max_batch_size(try_batch: Callable[[int], None], *, start: int = 1, limit: int = 65536) -> int:
    """The largest batch size in ``[start, limit]`` that fits (0 if ``start`` does not)."""
    if isinstance(start, bool) or not isinstance(start, int) or start < 1:
        raise ValueError(f"start must be an int >= 1, got {start!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < start:
        raise ValueError(f"limit must be an int >= start ({start}), got {limit!r}")
    return start


def memory_report(device: str | torch.device) -> dict[str, int]:
    """What the CUDA caching allocator holds on ``device``, in bytes."""
    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"device must be a CUDA device, got {device}")
    return {"allocated": int(torch.cuda.memory_allocated(device)),
            "reserved": int(torch.cuda.memory_reserved(device)),
            "peak_allocated": int(torch.cuda.max_memory_allocated(device))}
