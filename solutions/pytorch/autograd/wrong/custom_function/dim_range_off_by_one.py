"""Wrong: logsumexp checks -x.dim() < dim < x.dim(), so dim = -x.dim() (the first dimension counted
from the end, allowed) raises IndexError."""

from __future__ import annotations

import torch
from torch import Tensor


class SiLU(torch.autograd.Function):
    """``x * sigmoid(x)`` with a hand-written, twice-differentiable backward."""

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        # Save the *input*: anything recomputed from it in backward is recorded by autograd when
        # backward runs with create_graph=True, so double backward comes for free.
        ctx.save_for_backward(x)
        # torch.sigmoid is stable at both ends (no exp overflow), so x * sigmoid(x) is too.
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad_output: Tensor) -> Tensor | None:
        if not ctx.needs_input_grad[0]:
            return None
        x, = ctx.saved_tensors
        s = torch.sigmoid(x)
        # d/dx [x s(x)] = s + x s (1 - s); every factor is bounded, so no inf/inf at |x| ~ 1e4.
        return grad_output * (s * (1 + x * (1 - s)))


def silu(x: Tensor) -> Tensor:
    return SiLU.apply(x)


class LogSumExp(torch.autograd.Function):
    """``log(sum(exp(x), dim))`` computed with the max-shift trick."""

    @staticmethod
    def forward(ctx, x: Tensor, dim: int, keepdim: bool) -> Tensor:
        m = x.amax(dim, keepdim=True)
        # A slice that is all -inf has max -inf; shifting by it would give -inf - -inf = NaN.
        m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
        out = (x - m).exp().sum(dim, keepdim=True).log() + m
        result = out if keepdim else out.squeeze(dim)
        ctx.dim = dim
        ctx.keepdim = keepdim
        # Save the returned output, not `out`: an intermediate saved here would be a constant to
        # double backward, which would then miss how it depends on x.
        ctx.save_for_backward(x, result)
        return result

    @staticmethod
    def backward(ctx, grad_output: Tensor):
        if not ctx.needs_input_grad[0]:
            return None, None, None
        x, lse = ctx.saved_tensors
        if not ctx.keepdim:
            # Put the reduced dim back so that lse and the gradient broadcast against x.
            lse, grad_output = lse.unsqueeze(ctx.dim), grad_output.unsqueeze(ctx.dim)
        # softmax(x) = exp(x - lse): never exp(x) / exp(lse), which is inf / inf at large |x|.
        return grad_output * (x - lse).exp(), None, None


def logsumexp(x: Tensor, dim: int, keepdim: bool = False) -> Tensor:
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if not -max(x.dim(), 1) < dim < max(x.dim(), 1):
        raise IndexError(f"dim {dim} is out of range for a tensor with {x.dim()} dimensions")
    return LogSumExp.apply(x, dim, keepdim)
