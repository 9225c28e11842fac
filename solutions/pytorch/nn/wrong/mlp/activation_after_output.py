"""Wrong: puts the activation (and dropout) after every Linear, the output layer included, so a
ReLU network can never output a negative logit or regression value."""

from collections.abc import Sequence

from torch import Tensor, nn

_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "silu": nn.SiLU}


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
        for a, b in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(a, b), _ACTIVATIONS[activation](), nn.Dropout(dropout)]
        self.net = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)
