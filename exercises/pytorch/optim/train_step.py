"""One correct training step.

The question
------------
What does ``optimizer.zero_grad()`` do, and why must it come before ``loss.backward()``? What is
the difference between ``loss.backward()`` (computes gradients into ``.grad``, *adding* to what is
already there) and ``optimizer.step()`` (changes the parameters using those gradients)? Why do
training loops log ``loss.item()`` and not ``loss``? The classic way to probe all of this is to
ask for the inner body of a training loop, written so that it is correct every time it is called.

Your task
---------
Write ``train_step(model, optimizer, loss_fn, batch)``: one full optimisation step on one batch.

Contract
--------
- ``batch`` is a pair ``(inputs, targets)`` (a tuple or a list of length 2); the loss is
  ``loss_fn(model(inputs), targets)`` and must be a scalar (0-dim) tensor.
- The step puts the model in training mode (``model.train()``, so dropout and batch norm behave
  as in training), computes the loss, back-propagates and calls ``optimizer.step()`` exactly once.
- Gradients already in the parameters' ``.grad`` when the call starts (left over from an earlier
  step, or from anything else) must not influence the update: two calls give exactly the same
  parameters as two separate, correct steps.
- Returns the loss of this batch (computed before the update) as a Python ``float``. Nothing
  keeps a reference to the loss tensor or its autograd graph after the call returns, and no
  gradient carries a graph of its own (no ``create_graph``).
- Tensors are used where they are: ``inputs``, ``targets`` and the model are already on the same
  device, and ``train_step`` moves nothing. It also works when called inside ``torch.autocast``
  (the returned value is still a Python float; parameters keep their dtype).
- ``batch`` that is not a pair raises ``ValueError`` naming ``batch``; a loss that is not a scalar
  (say ``reduction="none"``) raises ``ValueError`` naming ``loss_fn``.

Hints
-----
- The usual order is zero_grad, forward, loss, backward, step. What breaks if zero_grad moves to
  the end of the function?
- ``loss.item()`` copies one number to the host and drops the tensor; a tensor kept in a list
  keeps the whole graph alive with it.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
from torch import Tensor


def train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
               loss_fn: Callable[[Tensor, Tensor], Tensor], batch: Sequence[Any]) -> float:
    """One optimisation step of ``model`` on ``batch = (inputs, targets)``; returns the loss."""
    raise NotImplementedError
