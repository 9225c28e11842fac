"""Wrong: checks only that sizes are > 0, so a float size such as hidden=[4, 2.5] reaches
nn.Linear and fails there with a TypeError instead of the ValueError naming the argument.
Breaks: an entry of hidden that is not a positive int raises ValueError."""

from collections.abc import Sequence

from torch import Tensor, nn

_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "silu": nn.SiLU}


def _check_size(value: object, name: str) -> int:
    if value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


class MLP(nn.Module):
    """Fully connected network ``in_features -> *hidden -> out_features``."""

    def __init__(self, in_features: int, hidden: Sequence[int], out_features: int,
                 activation: str = "relu", dropout: float = 0.0) -> None:
        super().__init__()
        sizes = [_check_size(in_features, "in_features")]
        sizes += [_check_size(h, "hidden") for h in hidden]
        sizes.append(_check_size(out_features, "out_features"))
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(sizes) - 2:  # hidden layers only: the output layer stays linear
                layers += [_ACTIVATIONS[activation](), nn.Dropout(dropout)]
        # nn.Sequential registers every layer: parameters(), state_dict() and .to() see them.
        self.net = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)
