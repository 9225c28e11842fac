"""Wrong: hand-written dropout that zeroes units with probability p but forgets to scale the
kept ones by 1 / (1 - p), so activations shrink in training and the eval-mode network sees
larger inputs than it was trained on."""

from collections.abc import Sequence

import torch
from torch import Tensor, nn

_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "silu": nn.SiLU}


class MaskDropout(nn.Module):
    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0:
            return x
        return x * (torch.rand_like(x) >= self.p)


class MLP(nn.Module):
    def __init__(self, in_features: int, hidden: Sequence[int], out_features: int,
                 activation: str = "relu", dropout: float = 0.0) -> None:
        super().__init__()
        for value, name in [(in_features, "in_features"), (out_features, "out_features"),
                            *[(h, "hidden") for h in hidden]]:
            if value <= 0:
                raise ValueError(f"{name} must be positive")
        if activation not in _ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}")
        if not 0 <= dropout < 1:
            raise ValueError("dropout must be in [0, 1)")
        sizes = [in_features, *hidden, out_features]
        layers = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(sizes) - 2:
                layers += [_ACTIVATIONS[activation](), MaskDropout(dropout)]
        self.net = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)
