"""Wrong: loops over rows in Python (correct values, but not vectorised)."""

import torch
from torch import Tensor


def pairwise_sq_dists(a: Tensor, b: Tensor) -> Tensor:
    if a.shape[-1] != b.shape[-1]:
        raise ValueError("b: feature size mismatch")
    rows = [((a[..., i : i + 1, :] - b) ** 2).sum(-1) for i in range(a.shape[-2])]
    return torch.stack(rows, dim=-2)


def batched_affine(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    if weight.shape[1] != x.shape[-1]:
        raise ValueError("weight: shape mismatch")
    if bias.shape != (weight.shape[0],):
        raise ValueError("bias: shape mismatch")
    return x @ weight.T + bias
