"""Cross-entropy from scratch, with every option of ``F.cross_entropy``.

The question
------------
"How do you define a loss function in PyTorch, e.g. ``nn.CrossEntropyLoss``?" The short answer is
"call ``F.cross_entropy``"; the interview answer shows you know what it computes: a numerically
stable log-softmax over the class dimension, the negative log-probability of the target class,
per-class weights, positions to ignore, label smoothing, and how the batch is reduced. Getting
each option exactly right (especially what a *weighted* mean divides by) is where people slip.

Your task
---------
Implement ``cross_entropy(logits, target, *, weight, ignore_index, label_smoothing, reduction)``
with the semantics of ``torch.nn.functional.cross_entropy`` for class-index targets, without
calling ``F.cross_entropy``, ``F.log_softmax`` or ``F.nll_loss`` (nor their ``torch.*`` /
``Tensor.*`` aliases).

Contract
--------
- ``logits``: floating-point tensor of shape ``(N, C)``, ``(N, C, d1, ..., dK)`` (classes on
  dim 1, e.g. per-pixel segmentation) or unbatched ``(C,)``.
- ``target``: integer tensor (int64 in the tests) of class indices with the logits' shape minus
  the class dim: ``(N,)``, ``(N, d1, ..., dK)`` or ``()``. Each value is in ``[0, C)`` or equals
  ``ignore_index``. (Other values are undefined behaviour and are not tested. Class-probability
  targets, which ``F.cross_entropy`` accepts as float targets, are not part of this exercise.)
- ``weight``: ``None`` or a 1-D tensor of ``C`` per-class weights (positive in the tests).
- With ``log p = log_softmax(logits)`` over the class dim, ``w = weight`` (all ones if ``None``),
  ``eps = label_smoothing`` and ``y`` the target at one position, the loss at that position is::

      l = (1 - eps) * w[y] * (-log p[y])  +  (eps / C) * sum_c w[c] * (-log p[c])

  i.e. the target distribution is ``(1 - eps) * one_hot(y) + eps / C`` (smoothing spreads ``eps``
  over all ``C`` classes, the target class included), and ``l = 0`` where ``y == ignore_index``.
  ``ignore_index`` may be any int, also a valid class index (then that class is ignored).
- ``reduction="none"``: the per-position losses, shape of ``target``. ``"sum"``: their sum.
  ``"mean"``: their sum divided by ``sum of w[y]`` over the non-ignored positions (the number of
  non-ignored positions when ``weight`` is ``None``); the label-smoothing term is divided by the
  same total. If every position is ignored, the mean is ``nan`` (0/0), the sum is 0.
- Numerically stable: logits of magnitude ``1e4`` (float32) give finite, correct losses and
  gradients. Gradients w.r.t. ``logits`` are correct (checked in float64 by finite differences).
- The result is on the logits' device (``meta`` included) with the logits' dtype (float32 or
  float64). Under ``torch.autocast``, float16/bfloat16 logits give a float32 loss computed in
  float32, as ``F.cross_entropy`` does.
- Errors (the message must name the argument):
  ``ValueError`` for ``reduction`` not in ``{"none", "mean", "sum"}``, for ``label_smoothing``
  outside ``[0, 1]`` (NaN included; both ends are allowed), for a ``target`` of the wrong shape,
  for a ``weight`` that is not of shape ``(C,)`` (shapes compared dimension by dimension, not by
  their number of elements), and for 0-d ``logits``; ``TypeError`` for non-floating ``logits`` and for a
  non-integer ``target`` (float or bool).
- Forbidden: the tests count the ATen ops your code dispatches; any ``log_softmax``,
  ``nll_loss`` or ``cross_entropy`` op fails. ``torch.logsumexp``, ``gather``, ``exp`` etc. are fine.

Hints
-----
- ``log_softmax(x) = x - logsumexp(x)``, and ``logsumexp`` is stable because it subtracts the
  max first. Why does ``softmax(x).log()`` fail for large logits?
- ``gather`` needs a valid index everywhere, but ``ignore_index`` defaults to -100: replace
  ignored targets by any valid class first, and mask their loss afterwards.
- Moving the class dim last (``movedim``) turns every case into rows of ``C`` logits.
- ``meta`` tensors have shapes but no values: boolean-mask indexing (``loss[mask]``), ``.item()``
  and ``if`` on a tensor cannot run there. Multiply by a 0/1 mask or use ``torch.where``.
"""

from torch import Tensor


def cross_entropy(logits: Tensor, target: Tensor, *, weight: Tensor | None = None,
                  ignore_index: int = -100, label_smoothing: float = 0.0,
                  reduction: str = "mean") -> Tensor:
    """Cross-entropy between ``logits`` and class-index ``target``, like ``F.cross_entropy``."""
    raise NotImplementedError
