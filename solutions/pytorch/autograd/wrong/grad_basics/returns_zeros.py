"""Wrong: a constant submission -- validates its arguments like the contract says, then returns
zeros of the right shape, dtype and device (accumulate leaves x.grad at zeros)."""

from collections.abc import Callable

import torch
from torch import Tensor


def _check_x(x: Tensor) -> None:
    if not isinstance(x, Tensor) or not x.is_floating_point():
        raise TypeError("x must be a floating-point tensor")


def gradient(f: Callable[[Tensor], Tensor], x: Tensor, *, create_graph: bool = False) -> Tensor:
    _check_x(x)
    with torch.no_grad():
        out = f(x)
    if not isinstance(out, Tensor) or out.numel() != 1:
        raise ValueError("f must return a tensor with exactly one element")
    return torch.zeros_like(x)


def jacobian(f: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
    _check_x(x)
    with torch.no_grad():
        out = f(x)
    return torch.zeros((*out.shape, *x.shape), dtype=x.dtype, device=x.device)


def accumulate(f: Callable[[Tensor], Tensor], x: Tensor, times: int) -> Tensor:
    if not isinstance(x, Tensor) or not x.requires_grad or not x.is_leaf:
        raise ValueError("x must be a leaf tensor with requires_grad=True")
    if isinstance(times, bool) or not isinstance(times, int) or times < 1:
        raise ValueError(f"times must be a positive int, got {times!r}")
    if x.grad is None:
        x.grad = torch.zeros_like(x)
    return x.grad
