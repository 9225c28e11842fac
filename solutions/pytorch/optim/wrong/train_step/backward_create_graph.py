"""Wrong: back-propagates with create_graph=True (copied from a double-backward example), so every
.grad carries an autograd graph. Breaks 'no gradient carries a graph of its own'."""

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
    # Clear first: backward adds into .grad, so anything left over would leak into this update.
    optimizer.zero_grad()
    loss = loss_fn(model(inputs), targets)
    if not isinstance(loss, Tensor) or loss.dim() != 0:
        shape = tuple(loss.shape) if isinstance(loss, Tensor) else type(loss).__name__
        raise ValueError(f"loss_fn must return a scalar tensor, got {shape}")
    loss.backward(create_graph=True)
    optimizer.step()
    # .item() returns a Python float and lets the loss tensor (and its graph) be freed.
    return loss.item()
