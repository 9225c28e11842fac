"""Wrong: batched_affine checks weight but not bias, so a bias of length 1 silently broadcasts over
all O outputs instead of raising ValueError naming bias."""

from torch import Tensor


def pairwise_sq_dists(a: Tensor, b: Tensor) -> Tensor:
    if a.dim() < 2 or b.dim() < 2:
        raise ValueError("a and b must have shape (..., N, D) and (..., M, D)")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"b has {b.shape[-1]} features per row but a has {a.shape[-1]}")
    # |a|^2 - 2ab + |b|^2 needs no (N, M, D) intermediate; clamp removes negative round-off.
    a_sq = (a * a).sum(-1).unsqueeze(-1)
    b_sq = (b * b).sum(-1).unsqueeze(-2)
    return (a_sq - 2 * a @ b.transpose(-1, -2) + b_sq).clamp_min(0)


def batched_affine(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    if weight.dim() != 2 or weight.shape[1] != x.shape[-1]:
        raise ValueError(f"weight must have shape (O, {x.shape[-1]}), got {tuple(weight.shape)}")
    # MISTAKE: no check of bias; a length-1 bias broadcasts silently.
    return x @ weight.T + bias
