"""Broadcasting: pairwise distances and batched affine maps.

The question
------------
Broadcasting lets tensors of different shapes meet in one elementwise operation: sizes are
aligned from the right, and a dimension of size 1 (or a missing one) is stretched to match the
other. Interviewers ask you to explain the rule and then to *use* it: replace a Python loop over
rows with one vectorised expression.

Your task
---------
1. ``pairwise_sq_dists(a, b)``: squared Euclidean distances between every row of ``a`` and every
   row of ``b``.
2. ``batched_affine(x, weight, bias)``: ``x @ weight.T + bias`` over any leading dimensions
   (what ``nn.Linear`` computes).

Contract
--------
- ``a`` has shape ``(..., N, D)`` and ``b`` shape ``(..., M, D)``; their batch dims ``...``
  broadcast against each other. The result has shape ``(*broadcast_batch, N, M)`` and
  ``out[..., i, j] == ((a[..., i, :] - b[..., j, :]) ** 2).sum()``.
- Distances are never negative, even where round-off would make them so, and gradients are finite
  everywhere (including where two rows coincide).
- ``x`` has shape ``(..., I)``, ``weight`` ``(O, I)``, ``bias`` ``(O,)``; result ``(..., O)``.
- Outputs are on the inputs' device with the inputs' dtype; both functions work on ``meta``.
- Both functions are differentiable in every input, with the gradients of the formulas above.
- No Python loop over rows: the work done must not grow with ``N`` or ``M`` in Python.
- A ``D`` (or ``I``) mismatch raises ``ValueError`` naming the argument: ``b`` when its last
  dimension is not ``a``'s ``D``, ``weight`` when its second dimension is not ``x``'s ``I``,
  ``bias`` when its length is not ``weight``'s ``O``. Sizes that would broadcast (a ``D`` of 1,
  a ``bias`` of length 1) are mismatches too.

Hints
-----
- ``|a - b|^2 = |a|^2 - 2 a.b + |b|^2``; ``unsqueeze`` lets you broadcast ``(N, 1, D)`` against
  ``(1, M, D)`` too. Which one needs less memory?
- Taking ``sqrt`` and squaring back is not free: what is the derivative of ``sqrt`` at 0?
"""

from torch import Tensor


def pairwise_sq_dists(a: Tensor, b: Tensor) -> Tensor:
    """Squared distances between rows: ``(..., N, D), (..., M, D) -> (..., N, M)``."""
    raise NotImplementedError


def batched_affine(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """``x @ weight.T + bias`` for ``x`` of shape ``(..., I)``: returns ``(..., O)``."""
    raise NotImplementedError
