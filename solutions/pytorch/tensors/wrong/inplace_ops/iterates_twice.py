"""Wrong: validates by iterating over the arguments once and updates by iterating again; a
generator (such as `module.parameters()`) is empty the second time, so nothing is updated.
Breaks "iterables of tensors (lists, tuples or generators ...)"."""

from collections.abc import Iterable

import torch
from torch import Tensor


def _check_decay(decay: float) -> None:
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"decay must be in [0, 1], got {decay!r}")


def ema(avg: Tensor, new: Tensor, decay: float) -> Tensor:
    _check_decay(decay)
    if new.shape != avg.shape:
        raise ValueError(f"new has shape {tuple(new.shape)} but avg has {tuple(avg.shape)}")
    # Out of place: a fresh tensor, differentiable in both inputs.
    return decay * avg + (1.0 - decay) * new


def ema_update_(avg_params: Iterable[Tensor], params: Iterable[Tensor], decay: float) -> None:
    _check_decay(decay)
    for i, (avg, param) in enumerate(zip(avg_params, params)):
        if avg.shape != param.shape:
            raise ValueError(f"params[{i}] has shape {tuple(param.shape)}, "
                             f"avg_params[{i}] has {tuple(avg.shape)}")
    with torch.no_grad():
        # MISTAKE: a generator was used up by the loop above; this loop sees nothing.
        for avg, param in zip(avg_params, params):
            avg.mul_(decay).add_(param, alpha=1.0 - decay)
