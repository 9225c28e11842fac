"""Wrong: not from scratch: subclasses torch.optim.SGD / torch.optim.Adam and lets their step do
the update (the values match, but the exercise is to write the update)."""

from __future__ import annotations

from typing import Any, Iterable

import torch
from torch import Tensor


def _check_non_negative(name: str, value: float) -> None:
    if not value >= 0.0:
        raise ValueError(f"{name} must be >= 0, got {value}")


class SGD(torch.optim.SGD):
    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float,
                 momentum: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False) -> None:
        _check_non_negative("lr", lr)
        _check_non_negative("momentum", momentum)
        _check_non_negative("weight_decay", weight_decay)
        if nesterov and momentum == 0:
            raise ValueError("nesterov=True needs a non-zero momentum")
        super().__init__(params, lr=lr, momentum=momentum, weight_decay=weight_decay,
                         nesterov=nesterov)


class Adam(torch.optim.Adam):
    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False) -> None:
        _check_non_negative("lr", lr)
        _check_non_negative("eps", eps)
        _check_non_negative("weight_decay", weight_decay)
        if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"betas must be two numbers in [0, 1), got {betas}")
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad)
