"""Wrong: uses the |a|^2 - 2ab + |b|^2 expansion without clamping, so round-off gives small
negative distances; and batched_affine forgets the transpose, which only works when O == I."""

from torch import Tensor


def pairwise_sq_dists(a: Tensor, b: Tensor) -> Tensor:
    if a.shape[-1] != b.shape[-1]:
        raise ValueError("b: feature size mismatch")
    a_sq = (a * a).sum(-1).unsqueeze(-1)
    b_sq = (b * b).sum(-1).unsqueeze(-2)
    return a_sq - 2 * a @ b.transpose(-1, -2) + b_sq


def batched_affine(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    return x @ weight + bias
