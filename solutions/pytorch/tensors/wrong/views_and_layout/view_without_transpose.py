"""Wrong: reshapes `(B, T, H*D)` straight to `(B, H, T, D)` without a transpose (and merges back
the same way): the shapes are right and the pair round-trips, but each "head" mixes features of
different time steps instead of taking features h*D:(h+1)*D of every position."""

from torch import Tensor


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    if x.dim() != 3:
        raise ValueError("x must be 3-D")
    b, t, e = x.shape
    if n_heads < 1 or e % n_heads:
        raise ValueError("n_heads must divide the feature size")
    return x.reshape(b, n_heads, t, e // n_heads)


def merge_heads(y: Tensor) -> Tensor:
    if y.dim() != 4:
        raise ValueError("y must be 4-D")
    b, h, t, d = y.shape
    return y.reshape(b, t, h * d)


def sliding_windows(x: Tensor, size: int, step: int) -> Tensor:
    if x.dim() < 1:
        raise ValueError("x must have at least one dimension")
    length = x.shape[-1]
    if not 1 <= size <= length:
        raise ValueError("size out of range")
    if step < 1:
        raise ValueError("step must be at least 1")
    return x.unfold(-1, size, step)
