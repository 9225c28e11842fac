"""Learning-rate schedules: linear warmup followed by cosine decay.

The question
------------
A learning-rate scheduler changes ``optimizer.param_groups[i]["lr"]`` as training progresses:
``StepLR`` divides it every few epochs, ``CosineAnnealingLR`` follows half a cosine wave,
``LambdaLR`` multiplies each group's initial lr by any function of the step count. Large models
are usually trained with a short linear *warmup* (large early updates from a random start are
unstable, and Adam's second-moment estimate is still poor) followed by a *cosine decay* to a small
floor. Interviewers ask how schedulers work and what order ``optimizer.step()`` and
``scheduler.step()`` go in; then they ask you to build this one.

Your task
---------
1. ``lr_at(step, *, base_lr, warmup_steps, total_steps, min_lr_ratio=0.0)``: the learning rate
   used by the optimizer step that follows ``step`` completed steps (``step = 0`` is the first).
2. ``warmup_cosine(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0)``: the same schedule as
   a ``torch.optim.lr_scheduler.LambdaLR`` over every parameter group of ``optimizer``.

Contract
--------
With ``W = warmup_steps``, ``T = total_steps`` and ``r = min_lr_ratio``, ``lr_at`` returns a
Python ``float``:

- ``0 <= step < W`` (linear warmup from 0): ``base_lr * step / W``;
- ``W <= step <= T`` (cosine decay): ``base_lr * (r + (1 - r) * (1 + cos(pi * p)) / 2)`` with
  ``p = (step - W) / (T - W)``: ``base_lr`` at ``step == W``, ``base_lr * r`` at ``step == T``;
- ``step > T``: ``base_lr * r`` for ever.

So with ``W = 0`` there is no warmup and ``lr_at(0) == base_lr``.

``warmup_cosine`` returns a ``LambdaLR``: each group's base learning rate is what ``LambdaLR``
records as its ``"initial_lr"``: the ``"initial_lr"`` the group already holds if an earlier
scheduler on this optimizer set one (even if that scheduler has changed ``"lr"`` since), otherwise
its ``"lr"`` when ``warmup_cosine`` is called. Right after the call and
after every ``scheduler.step()`` (called once per ``optimizer.step()``, after it), group ``i``'s
lr is ``lr_at(k, base_lr=<group i's base lr>, ...)`` where ``k`` is the number of
``scheduler.step()`` calls so far. Saving ``optimizer.state_dict()`` and
``scheduler.state_dict()``, building a new optimizer and a new ``warmup_cosine`` with the same
arguments, and loading both state dicts (optimizer first) continues the schedule exactly.

Errors: ``ValueError`` naming the argument for ``step < 0``, ``base_lr < 0``,
``warmup_steps < 0``, ``total_steps <= warmup_steps`` (name ``total_steps``) and ``min_lr_ratio``
outside ``[0, 1]``; a NaN ``base_lr`` or ``min_lr_ratio`` is rejected the same way. The included
ends are accepted: ``step = 0``, ``base_lr = 0`` (the lr is 0 throughout), ``warmup_steps = 0``,
``total_steps = warmup_steps + 1``, ``min_lr_ratio`` of exactly ``0`` or ``1``. ``lr_at`` returns a
``float`` even when every argument is an ``int``. ``warmup_cosine`` checks its arguments when
called.

Hints
-----
- ``LambdaLR`` multiplies each group's initial lr by ``lr_lambda(k)``: the lambda returns a
  *factor*, not a learning rate.
- A schedule function that keeps its own counter instead of using ``k`` does not survive a
  restart from a checkpoint.
"""

from __future__ import annotations

import torch
from torch.optim.lr_scheduler import LambdaLR


def lr_at(step: int, *, base_lr: float, warmup_steps: int, total_steps: int,
          min_lr_ratio: float = 0.0) -> float:
    """Learning rate for the optimizer step that follows ``step`` completed steps."""
    raise NotImplementedError


def warmup_cosine(optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int,
                  min_lr_ratio: float = 0.0) -> LambdaLR:
    """A ``LambdaLR`` giving every group of ``optimizer`` the schedule of ``lr_at``."""
    raise NotImplementedError
