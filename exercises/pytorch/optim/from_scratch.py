"""Optimizers from scratch: SGD (with momentum, Nesterov, weight decay) and Adam (with AMSGrad).

The question
------------
``loss.backward()`` only *computes* gradients and leaves them in each parameter's ``.grad``;
``optimizer.step()`` is what *changes* the parameters, using those gradients and whatever running
state the algorithm keeps (a momentum buffer, Adam's two moment estimates). Interviewers ask what
an optimizer is for, how SGD with momentum and Adam differ, and then ask you to write one. Writing
it as a real ``torch.optim.Optimizer`` means it also works with everything built on that class:
parameter groups, ``zero_grad``, learning-rate schedulers, checkpoints via ``state_dict``.

Your task
---------
Implement ``SGD`` and ``Adam`` as subclasses of ``torch.optim.Optimizer`` that produce exactly the
same parameters, step after step, as ``torch.optim.SGD`` and ``torch.optim.Adam`` with the same
options (``dampening=0``, ``maximize=False``), without calling any ``torch.optim`` optimizer or
``torch.optim._functional``. Per parameter ``p`` with gradient ``g`` at its ``t``-th update:

- SGD: ``g = g + weight_decay * p``; with ``momentum != 0``: ``buf = g`` on the first update, then
  ``buf = momentum * buf + g``; the step direction is ``g + momentum * buf`` with ``nesterov``, else
  ``buf``; without momentum it is ``g``. Then ``p = p - lr * direction``.
- Adam: ``g = g + weight_decay * p`` (L2 added to the gradient, *not* AdamW's decoupled decay);
  ``m = beta1 * m + (1 - beta1) * g``; ``v = beta2 * v + (1 - beta2) * g**2`` (both start at 0);
  with ``amsgrad``, ``v_max = max(v_max, v)`` (starts at 0) is used in place of ``v`` below;
  ``p = p - lr * (m / (1 - beta1**t)) / (sqrt(v / (1 - beta2**t)) + eps)``.

Contract
--------
- ``SGD(params, lr, momentum=0.0, weight_decay=0.0, nesterov=False)`` and
  ``Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False)``;
  ``params`` is an iterable of tensors or of dicts (parameter groups), as for ``torch.optim``;
  any iterable works, a one-shot generator such as ``model.parameters()`` included.
- Hyper-parameters live in each parameter group under the argument names (``"lr"``,
  ``"momentum"``, ``"weight_decay"``, ``"nesterov"``; ``"lr"``, ``"betas"``, ``"eps"``,
  ``"weight_decay"``, ``"amsgrad"``): a group's own values override the constructor's, and a
  change to ``group["lr"]`` between steps (what a scheduler does) applies from the next step.
- ``step(closure=None)``: if given, ``closure`` is called with gradients enabled (it re-computes
  the loss and calls ``backward``) before the update, and ``step`` returns its result; otherwise
  ``step`` returns ``None``.
- A parameter whose ``.grad`` is ``None`` is skipped altogether: it does not change and its state
  (momentum buffer, Adam moments and Adam's own update count ``t``) is not touched. ``t`` counts
  the updates of *that* parameter.
- Parameters are updated in place (same tensor, same storage), without recording autograd history.
- Per-parameter state lives in ``self.state[p]``, holding only tensors and Python numbers, so that
  ``state_dict()`` can be saved with ``torch.save``, loaded with ``torch.load(weights_only=True)``
  into a new optimizer with ``load_state_dict`` (which also restores the group hyper-parameters),
  and training resumes exactly as if never interrupted.
- State tensors shaped like a parameter are on its device with its dtype; float32 and float64
  parameters on any device (including ``meta``) work.
- Bad arguments raise ``ValueError`` naming the argument: ``lr < 0``, ``momentum < 0``,
  ``weight_decay < 0``, ``nesterov=True`` with ``momentum == 0`` (name ``nesterov``), ``eps < 0``,
  a beta outside ``[0, 1)`` (name ``betas``). A NaN ``lr``, ``momentum``, ``weight_decay``, ``eps``
  or beta is rejected the same way. The ends of these ranges that are included are accepted:
  ``lr``, ``momentum``, ``weight_decay``, ``eps`` and each beta may be exactly ``0``.

Hints
-----
- ``super().__init__(params, defaults)`` turns ``params`` into ``self.param_groups`` and fills
  each group with the defaults it does not set; ``self.state`` is a ``defaultdict(dict)``.
- Decorate ``step`` with ``@torch.no_grad()``, but then wrap the closure call in
  ``torch.enable_grad()``.
- Where exactly does ``eps`` go, relative to the bias correction of ``v``? Check the formula.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import torch
from torch import Tensor


class SGD(torch.optim.Optimizer):
    """Stochastic gradient descent with optional momentum, Nesterov momentum and L2 weight decay."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float,
                 momentum: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False) -> None:
        raise NotImplementedError

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()`` if given."""
        raise NotImplementedError


class Adam(torch.optim.Optimizer):
    """Adam with bias correction, optional L2 weight decay (added to the gradient) and AMSGrad."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False) -> None:
        raise NotImplementedError

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()`` if given."""
        raise NotImplementedError
