"""Wrong: checks `0 < decay < 1`, rejecting the allowed ends decay=0 (take the new value) and
decay=1 (freeze the average). Breaks "Both ends are allowed"."""

from collections.abc import Iterable

import torch
from torch import Tensor


def _check_decay(decay: float) -> None:
    if not 0.0 < decay < 1.0:  # MISTAKE: the ends 0 and 1 are allowed
        raise ValueError(f"decay must be in [0, 1], got {decay!r}")


def ema(avg: Tensor, new: Tensor, decay: float) -> Tensor:
    _check_decay(decay)
    if new.shape != avg.shape:
        raise ValueError(f"new has shape {tuple(new.shape)} but avg has {tuple(avg.shape)}")
    # Out of place: a fresh tensor, differentiable in both inputs.
    return decay * avg + (1.0 - decay) * new


def ema_update_(avg_params: Iterable[Tensor], params: Iterable[Tensor], decay: float) -> None:
    _check_decay(decay)
    avg_list, param_list = list(avg_params), list(params)  # generators are consumed once
    if len(avg_list) != len(param_list):
        raise ValueError(f"params has {len(param_list)} tensors but avg_params has {len(avg_list)}")
    for i, (avg, param) in enumerate(zip(avg_list, param_list)):
        if avg.shape != param.shape:
            raise ValueError(f"params[{i}] has shape {tuple(param.shape)}, "
                             f"avg_params[{i}] has {tuple(avg.shape)}")
    # no_grad: the update is bookkeeping, not part of any graph. It also allows in-place ops on
    # averaged tensors that are leaves requiring grad (an EMA model made by deepcopy).
    with torch.no_grad():
        for avg, param in zip(avg_list, param_list):
            avg.mul_(decay).add_(param, alpha=1.0 - decay)
