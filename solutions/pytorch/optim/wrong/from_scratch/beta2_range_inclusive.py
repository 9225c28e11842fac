"""Wrong: accepts beta2 == 1 (checks beta2 in [0, 1] instead of [0, 1)); with beta2 = 1 the
second-moment bias correction divides by zero. Breaks 'a beta outside [0, 1) (name betas)'."""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

import torch
from torch import Tensor


def _check_non_negative(name: str, value: float) -> None:
    if not value >= 0.0:  # also rejects NaN
        raise ValueError(f"{name} must be >= 0, got {value}")


class SGD(torch.optim.Optimizer):
    """Stochastic gradient descent with optional momentum, Nesterov momentum and L2 weight decay."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float,
                 momentum: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False) -> None:
        _check_non_negative("lr", lr)
        _check_non_negative("momentum", momentum)
        _check_non_negative("weight_decay", weight_decay)
        if nesterov and momentum == 0:
            raise ValueError("nesterov=True needs a non-zero momentum")
        defaults = dict(lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()`` if given."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, momentum = group["lr"], group["momentum"]
            weight_decay, nesterov = group["weight_decay"], group["nesterov"]
            for p in group["params"]:
                if p.grad is None:
                    continue  # skipped altogether, state untouched
                grad = p.grad
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        # First update: the buffer *is* the gradient (not momentum * 0 + g scaled).
                        buf = state["momentum_buffer"] = grad.detach().clone()
                    else:
                        buf.mul_(momentum).add_(grad)
                    grad = grad.add(buf, alpha=momentum) if nesterov else buf
                p.add_(grad, alpha=-lr)
        return loss


class Adam(torch.optim.Optimizer):
    """Adam with bias correction, optional L2 weight decay (added to the gradient) and AMSGrad."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False) -> None:
        _check_non_negative("lr", lr)
        _check_non_negative("eps", eps)
        _check_non_negative("weight_decay", weight_decay)
        if len(betas) != 2 or not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] <= 1.0):
            raise ValueError(f"betas must be two numbers in [0, 1), got {betas}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()`` if given."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
            weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                state = self.state[p]
                if not state:
                    # A Python int step: each parameter counts its own updates.
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    if amsgrad:
                        state["max_exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                if amsgrad:
                    if "max_exp_avg_sq" not in state:  # amsgrad switched on for a running group
                        state["max_exp_avg_sq"] = torch.zeros_like(p)
                    torch.maximum(state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
                    second = state["max_exp_avg_sq"]
                else:
                    second = exp_avg_sq
                bias_correction1 = 1 - beta1 ** t
                bias_correction2 = 1 - beta2 ** t
                # eps is added after the bias correction of v (torch's documented formula).
                denom = (second.sqrt() / math.sqrt(bias_correction2)).add_(eps)
                p.addcdiv_(exp_avg, denom, value=-lr / bias_correction1)
        return loss
