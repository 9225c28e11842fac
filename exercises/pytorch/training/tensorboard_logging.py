"""Logging a training run to TensorBoard.

The question
------------
How do you watch a model's performance while it trains? TensorBoard plots what a run logs: a
``torch.utils.tensorboard.SummaryWriter`` writes *event files* into a log directory, each event a
tag (``"train/loss"``), a global step and a value (a scalar, a histogram of a tensor's values, an
image...). ``tensorboard --logdir runs`` then draws a curve per tag, so a loss that stalls, a
metric that diverges (NaN) or weights that blow up show at a glance. Events are buffered: only
``flush()`` or ``close()`` guarantees that they are on disk.

Your task
---------
Write ``log_metrics(writer, metrics, step)`` and
``train_with_logging(model, optimizer, loss_fn, batches, *, epochs, log_dir)``. Both need the
``tensorboard`` package (``pip install tensorboard``, or the kit's ``tensorboard`` extra).

Contract
--------
- ``log_metrics`` writes each entry of ``metrics`` (tag -> value) with
  ``writer.add_scalar(tag, value, global_step=step)``, one scalar event per entry, the value as a
  float. A value is a Python ``int`` or ``float``, a NumPy scalar, or a tensor of one element (any
  dtype, any device, with or without autograd history). NaN and infinities are logged as they
  are: they show a run diverging.
- ``step`` is an int >= 0; a negative one raises ``ValueError`` naming ``step``. An empty tag
  raises ``ValueError`` naming ``tag``, and a tensor of more than one element raises
  ``ValueError`` naming its tag. Nothing is written when any entry is bad.
- ``train_with_logging`` trains for ``epochs`` (an int >= 1; 0 raises ``ValueError`` naming
  ``epochs``) passes over ``batches``, a re-iterable of ``(x, y)`` pairs (a list, a tuple or a
  ``DataLoader``) of at least one batch (none raises ``ValueError`` naming ``batches``): each
  batch makes one step (zero the gradients, ``loss_fn(model(x), y)``,
  backward, ``optimizer.step()``) with the model in training mode.
- It logs with a ``SummaryWriter(log_dir)``: after each step, the scalar ``"train/loss"`` (that
  step's loss) at global step 0, 1, 2, ... counting steps over all epochs; after each epoch, at
  global step = the epoch's index (from 0), the scalar ``"epoch/loss"`` (the mean of that epoch's
  step losses) and, for every ``name, p`` in ``model.named_parameters()``, a histogram
  ``"weights/<name>"`` of ``p``'s values after the epoch's last step.
- The writer is closed (every event on disk) before ``train_with_logging`` returns or raises.
- ``train_with_logging`` returns the ``"epoch/loss"`` values, a list of ``epochs`` Python floats.

Hints
-----
- ``float(value)`` works for ints, floats, NumPy scalars and one-element tensors;
  ``value.numel()`` tells how many elements a tensor has.
- ``writer.add_histogram(tag, p.detach(), global_step=epoch)``; ``try``/``finally`` closes it.
- Check your files: ``EventAccumulator(log_dir).Reload().Scalars("train/loss")`` from
  ``tensorboard.backend.event_processing.event_accumulator``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

if TYPE_CHECKING:  # importing it needs the tensorboard package
    from torch.utils.tensorboard import SummaryWriter


def log_metrics(writer: SummaryWriter, metrics: Mapping[str, Any], step: int) -> None:
    """Write every ``tag -> value`` of ``metrics`` as a scalar at ``step``."""
    raise NotImplementedError


def train_with_logging(model: nn.Module, optimizer: torch.optim.Optimizer,
                       loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                       batches: Iterable[tuple[torch.Tensor, torch.Tensor]], *, epochs: int,
                       log_dir: str | os.PathLike) -> list[float]:
    """Train ``model`` for ``epochs`` passes over ``batches``, logging to TensorBoard in ``log_dir``."""
    raise NotImplementedError
