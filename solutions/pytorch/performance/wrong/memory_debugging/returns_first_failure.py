"""Wrong: returns the first size that did not fit instead of the last that did (breaks the
largest-n clause)."""


from __future__ import annotations

import gc
from collections.abc import Callable

import torch


def _fits(try_batch: Callable[[int], None], n: int) -> bool:
    try:
        try_batch(n)
    except torch.OutOfMemoryError:
        return False  # the exception (and the failed try's frames) die with this block
    return True


def _release() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def max_batch_size(try_batch: Callable[[int], None], *, start: int = 1, limit: int = 65536) -> int:
    """The largest batch size in ``[start, limit]`` that fits (0 if ``start`` does not)."""
    if isinstance(start, bool) or not isinstance(start, int) or start < 1:
        raise ValueError(f"start must be an int >= 1, got {start!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < start:
        raise ValueError(f"limit must be an int >= start ({start}), got {limit!r}")
    good, bad, n = 0, None, start
    while True:
        if _fits(try_batch, n):
            good = n
            if n == limit:
                return n
            n = min(2 * n, limit)
        else:
            _release()
            bad = n
            break
    if good == 0:
        return 0
    while bad - good > 1:  # good fits, bad does not
        mid = (good + bad) // 2
        if _fits(try_batch, mid):
            good = mid
        else:
            _release()
            bad = mid
    return bad


def memory_report(device: str | torch.device) -> dict[str, int]:
    """What the CUDA caching allocator holds on ``device``, in bytes."""
    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"device must be a CUDA device, got {device}")
    return {"allocated": int(torch.cuda.memory_allocated(device)),
            "reserved": int(torch.cuda.memory_reserved(device)),
            "peak_allocated": int(torch.cuda.max_memory_allocated(device))}
