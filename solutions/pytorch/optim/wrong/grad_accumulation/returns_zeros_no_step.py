"""Wrong (the constant submission): puts the model in training mode and returns one loss of 0.0
per group, but never runs the model nor steps the optimizer."""

from __future__ import annotations

import itertools
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
    iterator = iter(batches)
    losses: list[float] = []
    while True:
        # Materialise only the (inputs, targets) pairs of one group: that is how we learn the
        # size of a short last group before back-propagating any of it.
        group = list(itertools.islice(iterator, accum_steps))
        if not group:
            return losses
        losses.append(0.0)
