"""detach, no_grad and inference mode: controlling what autograd records.

The question
------------
There are several ways to keep autograd out of a computation, and interviewers like to ask how
they differ. ``t.detach()`` returns a new tensor that shares ``t``'s data but is cut out of the
graph: gradients stop there, and nothing about ``t`` changes. ``t.requires_grad_(False)`` instead
flips a flag on the tensor itself (allowed only on leaves) and so changes it for every other user.
``torch.no_grad()`` and the stricter, faster ``torch.inference_mode()`` stop recording for a whole
block of code. None of them switches a model to evaluation behaviour: that is ``model.eval()``
(dropout off, BatchNorm using its running statistics), a separate switch that people forget.

Your task
---------
1. ``straight_through_round(x)``: rounds in the forward pass but lets the gradient through as if
   the rounding were the identity (the "straight-through estimator" used for quantisation-aware
   training).
2. ``mse_to_fixed_target(pred, target)``: a mean squared error that treats ``target`` as a
   constant, e.g. the output of a target network or a teacher that must not be trained.
3. ``predict(model, x)``: inference done right: evaluation behaviour, no graph, and the model
   handed back exactly as it came in.

Contract
--------
``straight_through_round(x) -> Tensor``

- ``x`` is a floating-point tensor of any shape. The result has ``x``'s shape, dtype and device,
  and its values are exactly ``torch.round(x)`` (halves round to even, like ``torch.round``;
  ``inf``, ``-inf`` and ``NaN`` come out as they went in).
- In the backward pass the gradient with respect to ``x`` is the incoming gradient unchanged
  (``d out / d x`` is treated as 1 everywhere). The result requires grad whenever ``x`` does.
- ``x`` itself is not modified.

``mse_to_fixed_target(pred, target) -> Tensor``

- ``pred`` and ``target`` must have exactly the same shape (``ValueError`` naming ``target``
  otherwise: no silent broadcasting of ``(N, 1)`` against ``(N,)``).
- Returns ``mean((pred - target) ** 2)`` as a 0-dim tensor in ``pred``'s dtype (also when
  ``target`` has another floating dtype), on its device.
- Gradients flow to ``pred`` only: a backward pass from the loss never reaches ``target`` or
  anything ``target`` was computed from (their ``.grad`` stays ``None``), even when ``target``
  requires grad. ``target`` may be a leaf or the output of a network.
- Neither ``pred.requires_grad`` nor ``target.requires_grad`` is changed.

``predict(model, x) -> Tensor``

- Returns ``model(x)`` computed with the model in evaluation mode (dropout off, BatchNorm uses and
  does not update its running statistics) inside ``torch.inference_mode()``: the result is an
  inference tensor with no autograd history, on the device the model put it.
- Afterwards every submodule's ``training`` flag is exactly what it was before the call, including
  mixed states (e.g. a frozen BatchNorm kept in eval mode inside a model in train mode), and this
  holds even when the forward pass raises (the exception propagates to the caller).
- The model's parameters are left as they were: values and ``requires_grad`` flags.

Hints
-----
- ``a + (b - a).detach()`` has the value of ``b`` and the gradient of ``a``. What happens to the
  gradient if you forget the ``detach``?
- Why can't ``target.requires_grad_(False)`` be the answer for a target computed by a network?
- ``model.train(mode)`` sets the flag on every submodule at once. ``model.modules()`` visits them
  one by one. ``try`` / ``finally`` runs clean-up code whatever happens.
"""

import torch
from torch import Tensor, nn


def straight_through_round(x: Tensor) -> Tensor:
    """``round(x)`` in the forward pass, identity gradient in the backward pass."""
    raise NotImplementedError


def mse_to_fixed_target(pred: Tensor, target: Tensor) -> Tensor:
    """Mean squared error with no gradient flowing into ``target``."""
    raise NotImplementedError


def predict(model: nn.Module, x: Tensor) -> Tensor:
    """``model(x)`` in eval mode under inference mode, restoring every module's previous mode."""
    raise NotImplementedError
