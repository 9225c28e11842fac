"""Wrong (the constant submission): checks the batch and sets training mode, then returns 0.0
without computing a loss or taking a step."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
from torch import Tensor


def train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
               loss_fn: Callable[[Tensor, Tensor], Tensor], batch: Sequence[Any]) -> float:
    """One optimisation step of ``model`` on ``batch = (inputs, targets)``; returns the loss."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise ValueError(f"batch must be a pair (inputs, targets), got {type(batch).__name__}"
                         + (f" of length {len(batch)}" if isinstance(batch, (tuple, list)) else ""))
    inputs, targets = batch
    model.train()
    del inputs, targets, optimizer, loss_fn
    return 0.0
