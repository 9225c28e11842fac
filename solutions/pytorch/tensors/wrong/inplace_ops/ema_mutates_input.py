"""Wrong: `ema` is meant to be out of place but updates `avg` in place and returns it
(`avg.mul_(decay).add_(...)`), so the caller's average changes behind their back."""

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
    return avg.mul_(decay).add_(new, alpha=1.0 - decay)


def ema_update_(avg_params: Iterable[Tensor], params: Iterable[Tensor], decay: float) -> None:
    _check_decay(decay)
    avg_list, param_list = list(avg_params), list(params)
    if len(avg_list) != len(param_list) or any(a.shape != p.shape for a, p in zip(avg_list, param_list)):
        raise ValueError("params do not match avg_params")
    with torch.no_grad():
        for avg, param in zip(avg_list, param_list):
            ema(avg, param, decay)
