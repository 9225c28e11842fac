"""Custom autograd Functions: SiLU and a numerically stable logsumexp.

The question
------------
Autograd knows the derivative of every built-in operation. When you need an operation it does not
have, or a better backward than the one it would derive (more stable, cheaper, less memory), you
write a ``torch.autograd.Function``: a ``forward`` that computes the result from plain tensors
(autograd is switched off inside it) and a ``backward`` that maps the gradient of the output to
the gradient of each input. Interviewers ask how such a Function is put together (``ctx``,
``save_for_backward``, what ``backward`` must return) and what can go wrong: overflow at large
inputs, a backward that cannot itself be differentiated, gradients returned for arguments that
are not tensors.

Your task
---------
1. ``SiLU``: a ``torch.autograd.Function`` computing ``silu(x) = x * sigmoid(x)`` elementwise,
   with a hand-written ``backward``; and ``silu(x)``, which applies it (``SiLU.apply(x)``).
2. ``LogSumExp``: a ``torch.autograd.Function`` computing ``log(sum(exp(x), dim))`` with a
   hand-written ``backward``; and ``logsumexp(x, dim, keepdim=False)``, which applies it
   (``LogSumExp.apply(...)``) after checking ``dim``.

Do not call ``torch.nn.functional.silu``, ``torch.logsumexp``/``Tensor.logsumexp``, or the
softmax / log-softmax functions in your code: the point is to write them.

Contract
--------
- ``silu(x)`` and ``logsumexp(...)`` must compute through your Functions: the ``grad_fn`` of
  their result is the backward node of ``SiLU`` / ``LogSumExp``.
- ``silu(x)``: same shape, dtype and device as ``x``; equals ``torch.nn.functional.silu(x)``.
- ``logsumexp(x, dim, keepdim=False)``: equals ``torch.logsumexp(x, dim, keepdim)``, for an int
  ``dim`` (negative counts from the end). The result has the shape of ``x`` with ``dim`` removed,
  or kept with size 1 when ``keepdim`` is true; same dtype and device as ``x``.
  ``-inf`` entries (masked-out scores) are allowed: they contribute nothing and get a zero
  gradient, and a slice that is entirely ``-inf`` gives ``-inf``, never NaN (its gradient is not
  specified).
- Stable at the extremes: for ``|x|`` up to ``1e4`` in float32 and float64, values, gradients
  (and for ``silu`` second derivatives) are finite and correct: no ``inf``, no NaN.
- Both ``backward`` methods are themselves differentiable, so ``torch.autograd.gradgradcheck``
  passes (double backward, Hessian-vector products).
- ``backward`` returns one value per argument of ``forward`` (after ``ctx``): ``None`` for every
  argument that is not a tensor (``dim``, ``keepdim``), and ``None`` for ``x`` without computing
  anything whenever ``ctx.needs_input_grad`` says that ``x`` needs no gradient.
- Any floating dtype (float16, bfloat16, float32, float64) and any device (including ``meta``);
  the result has the input's dtype, also inside ``torch.autocast`` (on CPU autocast gives you
  bfloat16 activations, and gradients must still reach the float32 parameters behind them).
- ``dim`` that is not an int raises ``TypeError``, one out of range for ``x`` raises
  ``IndexError`` or ``ValueError``; both messages name ``dim``.

Hints
-----
- ``log(sum(exp(x))) = m + log(sum(exp(x - m)))`` for any ``m``; pick ``m`` so that no ``exp``
  overflows. What does that choice do when the whole slice is ``-inf``?
- ``d logsumexp / dx`` is the softmax of ``x``. Writing it as ``exp(x) / exp(lse)`` is ``inf/inf``
  at large ``x``: find a form with nothing that overflows.
- ``sigmoid'(x) = sigmoid(x) * (1 - sigmoid(x))``; the textbook ``exp(-x) / (1 + exp(-x))**2``
  overflows.
- The newer style, a ``forward`` without ``ctx`` plus a ``setup_context(ctx, inputs, output)``,
  is fine too.
- Inside ``backward``, operations on tensors you saved with ``ctx.save_for_backward`` (inputs or
  outputs of ``forward``) are recorded by autograd when double backward is requested. A tensor
  computed inside ``forward`` and saved is a constant to autograd: its dependence on ``x`` is lost.
- Without ``keepdim``, the reduced dimension is gone from the output and from ``grad_output``:
  ``unsqueeze`` puts it back so they broadcast against ``x``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


class SiLU(torch.autograd.Function):
    """``x * sigmoid(x)`` with a hand-written, twice-differentiable backward."""

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> Tensor | None:
        raise NotImplementedError


def silu(x: Tensor) -> Tensor:
    """``x * sigmoid(x)`` elementwise, through ``SiLU``."""
    raise NotImplementedError


class LogSumExp(torch.autograd.Function):
    """``log(sum(exp(x), dim))``, stable for large ``|x|``, with a hand-written backward."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, dim: int, keepdim: bool) -> Tensor:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple[Tensor | None, None, None]:
        raise NotImplementedError


def logsumexp(x: Tensor, dim: int, keepdim: bool = False) -> Tensor:
    """``torch.logsumexp(x, dim, keepdim)``, through ``LogSumExp``."""
    raise NotImplementedError
