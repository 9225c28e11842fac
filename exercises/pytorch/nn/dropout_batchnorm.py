"""Dropout and BatchNorm from scratch: two layers that behave differently in train and eval mode.

The question
------------
Dropout and batch normalisation are the two everyday layers whose output depends on
``model.train()`` / ``model.eval()``, which is why forgetting ``model.eval()`` before inference is
such a common bug. Dropout regularises a network by zeroing random activations while training, so
that no unit can rely on one particular other unit; at inference it must do nothing. Batch
normalisation standardises each feature (channel) with the statistics of the current mini-batch
while training, which steadies and speeds up optimisation, and keeps running averages of those
statistics to use at inference, when there may be a single example and no batch to speak of.
Interviewers ask what each layer does and why, then ask you to write them.

Your task
---------
Implement ``Dropout`` and ``BatchNorm1d`` as ``torch.nn.Module`` subclasses that behave exactly
like ``torch.nn.Dropout`` and ``torch.nn.BatchNorm1d`` (``affine=True``,
``track_running_stats=True``), without calling any dropout or batch-norm function of torch
(``F.dropout``, ``F.batch_norm``, ``torch.nn.Dropout``, ``torch.nn.BatchNorm*``, ...).

Contract
--------
``Dropout(p=0.5)``

- In training mode every element of the input is zeroed independently with probability ``p`` and
  every element that survives is multiplied by ``1 / (1 - p)`` ("inverted" dropout), so the
  expected value of each output element equals the input element. ``p == 0`` returns values equal
  to the input; ``p == 1`` returns all zeros (never NaN).
- In eval mode the output equals the input (returning the input itself is fine).
- The input is never modified in place. The output has the input's shape, dtype (``float16``,
  ``bfloat16``, ``float32``, ``float64``) and device, and is differentiable: its gradient is
  ``mask / (1 - p)`` (zeros when ``p == 1``).
- Randomness comes from torch's default generator for the input's device (``torch.rand``,
  ``torch.bernoulli``, ``Tensor.bernoulli_`` ... without a ``generator=``), so
  ``torch.manual_seed(s)`` before a call makes that call reproducible; every call draws a fresh mask.
- Works on any device, ``meta`` included. ``p`` is stored as ``self.p``; a ``p`` outside
  ``[0, 1]`` (NaN included) raises ``ValueError`` naming ``p``.

``BatchNorm1d(num_features, eps=1e-5, momentum=0.1)``

- Input ``x`` has shape ``(N, C)`` or ``(N, C, L)`` with ``C == num_features``; the statistics of
  channel ``c`` are taken over every element of ``x[:, c]`` (over ``N``, and over ``L`` too for 3-D
  input). The output has ``x``'s shape.
- State, with ``nn.BatchNorm1d``'s names, so the two modules' ``state_dict``s have the same keys and
  shapes: parameters ``weight`` (initialised to ones) and ``bias`` (zeros), shape ``(C,)``; buffers
  ``running_mean`` (zeros), ``running_var`` (ones), shape ``(C,)``, and ``num_batches_tracked``
  (a 0-dim int64 tensor, 0). Being parameters and buffers, they follow ``.to()``, ``.double()``.
- Training mode: ``y = (x - mean) / sqrt(var + eps) * weight + bias`` with the batch ``mean`` and
  the *biased* batch variance ``var``; gradients flow through ``mean`` and ``var`` as well as
  ``weight`` and ``bias``. Then, without recording autograd history, ``num_batches_tracked`` grows
  by 1 and ``running = (1 - f) * running + f * batch_stat`` for the mean and for the *unbiased*
  batch variance (``var * n / (n - 1)`` with ``n`` values per channel), where ``f = momentum``,
  or ``f = 1 / num_batches_tracked`` (a cumulative average) when ``momentum is None``.
- Eval mode: the same formula with ``running_mean`` and ``running_var`` in place of the batch
  statistics; no state changes (any batch size works, ``N == 1`` included).
- Training with a single value per channel (``N * L == 1``) raises ``ValueError`` naming ``x``,
  since the variance of one value is undefined (``N == 1`` with ``L > 1`` is fine); so does an
  ``x`` that is not 2-D or 3-D or whose ``x.shape[1] != num_features``.
- Constructor arguments: ``num_features`` a positive int, ``eps > 0``, ``momentum`` ``None`` or in
  ``[0, 1]`` (both ends included); otherwise (NaN included) ``ValueError`` naming the argument.
- Works for float32 and float64 (module and input of the same dtype) on any device, ``meta``
  included.

Hints
-----
- ``self.training`` tells you the mode; ``register_buffer`` makes a tensor part of the state
  without making it a parameter.
- Which reduction dimensions make one statistic per channel for both input shapes?
- ``torch.nn.Dropout``'s ``p`` is the probability to *drop*, not to keep.
"""

from __future__ import annotations

from torch import Tensor, nn


class Dropout(nn.Module):
    """Inverted dropout: zero each element with probability ``p`` while training."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError


class BatchNorm1d(nn.Module):
    """Batch normalisation over ``(N, C)`` or ``(N, C, L)`` input, with running statistics."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1) -> None:
        super().__init__()
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError
