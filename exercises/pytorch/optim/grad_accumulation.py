"""Gradient accumulation: train with a large effective batch that does not fit in memory.

The question
------------
``loss.backward()`` *adds* into ``.grad``. Gradient accumulation uses that on purpose: run
several small micro-batches, back-propagate each one as you go (so only one micro-batch's
activations are in memory at a time), and call ``optimizer.step()`` once for the whole group.
Done right, the update is the one a single big batch would have given. Interviewers ask what it
is for, where ``zero_grad`` and ``step`` go, and how the loss must be scaled; the last, shorter
group of an epoch is where most implementations quietly go wrong.

Your task
---------
Write ``train_accumulated(model, optimizer, loss_fn, batches, accum_steps)``: one pass over
``batches``, one optimizer step per group of ``accum_steps`` consecutive micro-batches.

Contract
--------
- ``batches`` is any iterable of micro-batches ``(inputs, targets)``, iterated once; it may be a
  generator, so do not rely on ``len()`` (a list, a tuple, a generator or a ``DataLoader``
  all work). Each micro-batch's loss is
  ``loss_fn(model(inputs), targets)``, a scalar (a mean over that micro-batch).
- Micro-batches are taken in order in groups of ``accum_steps``; the last group holds whatever
  is left, so there are ``ceil(n / accum_steps)`` groups for ``n`` micro-batches, and exactly one
  ``optimizer.step()`` per group.
- The gradient used by a group's step is the *mean* of its micro-batch losses' gradients, the mean
  taken over the micro-batches actually in that group (``k <= accum_steps`` of them). For
  equal-sized micro-batches and a mean-reduced loss, that is the step one big batch made of the
  group would give, up to round-off (the tests allow float32 round-off even in float64). No
  gradient from outside the group (an earlier group, or left in ``.grad`` before the call) enters
  the update.
- Each micro-batch's loss is back-propagated before the next micro-batch's forward pass, so at
  most one micro-batch's autograd graph exists at a time.
- The model is put in training mode (``model.train()``) first, before any forward pass.
- Returns a list of Python floats, one per optimizer step: the mean of that group's micro-batch
  losses (unscaled, computed before the step). No batches: returns ``[]`` and takes no step.
- Nothing is moved between devices; it also works inside ``torch.autocast`` (the losses are still
  Python floats and the parameters keep their dtype).
- ``accum_steps`` that is not an integer ``>= 1`` raises ``ValueError`` naming ``accum_steps``.

Hints
-----
- ``(loss / k).backward()`` with ``k`` the size of the *current* group; you only know that the
  last group is short once the iterable runs out (``itertools.islice`` takes a group at a time).
- Summing the micro-batch losses and calling ``backward`` once gives the same numbers, but keeps
  every micro-batch's graph alive: the memory saving is gone.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import torch
from torch import Tensor


def train_accumulated(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                      loss_fn: Callable[[Tensor, Tensor], Tensor], batches: Iterable[Any],
                      accum_steps: int) -> list[float]:
    """One pass over ``batches`` with one optimizer step per ``accum_steps`` micro-batches."""
    raise NotImplementedError
