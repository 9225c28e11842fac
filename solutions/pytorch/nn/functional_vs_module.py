"""Reference solution: pytorch.nn.functional_vs_module."""

from collections import OrderedDict
from collections.abc import Sequence

import torch
from torch import Tensor, nn


def _as_shape(normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape or any(not isinstance(s, int) or s <= 0 for s in shape):
        raise ValueError(f"normalized_shape must be a positive int or a non-empty sequence of "
                         f"positive ints, got {normalized_shape!r}")
    return shape


def layer_norm(x: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    shape = _as_shape(normalized_shape)
    if tuple(x.shape[x.dim() - len(shape):]) != shape or x.dim() < len(shape):
        raise ValueError(f"normalized_shape {shape} does not match the trailing dims of x "
                         f"{tuple(x.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise ValueError(f"{name} must have shape {shape}, got {tuple(t.shape)}")
    if not eps >= 0:  # also rejects NaN, for which every comparison is False
        raise ValueError(f"eps must be non-negative, got {eps}")
    dims = tuple(range(-len(shape), 0))
    mean = x.mean(dim=dims, keepdim=True)
    centred = x - mean
    # Two passes: variance from the centred values, which stays accurate when |mean| >> std
    # (E[x^2] - E[x]^2 cancels catastrophically there).
    var = (centred * centred).mean(dim=dims, keepdim=True)
    out = centred * torch.rsqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


class LayerNorm(nn.Module):
    """Module form of ``layer_norm`` with learnable ``weight`` (ones) and ``bias`` (zeros)."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True) -> None:
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        if not eps >= 0:
            raise ValueError(f"eps must be non-negative, got {eps}")
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            # nn.Parameter registers them: parameters(), state_dict() and .to() see them.
            self.weight = nn.Parameter(torch.ones(self.normalized_shape))
            self.bias = nn.Parameter(torch.zeros(self.normalized_shape))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


def sequential_mlp(sizes: Sequence[int]) -> nn.Sequential:
    sizes = list(sizes)
    if len(sizes) < 2 or any(isinstance(s, bool) or not isinstance(s, int) or s <= 0 for s in sizes):
        raise ValueError(f"sizes must hold at least two positive ints, got {sizes!r}")
    layers: OrderedDict[str, nn.Module] = OrderedDict()
    n = len(sizes) - 1
    for i in range(1, n + 1):
        layers[f"fc{i}"] = nn.Linear(sizes[i - 1], sizes[i])
        if i < n:
            layers[f"act{i}"] = nn.ReLU()
    return nn.Sequential(layers)
