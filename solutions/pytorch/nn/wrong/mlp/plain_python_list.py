"""Wrong: keeps the layers in a plain Python list, so nn.Module never registers them:
parameters() and state_dict() are empty, .to() moves nothing and an optimizer trains nothing,
yet the forward pass runs and gives sensible-looking outputs."""

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
        self.layers = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            self.layers.append(nn.Linear(a, b))
            if i < len(sizes) - 2:
                self.layers += [_ACTIVATIONS[activation](), nn.Dropout(dropout)]

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = layer(x)
        return x
