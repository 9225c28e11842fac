"""Wrong: pairwise_sq_dists broadcasts (..., N, 1, D) against (..., 1, M, D) and lets torch
report mismatches: a b with D = 1 broadcasts silently (wrong distances, no ValueError naming b),
and other mismatches raise torch's RuntimeError instead of ValueError."""

from torch import Tensor


def pairwise_sq_dists(a: Tensor, b: Tensor) -> Tensor:
    if a.dim() < 2 or b.dim() < 2:
        raise ValueError("a and b must have shape (..., N, D) and (..., M, D)")
    # MISTAKE: no check of D; torch's broadcasting decides.
    return ((a.unsqueeze(-2) - b.unsqueeze(-3)) ** 2).sum(-1)


def batched_affine(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    if weight.dim() != 2 or weight.shape[1] != x.shape[-1]:
        raise ValueError(f"weight must have shape (O, {x.shape[-1]}), got {tuple(weight.shape)}")
    if bias.shape != (weight.shape[0],):
        raise ValueError(f"bias must have shape ({weight.shape[0]},), got {tuple(bias.shape)}")
    return x @ weight.T + bias
