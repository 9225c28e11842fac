"""Wrong (the constant submission): checks epoch, then atomically saves an empty dict and
loads nothing, returning epoch 0."""

from __future__ import annotations

import os
import tempfile

import torch


def save_checkpoint(path: str | os.PathLike, *, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    epoch: int, scheduler: torch.optim.lr_scheduler.LRScheduler | None = None) -> None:
    """Atomically save everything needed to resume training after ``epoch`` finished epochs."""
    if epoch < 0:
        raise ValueError(f"epoch must be an int >= 0, got {epoch}")
    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        torch.save({}, f)
    os.replace(tmp, path)


def load_checkpoint(path: str | os.PathLike, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
                    map_location: str | torch.device = "cpu") -> int:
    """Restore the states saved by ``save_checkpoint`` and return the saved epoch."""
    return 0
