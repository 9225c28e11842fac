"""Wrong: calls F.dropout(x, p) in forward without training=self.training, so dropout stays
active in eval mode (F.dropout defaults to training=True) and inference is random."""

from collections.abc import Sequence

import torch.nn.functional as F
from torch import Tensor, nn

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "tanh": F.tanh, "silu": F.silu}


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
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.act = _ACTIVATIONS[activation]
        self.p = dropout

    def forward(self, x: Tensor) -> Tensor:
        for lin in self.linears[:-1]:
            x = F.dropout(self.act(lin(x)), self.p)
        return self.linears[-1](x)
