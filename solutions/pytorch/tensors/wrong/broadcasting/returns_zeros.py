"""Wrong (the constant submission): validates like the reference and returns zeros of the right
shape, dtype and device (connected to the graph, so its autograd agrees with its own finite
differences). Earns only the points of the error checks and the meta-device shape checks."""

from torch import Tensor


def _correct_pairwise_sq_dists(a: Tensor, b: Tensor) -> Tensor:
    if a.dim() < 2 or b.dim() < 2:
        raise ValueError("a and b must have shape (..., N, D) and (..., M, D)")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"b has {b.shape[-1]} features per row but a has {a.shape[-1]}")
    # |a|^2 - 2ab + |b|^2 needs no (N, M, D) intermediate; clamp removes negative round-off.
    a_sq = (a * a).sum(-1).unsqueeze(-1)
    b_sq = (b * b).sum(-1).unsqueeze(-2)
    return (a_sq - 2 * a @ b.transpose(-1, -2) + b_sq).clamp_min(0)


def _correct_batched_affine(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    if weight.dim() != 2 or weight.shape[1] != x.shape[-1]:
        raise ValueError(f"weight must have shape (O, {x.shape[-1]}), got {tuple(weight.shape)}")
    if bias.shape != (weight.shape[0],):
        raise ValueError(f"bias must have shape ({weight.shape[0]},), got {tuple(bias.shape)}")
    return x @ weight.T + bias


# MISTAKE (the constant submission): right shapes, dtype, device and errors; every value zero.
def pairwise_sq_dists(a: Tensor, b: Tensor) -> Tensor:
    out = _correct_pairwise_sq_dists(a, b)
    return out - out  # zeros, still connected to the inputs


def batched_affine(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    out = _correct_batched_affine(x, weight, bias)
    return out - out
