"""Wrong: builds the windows by stacking slices: right values and shape, but a copy, not a view
(memory grows by a factor size/step and later changes to x are not seen)."""

import torch
from torch import Tensor


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    if x.dim() != 3:
        raise ValueError("x must be 3-D")
    b, t, e = x.shape
    if n_heads < 1 or e % n_heads:
        raise ValueError("n_heads must divide the feature size")
    return x.view(b, t, n_heads, e // n_heads).transpose(1, 2)


def merge_heads(y: Tensor) -> Tensor:
    if y.dim() != 4:
        raise ValueError("y must be 4-D")
    b, h, t, d = y.shape
    return y.transpose(1, 2).reshape(b, t, h * d)


def sliding_windows(x: Tensor, size: int, step: int) -> Tensor:
    if x.dim() < 1:
        raise ValueError("x must have at least one dimension")
    length = x.shape[-1]
    if not 1 <= size <= length:
        raise ValueError("size out of range")
    if step < 1:
        raise ValueError("step must be at least 1")
    n = (length - size) // step + 1
    return torch.stack([x[..., i * step:i * step + size] for i in range(n)], dim=-2)
