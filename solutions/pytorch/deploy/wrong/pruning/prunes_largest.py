"""Wrong: ranks by magnitude the wrong way round and prunes the largest weights."""

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
    modules = _considered(model, module_types)
    n = sum(m.weight.numel() for m in modules)
    # An int amount is a count for torch's pruning: pass round(amount * n) explicitly.
    flat = torch.cat([m.weight.detach().abs().flatten() for m in modules])
    k = round(amount * n)
    threshold = torch.topk(flat, k).values.min() if k else float("inf")
    for m in modules:
        prune.custom_from_mask(m, "weight", (m.weight.detach().abs() < threshold).to(m.weight.dtype))


def sparsity(model: nn.Module, module_types: tuple[type[nn.Module], ...] = (nn.Linear, nn.Conv2d)) -> float:
    """Fraction of zero entries in the weights of ``model``'s modules of ``module_types``."""
    modules = _considered(model, module_types)
    zeros = sum(int((m.weight == 0).sum()) for m in modules)
    return zeros / sum(m.weight.numel() for m in modules)


def make_permanent(model: nn.Module) -> None:
    """Remove the pruning reparametrisation, keeping the pruned weights."""
    for module in model.modules():
        if prune.is_pruned(module) and hasattr(module, "weight_orig"):
            prune.remove(module, "weight")
