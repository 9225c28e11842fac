"""Wrong: pick_device checks each name only when it reaches it, so an unknown name after an
available one (`("cpu", "gpu")`) is never looked at and no ValueError is raised. Breaks "an
unknown name anywhere in it ... raises ValueError naming prefer"."""

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import torch

_AVAILABLE: dict[str, Callable[[], bool]] = {
    # Looked up at call time, so the answer reflects the machine (and any patching) right now.
    "cuda": lambda: torch.cuda.is_available(),
    "mps": lambda: torch.backends.mps.is_available(),
    "xpu": lambda: torch.xpu.is_available(),
    "cpu": lambda: True,
}


def move_to(obj: Any, device: str | torch.device, *, non_blocking: bool = False) -> Any:
    def move(o: Any) -> Any:
        if isinstance(o, torch.Tensor):
            # .to returns the tensor itself when nothing changes, and stays differentiable.
            return o.to(device, non_blocking=non_blocking)
        if isinstance(o, dict):  # dict and OrderedDict: the class takes an iterable of pairs
            return type(o)((k, move(v)) for k, v in o.items())
        if isinstance(o, tuple) and hasattr(o, "_fields"):  # namedtuple: positional fields
            return type(o)(*(move(v) for v in o))
        if isinstance(o, (list, tuple)):
            return type(o)(move(v) for v in o)
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            changes = {f.name: move(getattr(o, f.name)) for f in dataclasses.fields(o) if f.init}
            return dataclasses.replace(o, **changes)
        return o  # strings, numbers, arrays, ...: not containers we walk

    return move(obj)


def pick_device(prefer: Sequence[str] = ("cuda", "mps", "cpu")) -> torch.device:
    names = list(prefer) if not isinstance(prefer, str) else [prefer]
    if not names:
        raise ValueError("prefer must name at least one device type")
    for name in names:
        if name not in _AVAILABLE:  # MISTAKE: names after the first available one go unchecked
            raise ValueError(f"prefer contains the unknown device type {name!r}")
        if _AVAILABLE[name]():
            return torch.device(name)
    raise ValueError(f"none of the device types in prefer={names} is available")
