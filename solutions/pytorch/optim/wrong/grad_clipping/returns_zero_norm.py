"""Wrong (the constant submission): validates its arguments and returns a zero norm of the right
dtype and device, but never computes the norm nor clips. Breaks every value clause."""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Real

import torch
from torch import Tensor

EPS = 1e-6  # torch's: keeps a zero norm from dividing by zero


def _check_real(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"{name} must not be nan")
    return value


def clip_grad_norm(parameters: Tensor | Iterable[Tensor], max_norm: float,
                   norm_type: float = 2.0, error_if_nonfinite: bool = False) -> Tensor:
    """Scale all gradients in place so their global norm is at most ``max_norm``; return the norm."""
    max_norm = _check_real(max_norm, "max_norm")
    if max_norm < 0:
        raise ValueError(f"max_norm must be >= 0, got {max_norm}")
    norm_type = _check_real(norm_type, "norm_type")
    if norm_type <= 0:
        raise ValueError(f"norm_type must be > 0 (or inf), got {norm_type}")
    if isinstance(parameters, Tensor):
        parameters = [parameters]  # iterating a tensor would walk over its rows
    else:
        try:
            parameters = list(parameters)  # a generator can only be walked once
        except TypeError:
            raise TypeError("parameters must be a tensor or an iterable of tensors, got "
                            f"{type(parameters).__name__}") from None
        bad = [type(p).__name__ for p in parameters if not isinstance(p, Tensor)]
        if bad:
            raise TypeError(f"parameters must hold only tensors, got a {bad[0]}")

    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    with torch.no_grad():
        # The norm of the per-gradient norms equals the norm of their concatenation, for any p.
        device = grads[0].device
        total_norm = torch.zeros((), dtype=grads[0].dtype, device=device)
        if error_if_nonfinite and not bool(torch.isfinite(total_norm)):
            raise RuntimeError(f"the total gradient norm of order {norm_type} is {total_norm.item()}, "
                               "so it cannot be clipped (error_if_nonfinite=True)")
        # Clamp instead of branching: no GPU -> CPU sync, and never a coefficient above 1.
    return total_norm
