"""Wrong (the constant submission): checks its arguments, then masks every weight to zero
whatever the amount, reports a sparsity of 0.0 and leaves make_permanent empty."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.utils import prune


def _considered(model: nn.Module, module_types: tuple[type[nn.Module], ...]) -> list[nn.Module]:
    modules = [m for m in model.modules() if isinstance(m, tuple(module_types))]
    if not modules:
        raise ValueError(f"model has no module of the types in module_types {module_types!r}")
    return modules


def global_magnitude_prune(model: nn.Module, amount: float,
                           module_types: tuple[type[nn.Module], ...] = (nn.Linear, nn.Conv2d)) -> None:
    """Prune the smallest-magnitude ``amount`` of all weights of ``module_types`` in ``model``."""
    if not isinstance(amount, float):
        raise TypeError(f"amount must be a float fraction in [0, 1], got {type(amount).__name__}")
    if math.isnan(amount) or not 0.0 <= amount <= 1.0:
        raise ValueError(f"amount must be in [0.0, 1.0], got {amount}")
    for m in _considered(model, module_types):
        prune.custom_from_mask(m, "weight", torch.zeros_like(m.weight))


def sparsity(model: nn.Module, module_types: tuple[type[nn.Module], ...] = (nn.Linear, nn.Conv2d)) -> float:
    """Fraction of zero entries in the weights of ``model``'s modules of ``module_types``."""
    _considered(model, module_types)
    return 0.0


def make_permanent(model: nn.Module) -> None:
    """Remove the pruning reparametrisation, keeping the pruned weights."""
