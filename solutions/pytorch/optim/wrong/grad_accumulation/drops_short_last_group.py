"""Wrong: the textbook loop that steps when (i + 1) % accum_steps == 0: the gradients of a
short last group are computed but never applied (ceil(n / accum_steps) steps expected)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

import torch
from torch import Tensor


def train_accumulated(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                      loss_fn: Callable[[Tensor, Tensor], Tensor], batches: Iterable[Any],
                      accum_steps: int) -> list[float]:
    if isinstance(accum_steps, bool) or not isinstance(accum_steps, int) or accum_steps < 1:
        raise ValueError(f"accum_steps must be an integer >= 1, got {accum_steps!r}")
    model.train()
    optimizer.zero_grad()
    losses: list[float] = []
    total = 0.0
    for i, (inputs, targets) in enumerate(batches):
        loss = loss_fn(model(inputs), targets)
        (loss / accum_steps).backward()
        total += loss.item()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
            losses.append(total / accum_steps)
            total = 0.0
    return losses
