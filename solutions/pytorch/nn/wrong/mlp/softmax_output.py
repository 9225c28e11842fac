"""Wrong: ends the network in a softmax, so it returns probabilities where the contract asks for
logits (the last Linear is followed by nothing). It still trains with NLL-style losses, which is
why it goes unnoticed. Breaks: the last Linear is followed by nothing."""

from collections.abc import Sequence

from torch import Tensor, nn

_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "silu": nn.SiLU}


def _check_size(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
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
        self.net = nn.Sequential(*layers, nn.Softmax(dim=-1))

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)
