"""Wrong: moves list items and dict values in place (`obj[k] = move_to(obj[k], ...)`) and returns
the same container: the caller's batch is silently changed, e.g. a CPU copy kept for logging now
lives on the GPU."""

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch


def move_to(obj: Any, device: str | torch.device, *, non_blocking: bool = False) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=non_blocking)
    if isinstance(obj, dict):
        for k in obj:
            obj[k] = move_to(obj[k], device, non_blocking=non_blocking)
        return obj
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            obj[i] = move_to(v, device, non_blocking=non_blocking)
        return obj
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(move_to(v, device, non_blocking=non_blocking) for v in obj))
    if isinstance(obj, tuple):
        return tuple(move_to(v, device, non_blocking=non_blocking) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {f.name: move_to(getattr(obj, f.name), device, non_blocking=non_blocking)
                  for f in dataclasses.fields(obj)}
        return dataclasses.replace(obj, **fields)
    return obj


_AVAILABLE = {
    "cuda": lambda: torch.cuda.is_available(),
    "mps": lambda: torch.backends.mps.is_available(),
    "xpu": lambda: torch.xpu.is_available(),
    "cpu": lambda: True,
}


def pick_device(prefer: Sequence[str] = ("cuda", "mps", "cpu")) -> torch.device:
    names = list(prefer)
    if not names or any(n not in _AVAILABLE for n in names):
        raise ValueError(f"bad prefer: {names}")
    for name in names:
        if _AVAILABLE[name]():
            return torch.device(name)
    raise ValueError(f"nothing in prefer={names} is available")
