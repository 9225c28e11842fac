"""Wrong: swaps the weights, `decay * new + (1 - decay) * avg`: decay is the weight of the *old*
average (0.999 keeps almost all of it), not of the new value."""

from collections.abc import Iterable

import torch
from torch import Tensor


def _check_decay(decay: float) -> None:
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"decay must be in [0, 1], got {decay!r}")


def ema(avg: Tensor, new: Tensor, decay: float) -> Tensor:
    _check_decay(decay)
    if new.shape != avg.shape:
        raise ValueError("new: shape mismatch")
    return torch.lerp(avg, new, decay)


def ema_update_(avg_params: Iterable[Tensor], params: Iterable[Tensor], decay: float) -> None:
    _check_decay(decay)
    avg_list, param_list = list(avg_params), list(params)
    if len(avg_list) != len(param_list) or any(a.shape != p.shape for a, p in zip(avg_list, param_list)):
        raise ValueError("params do not match avg_params")
    with torch.no_grad():
        for avg, param in zip(avg_list, param_list):
            avg.lerp_(param, decay)
