"""Wrong: validates momentum with two comparisons that are both False for NaN, so momentum=nan is
accepted and the running statistics become NaN after one batch. Breaks: momentum None or in
[0, 1], otherwise (NaN included) ValueError naming momentum."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class Dropout(nn.Module):
    """Inverted dropout: zero each element with probability ``p`` while training."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability p must be in [0, 1], got p={p}")
        self.p = float(p)

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        if self.p == 1.0:
            # 1 / (1 - p) would be inf, and inf * 0 is NaN: everything is dropped anyway.
            return x * torch.zeros_like(x)
        keep = torch.rand_like(x) >= self.p  # P(keep) = 1 - p; rand_like follows x's device
        return x * keep.to(x.dtype) / (1.0 - self.p)


class BatchNorm1d(nn.Module):
    """Batch normalisation over ``(N, C)`` or ``(N, C, L)`` input, with running statistics."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1) -> None:
        super().__init__()
        if isinstance(num_features, bool) or not isinstance(num_features, int) or num_features < 1:
            raise ValueError(f"num_features must be a positive int, got {num_features!r}")
        if not eps > 0:
            raise ValueError(f"eps must be > 0, got {eps!r}")
        if momentum is not None and (momentum < 0.0 or momentum > 1.0):
            raise ValueError(f"momentum must be None or in [0, 1], got {momentum!r}")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() not in (2, 3):
            raise ValueError(f"x must have shape (N, C) or (N, C, L), got {x.dim()}-D input "
                             f"of shape {tuple(x.shape)}")
        if x.shape[1] != self.num_features:
            raise ValueError(f"x has {x.shape[1]} channels (x.shape[1]) but num_features is "
                             f"{self.num_features}")
        dims = (0,) if x.dim() == 2 else (0, 2)
        # Broadcast per-channel vectors as (1, C) or (1, C, 1).
        shape = (1, -1) if x.dim() == 2 else (1, -1, 1)
        if self.training:
            n = x.numel() // x.shape[1]
            if n <= 1:
                raise ValueError("x has a single value per channel, so its batch variance is "
                                 f"undefined; training needs more (x shape {tuple(x.shape)})")
            mean = x.mean(dims)
            var = x.var(dims, unbiased=False)
            with torch.no_grad():
                self.num_batches_tracked += 1
                f = (1.0 / self.num_batches_tracked.to(x.dtype) if self.momentum is None
                     else self.momentum)
                self.running_mean.mul_(1 - f).add_(f * mean.detach())
                self.running_var.mul_(1 - f).add_(f * var.detach() * (n / (n - 1)))
        else:
            mean, var = self.running_mean, self.running_var
        x_hat = (x - mean.reshape(shape)) / torch.sqrt(var.reshape(shape) + self.eps)
        return x_hat * self.weight.reshape(shape) + self.bias.reshape(shape)
