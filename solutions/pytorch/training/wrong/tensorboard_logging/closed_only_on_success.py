"""Wrong: closes the writer after training, but not when training raises."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

if TYPE_CHECKING:  # importing it needs the tensorboard package
    from torch.utils.tensorboard import SummaryWriter


def _as_float(tag: str, value: Any) -> float:
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"metric {tag!r}: a tensor of {value.numel()} elements is not one number")
        return float(value.detach().cpu().item())
    return float(value)


def log_metrics(writer: SummaryWriter, metrics: Mapping[str, Any], step: int) -> None:
    """Write every ``tag -> value`` of ``metrics`` as a scalar at ``step``."""
    if step < 0:
        raise ValueError(f"step must be an int >= 0, got {step}")
    values = {}
    for tag, value in metrics.items():  # all checked before anything is written
        if not tag:
            raise ValueError("a metric's tag must be a non-empty string")
        values[tag] = _as_float(tag, value)
    for tag, value in values.items():
        writer.add_scalar(tag, value, global_step=step)


def train_with_logging(model: nn.Module, optimizer: torch.optim.Optimizer,
                       loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                       batches: Iterable[tuple[torch.Tensor, torch.Tensor]], *, epochs: int,
                       log_dir: str | os.PathLike) -> list[float]:
    """Train ``model`` for ``epochs`` passes over ``batches``, logging to TensorBoard in ``log_dir``."""
    from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package

    if epochs < 1:
        raise ValueError(f"epochs must be an int >= 1, got {epochs}")
    writer = SummaryWriter(log_dir)
    try:
        history = []
        step = 0
        for epoch in range(epochs):
            model.train()
            losses = []
            for x, y in batches:
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
                log_metrics(writer, {"train/loss": losses[-1]}, step)
                step += 1
            if not losses:
                raise ValueError(f"batches gave no batch in epoch {epoch}: pass a list or a DataLoader "
                                 "(a re-iterable), with at least one batch")
            history.append(sum(losses) / len(losses))
            log_metrics(writer, {"epoch/loss": history[-1]}, epoch)
            for name, p in model.named_parameters():
                writer.add_histogram(f"weights/{name}", p.detach(), global_step=epoch)
        writer.close()
        return history
    finally:
        pass
