"""Wrong: checks only len(batch) == 2, so a dict {'inputs': x, 'targets': y} passes and is
unpacked into its keys. Breaks 'batch that is not a pair raises ValueError naming batch'."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
from torch import Tensor


def train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
               loss_fn: Callable[[Tensor, Tensor], Tensor], batch: Sequence[Any]) -> float:
    """One optimisation step of ``model`` on ``batch = (inputs, targets)``; returns the loss."""
    if len(batch) != 2:
        raise ValueError(f"batch must be a pair (inputs, targets), got {len(batch)} elements")
    inputs, targets = batch
    model.train()
    # Clear first: backward adds into .grad, so anything left over would leak into this update.
    optimizer.zero_grad()
    loss = loss_fn(model(inputs), targets)
    if not isinstance(loss, Tensor) or loss.dim() != 0:
        shape = tuple(loss.shape) if isinstance(loss, Tensor) else type(loss).__name__
        raise ValueError(f"loss_fn must return a scalar tensor, got {shape}")
    loss.backward()
    optimizer.step()
    # .item() returns a Python float and lets the loss tensor (and its graph) be freed.
    return loss.item()
