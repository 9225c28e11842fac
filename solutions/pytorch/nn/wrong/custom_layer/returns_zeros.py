"""Wrong (the constant submission): parameters, freezing, errors and merge are right, but forward
returns zeros of the right shape, dtype and device (still attached to the graph, with zero
gradients)."""

import math
import numbers

import torch
from torch import Tensor, nn


class LoRALinear(nn.Module):
    """Frozen ``base`` Linear plus a trainable low-rank update ``(alpha / rank) * B @ A``."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float) -> None:
        super().__init__()
        if not isinstance(base, nn.Linear):
            raise TypeError(f"base must be an nn.Linear, got {type(base).__name__}")
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise ValueError(f"rank must be a positive int, got {rank!r}")
        if (isinstance(alpha, bool) or not isinstance(alpha, numbers.Real)
                or not math.isfinite(alpha) or alpha <= 0):
            raise ValueError(f"alpha must be a positive number, got {alpha!r}")
        self.base = base
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.rank = rank
        self.alpha = alpha
        self.scaling = alpha / rank
        factory = dict(device=base.weight.device, dtype=base.weight.dtype)
        self.lora_A = nn.Parameter(torch.empty(rank, base.in_features, **factory))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank, **factory))
        # A random, B zero: the layer starts equal to base, and B still gets a gradient.
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))

    def forward(self, x: Tensor) -> Tensor:
        # Two thin matmuls, never the dense (out x in) product B @ A.
        update = (x @ self.lora_A.T) @ self.lora_B.T
        out = self.base(x) + self.scaling * update
        return out - out.detach()

    @torch.no_grad()
    def merge(self) -> nn.Linear:
        base = self.base
        merged = nn.Linear(base.in_features, base.out_features, bias=base.bias is not None,
                           device=base.weight.device, dtype=base.weight.dtype)
        merged.weight.copy_(base.weight + self.scaling * (self.lora_B @ self.lora_A))
        if base.bias is not None:
            merged.bias.copy_(base.bias)
        return merged
