"""Wrong: jacobian() reshapes with reshape(*out.shape, *x.shape): when both out and x are 0-dim that is
reshape() with no shape at all, which raises instead of returning the 0-dim Jacobian."""

from collections.abc import Callable

import torch
from torch import Tensor


def _check_x(x: Tensor) -> None:
    if not isinstance(x, Tensor) or not x.is_floating_point():
        kind = x.dtype if isinstance(x, Tensor) else type(x).__name__
        raise TypeError(f"x must be a floating-point tensor, got {kind}")


def _differentiable(x: Tensor) -> Tensor:
    # Differentiate against x itself when it is already in a graph (so create_graph can chain
    # derivatives); otherwise against a fresh leaf sharing its data, leaving x's flags alone.
    return x if x.requires_grad else x.detach().requires_grad_(True)


def gradient(f: Callable[[Tensor], Tensor], x: Tensor, *, create_graph: bool = False) -> Tensor:
    _check_x(x)
    with torch.enable_grad():  # callers may sit inside torch.no_grad()
        inp = _differentiable(x)
        out = f(inp)
        if not isinstance(out, Tensor) or out.numel() != 1:
            shape = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise ValueError(f"f must return a tensor with exactly one element, got {shape}")
        if not out.requires_grad:  # f(x) does not depend on x at all
            return torch.zeros_like(x)
        # autograd.grad returns the gradient instead of accumulating it into inp.grad.
        grad, = torch.autograd.grad(out.reshape(()), inp, create_graph=create_graph,
                                    allow_unused=True, materialize_grads=True)
    return grad


def jacobian(f: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
    _check_x(x)
    with torch.enable_grad():
        inp = _differentiable(x)
        out = f(inp)
        if not isinstance(out, Tensor):
            raise TypeError(f"f must return a tensor, got {type(out).__name__}")
        rows = torch.zeros(out.numel(), x.numel(), dtype=x.dtype, device=x.device)
        if out.requires_grad:
            flat = out.reshape(-1)
            # Row i is the vector-Jacobian product with the i-th one-hot vector.
            for i in range(flat.numel()):
                grad, = torch.autograd.grad(flat[i], inp, retain_graph=True, allow_unused=True,
                                            materialize_grads=True)
                rows[i] = grad.reshape(-1)
    return rows.reshape(*out.shape, *x.shape)


def accumulate(f: Callable[[Tensor], Tensor], x: Tensor, times: int) -> Tensor:
    if not isinstance(x, Tensor) or not x.requires_grad or not x.is_leaf:
        raise ValueError("x must be a leaf tensor with requires_grad=True")
    if isinstance(times, bool) or not isinstance(times, int) or times < 1:
        raise ValueError(f"times must be a positive int, got {times!r}")
    with torch.enable_grad():
        for _ in range(times):
            # backward() frees the graph, so every pass needs its own forward.
            f(x).backward()
    return x.grad
