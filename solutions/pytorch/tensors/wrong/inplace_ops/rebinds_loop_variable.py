"""Wrong: computes the new average out of place and rebinds the loop variable
(`avg = decay * avg + ...`), so the caller's tensors never change."""

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
    return decay * avg + (1.0 - decay) * new


def _checked_pairs(avg_params, params):
    avg_list, param_list = list(avg_params), list(params)
    if len(avg_list) != len(param_list) or any(a.shape != p.shape for a, p in zip(avg_list, param_list)):
        raise ValueError("params do not match avg_params")
    return avg_list, param_list


def ema_update_(avg_params: Iterable[Tensor], params: Iterable[Tensor], decay: float) -> None:
    _check_decay(decay)
    avg_list, param_list = _checked_pairs(avg_params, params)
    with torch.no_grad():
        for avg, param in zip(avg_list, param_list):
            avg = decay * avg + (1.0 - decay) * param  # noqa: F841 - the classic mistake
