"""Wrong: counts the groups with len(batches) and indexes into it, so a generator or any other
iterable without len() or indexing fails. Breaks 'it may be a generator, so do not rely on
len()'."""

from __future__ import annotations

from typing import Any, Callable, Iterable

import torch
from torch import Tensor


def train_accumulated(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                      loss_fn: Callable[[Tensor, Tensor], Tensor], batches: Iterable[Any],
                      accum_steps: int) -> list[float]:
    """One pass over ``batches`` with one optimizer step per ``accum_steps`` micro-batches."""
    if isinstance(accum_steps, bool) or not isinstance(accum_steps, int) or accum_steps < 1:
        raise ValueError(f"accum_steps must be an integer >= 1, got {accum_steps!r}")
    model.train()
    losses: list[float] = []
    for start in range(0, len(batches), accum_steps):
        group = batches[start:start + accum_steps]
        optimizer.zero_grad()
        total = 0.0
        for inputs, targets in group:
            loss = loss_fn(model(inputs), targets)
            # Scale by the group's real size; backward now, so this graph is freed before the next.
            (loss / len(group)).backward()
            total += loss.item()
        optimizer.step()
        losses.append(total / len(group))
    return losses
