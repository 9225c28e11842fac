"""A mixed-precision training step: autocast plus gradient scaling.

The question
------------
Automatic mixed precision (AMP) runs the matmul-heavy part of the forward pass in a 16-bit
dtype (float16 on GPUs, bfloat16 on CPUs and recent GPUs) while the parameters, the optimizer
state and the loss stay in float32. ``torch.autocast`` chooses the dtype op by op. Small float16
gradients underflow to zero, so ``torch.amp.GradScaler`` multiplies the loss by a large scale
before ``backward``, divides the gradients by it again before the optimizer uses them, skips a
step whose gradients overflowed (inf/NaN) and then lowers the scale, and raises the scale again
after a run of good steps. Gradient clipping must see the *true* gradients, so they are unscaled
first (``scaler.unscale_``). The classic order::

    optimizer.zero_grad()
    with torch.autocast(device_type, dtype):
        loss = loss_fn(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer); clip_grad_norm_(...)   # only when clipping
    scaler.step(optimizer); scaler.update()

Your task
---------
Write ``amp_train_step(model, optimizer, scaler, loss_fn, batch, *, device_type, dtype,
max_norm=None)``: one mixed-precision optimisation step, returning the loss.

Contract
--------
- ``batch`` is a pair ``(inputs, targets)``. The step puts the model in training mode, clears
  the gradients left from before (they must not influence the update) and runs the forward pass
  and ``loss_fn(model(inputs), targets)`` under ``torch.autocast(device_type, dtype=dtype)``.
- Inside the forward pass the matmuls (``nn.Linear``) run in ``dtype``; ``loss_fn`` receives the
  model's output as autocast produced it (not cast up first). The model is not converted: its
  parameters stay float32 and so do their gradients.
- The loss that is scaled and back-propagated is float32: when ``loss_fn`` returns a lower
  precision, it is cast to float32 first.
- ``scaler`` is a ``torch.amp.GradScaler`` for ``device_type`` (enabled or not). The loss is
  scaled with ``scaler.scale`` before ``backward``; the optimizer is stepped only through
  ``scaler.step(optimizer)``, exactly once, followed by ``scaler.update()``. So a step whose
  gradients contain inf or NaN changes no parameter and lowers the scale (by the scaler's
  ``backoff_factor``), and the scale grows again after ``growth_interval`` good steps.
- With ``max_norm`` (a positive, finite number) the gradients are unscaled with
  ``scaler.unscale_(optimizer)`` and then clipped with ``clip_grad_norm_`` to total norm
  ``max_norm`` before the step; without it nothing is clipped.
- After the call each parameter's ``.grad`` holds this batch's unscaled gradient (float32) as the
  optimizer used it. Returns the float32 loss (before the update) as a Python ``float``; it is
  inf or NaN on a step that was skipped for that reason.
- Errors: ``device_type`` other than ``"cpu"`` or ``"cuda"`` raises ``ValueError`` naming
  ``device_type``; ``dtype`` other than ``torch.float16`` or ``torch.bfloat16`` raises
  ``ValueError`` naming ``dtype``; ``max_norm`` that is not ``None`` and not a positive finite
  number (``0``, negative, ``nan``, ``inf``) raises ``ValueError`` naming ``max_norm``. They are
  raised before anything changes.

Hints
-----
- Why must ``unscale_`` come before clipping? What norm would clipping see otherwise, with a
  scale of 65536?
- ``scaler.step`` unscales by itself when you did not, and it skips ``optimizer.step()`` when
  it found inf/NaN; calling ``optimizer.step()`` yourself loses both.
- CPU autocast supports bfloat16 and float16; ``torch.amp.GradScaler("cpu")`` works, so all of
  this runs (and is tested) without a GPU.
"""

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
    inputs, targets = batch
    model.train()
    optimizer.zero_grad()
    with torch.autocast(device_type, dtype=dtype):
        loss = loss_fn(model(inputs), targets)
    loss = loss.float()
    scaler.scale(loss).backward()
    if max_norm is not None:
        scaler.unscale_(optimizer)
        params = [p for group in optimizer.param_groups for p in group["params"]]
        torch.nn.utils.clip_grad_norm_(params, max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
