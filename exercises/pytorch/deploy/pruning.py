"""Global magnitude pruning, measuring sparsity, and making pruning permanent.

The question
------------
How do you prune a network? Magnitude pruning zeroes the weights of smallest absolute value;
*global* pruning ranks the weights of all layers together, so a layer with many small weights
loses more of them than a layer with large ones. ``torch.nn.utils.prune`` does not delete weights:
it keeps the original as ``weight_orig`` and a 0/1 ``weight_mask``, and recomputes
``weight = weight_orig * weight_mask`` before each forward, so the pruned weights stay zero while
training goes on. Once training is over, the reparametrisation is removed to leave a plain
``weight`` again.

Your task
---------
Write ``global_magnitude_prune(model, amount, module_types=(nn.Linear, nn.Conv2d))``,
``sparsity(model, module_types=(nn.Linear, nn.Conv2d))`` and ``make_permanent(model)``.

Contract
--------
- The weights considered are the ``weight`` of every submodule of ``model`` that is an instance
  of one of ``module_types`` (subclasses included); biases and other modules are never pruned.
  A model with no such module raises ``ValueError`` naming ``module_types``.
- ``amount`` is a Python float in ``[0.0, 1.0]``, the fraction of all those weights together to
  prune; a float outside that range or NaN raises ``ValueError`` naming ``amount``, and anything
  that is not a float (an int included) raises ``TypeError`` naming ``amount``.
- Exactly ``round(amount * n)`` weights are pruned (Python's ``round``, ``n`` the number of weights
  considered), and they are the ones of smallest absolute value across all the modules together
  (not per layer); among equal magnitudes at the threshold either may go.
- Pruning works like ``torch.nn.utils.prune``: every module considered gets a parameter
  ``weight_orig`` (the original values) and a buffer ``weight_mask`` (1 keeps, 0 prunes), and its
  forward uses ``weight_orig * weight_mask``, so a change to ``weight_orig`` shows in the next
  forward while pruned entries stay zero. The model has not been pruned before.
- ``global_magnitude_prune`` returns ``None``; the masks live on the weights' device.
- ``sparsity(model, module_types)`` returns, as a Python float, the fraction of entries that are
  exactly zero in the current ``weight`` of every module considered (pruned or not; zeros that
  were there before pruning count too). A model with no such module raises ``ValueError``
  naming ``module_types``.
- ``make_permanent(model)`` removes the reparametrisation from every pruned module: ``weight``
  becomes a plain parameter holding the pruned values, and neither ``weight_orig`` nor
  ``weight_mask`` is left. Modules that were never pruned are left as they are (no error), and the
  model's outputs do not change.

Hints
-----
- ``torch.nn.utils.prune.global_unstructured`` with ``prune.L1Unstructured`` does the ranking;
  read what it does with an int ``amount``.
- ``prune.is_pruned(module)`` and ``prune.remove(module, "weight")`` help with the last part.
"""

from __future__ import annotations

from torch import nn


def global_magnitude_prune(model: nn.Module, amount: float,
                           module_types: tuple[type[nn.Module], ...] = (nn.Linear, nn.Conv2d)) -> None:
    """Prune the smallest-magnitude ``amount`` of all weights of ``module_types`` in ``model``."""
    raise NotImplementedError


def sparsity(model: nn.Module, module_types: tuple[type[nn.Module], ...] = (nn.Linear, nn.Conv2d)) -> float:
    """Fraction of zero entries in the weights of ``model``'s modules of ``module_types``."""
    raise NotImplementedError


def make_permanent(model: nn.Module) -> None:
    """Remove the pruning reparametrisation, keeping the pruned weights."""
    raise NotImplementedError
