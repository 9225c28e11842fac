"""Gradient clipping by global norm: ``torch.nn.utils.clip_grad_norm_`` from scratch.

The question
------------
What is gradient clipping and why is it used? A single bad batch (or an exploding recurrent
network) can produce a gradient so large that one optimizer step throws the weights far away.
Clipping by *global norm* treats every parameter's gradient as one long vector: if that vector's
norm is above ``max_norm``, every gradient is scaled down by the same factor, so the direction of
the update is kept and only its length is capped. Interviewers ask where it goes in the training
loop (after ``backward``, before ``step``; after ``scaler.unscale_`` with AMP), why it is global
rather than per parameter, and what the returned norm is good for (logging, spotting divergence).

Your task
---------
Write ``clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False)`` with the
documented behaviour of ``torch.nn.utils.clip_grad_norm_`` (without its ``foreach`` option), and
without calling ``torch.nn.utils.clip_grad_norm_``, ``clip_grads_with_norm_`` or ``get_total_norm``.

Contract
--------
- ``parameters``: a single tensor or an iterable of tensors (a list, or a generator such as
  ``model.parameters()``, which can only be iterated once). Tensors whose ``.grad`` is ``None``
  are skipped: they count for nothing and their ``.grad`` stays ``None``.
- The total norm is the ``norm_type``-norm of all the gradients together, as if they were
  flattened and concatenated into one vector (for ``inf``: the largest absolute value of any of
  them). It is computed before anything is modified.
- Each gradient is multiplied, in place (``.grad`` stays the same tensor object), by
  ``clip_coef = min(max_norm / (total_norm + 1e-6), 1.0)``. The ``1e-6`` is part of the contract
  (it is torch's): it keeps a zero total norm from dividing by zero, and it means a norm just at
  ``max_norm`` is scaled by slightly less than 1. The coefficient is never above 1: small
  gradients are never scaled up. Parameter values are not touched.
- Returns the total norm from before clipping as a 0-dim tensor with the gradients' dtype, on the
  first gradient's device. If no tensor has a gradient, returns
  ``torch.tensor(0.0)`` and changes nothing.
- The computation stays on the gradients' device: no ``.item()``, ``float(tensor)`` or Python
  ``if`` on a tensor value (that is a GPU -> CPU synchronisation on every training step). So it
  also works on ``meta`` tensors (shapes only; the norm returned is a ``meta`` tensor). The one
  exception is ``error_if_nonfinite=True``, which must look at the value.
- Non-finite gradients: if the total norm is ``nan`` or ``inf`` and ``error_if_nonfinite`` is
  true, raise ``RuntimeError`` before modifying anything. Otherwise clip with the same formula
  anyway (a norm of ``inf`` gives a coefficient of 0, so ``0 * inf = nan`` where a gradient was
  infinite), exactly as torch does.
- Works on cpu and cuda, in float32 and float64, and inside ``torch.autocast`` (the norm is
  still computed in the gradients' dtype, not in bfloat16/float16).
- Bad arguments (torch accepts some of these silently; you must not):
  ``max_norm`` that is not a real number (``int``/``float``; e.g. a string or ``None``) ->
  ``TypeError`` naming ``max_norm``; negative or ``nan`` -> ``ValueError`` naming ``max_norm``
  (``0`` zeroes the gradients, ``inf`` never clips);
  ``norm_type`` that is not a real number (torch also takes the string ``'inf'``; here pass
  ``float('inf')``) -> ``TypeError`` naming ``norm_type``; ``norm_type <= 0``, ``-inf`` or ``nan`` ->
  ``ValueError`` naming ``norm_type`` (any ``p > 0`` is fine, e.g. 1, 2, 3, 0.5, ``inf``);
  ``parameters`` that is not a tensor or an iterable of tensors -> ``TypeError`` naming
  ``parameters``.

Hints
-----
- ``torch.linalg.vector_norm(g, p)`` of each gradient, then the same norm of the stacked
  per-gradient norms, equals the norm of the concatenation (also for ``inf``) without copying
  every gradient into one big vector.
- ``torch.clamp(coef, max=1.0)`` instead of ``if coef < 1``: no synchronisation, same result.
- Turn a generator into a list once; and ``for p in tensor`` iterates over its rows.
- Work under ``torch.no_grad()``.
"""

from __future__ import annotations

from collections.abc import Iterable

from torch import Tensor


def clip_grad_norm(parameters: Tensor | Iterable[Tensor], max_norm: float,
                   norm_type: float = 2.0, error_if_nonfinite: bool = False) -> Tensor:
    """Scale all gradients in place so their global norm is at most ``max_norm``; return the norm."""
    raise NotImplementedError
