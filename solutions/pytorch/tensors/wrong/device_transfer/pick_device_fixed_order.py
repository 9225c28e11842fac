"""Wrong: pick_device checks cuda, then mps, then xpu, then cpu in a fixed order and only uses
`prefer` as a filter, so the caller's order of preference is ignored."""

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch


def move_to(obj: Any, device: str | torch.device, *, non_blocking: bool = False) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=non_blocking)
    if isinstance(obj, dict):
        return type(obj)((k, move_to(v, device, non_blocking=non_blocking)) for k, v in obj.items())
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(move_to(v, device, non_blocking=non_blocking) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(move_to(v, device, non_blocking=non_blocking) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {f.name: move_to(getattr(obj, f.name), device, non_blocking=non_blocking)
                  for f in dataclasses.fields(obj)}
        return dataclasses.replace(obj, **fields)
    return obj


def pick_device(prefer: Sequence[str] = ("cuda", "mps", "cpu")) -> torch.device:
    names = list(prefer)
    known = ("cuda", "mps", "xpu", "cpu")
    if not names or any(n not in known for n in names):
        raise ValueError(f"bad prefer: {names}")
    if "cuda" in names and torch.cuda.is_available():
        return torch.device("cuda")
    if "mps" in names and torch.backends.mps.is_available():
        return torch.device("mps")
    if "xpu" in names and torch.xpu.is_available():
        return torch.device("xpu")
    if "cpu" in names:
        return torch.device("cpu")
    raise ValueError(f"nothing in prefer={names} is available")
