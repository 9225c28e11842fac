"""Wrong: validates its arguments, then returns 0.0 without training (the constant submission)."""


from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor


def _check(device_type: str, dtype: torch.dtype, max_norm: float | None) -> None:
    if device_type not in ("cpu", "cuda"):
        raise ValueError(f"device_type must be 'cpu' or 'cuda', got {device_type!r}")
    if dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"dtype must be torch.float16 or torch.bfloat16, got {dtype!r}")
    if max_norm is not None and (isinstance(max_norm, bool) or not isinstance(max_norm, numbers.Real)
                                 or not math.isfinite(max_norm) or max_norm <= 0):
        raise ValueError(f"max_norm must be a positive finite number or None, got {max_norm!r}")


def amp_train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                   scaler: torch.amp.GradScaler, loss_fn: Callable[[Tensor, Tensor], Tensor],
                   batch: Sequence[Any], *, device_type: str, dtype: torch.dtype,
                   max_norm: float | None = None) -> float:
    """One mixed-precision optimisation step of ``model`` on ``batch``; returns the loss."""
    _check(device_type, dtype, max_norm)
    return 0.0
