"""Wrong: a constant submission -- Functions with the right structure (grad_fn, None for
non-tensor arguments and for inputs that need no gradient, dim checks) whose values and gradients
are all zero."""

from __future__ import annotations

import torch
from torch import Tensor


class SiLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        return torch.zeros_like(x)

    @staticmethod
    def backward(ctx, grad_output: Tensor) -> Tensor | None:
        if not ctx.needs_input_grad[0]:
            return None
        return grad_output * 0


def silu(x: Tensor) -> Tensor:
    return SiLU.apply(x)


class LogSumExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, dim: int, keepdim: bool) -> Tensor:
        ctx.dim, ctx.keepdim, ctx.shape = dim, keepdim, x.shape
        return torch.zeros_like(x.sum(dim, keepdim=keepdim))

    @staticmethod
    def backward(ctx, grad_output: Tensor):
        if not ctx.needs_input_grad[0]:
            return None, None, None
        if not ctx.keepdim:
            grad_output = grad_output.unsqueeze(ctx.dim)
        return (grad_output * 0).expand(ctx.shape), None, None


def logsumexp(x: Tensor, dim: int, keepdim: bool = False) -> Tensor:
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if not -max(x.dim(), 1) <= dim < max(x.dim(), 1):
        raise IndexError(f"dim {dim} is out of range for a tensor with {x.dim()} dimensions")
    return LogSumExp.apply(x, dim, keepdim)
