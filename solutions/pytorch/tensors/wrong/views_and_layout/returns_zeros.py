"""Wrong (the constant submission): validates like the reference and returns zeros of the right
shape, dtype and device (connected to the graph). Earns only the points of the error and
meta-device checks."""

from torch import Tensor


def _correct_split_heads(x: Tensor, n_heads: int) -> Tensor:
    if x.dim() != 3:
        raise ValueError(f"x must have shape (B, T, E), got {tuple(x.shape)}")
    b, t, e = x.shape
    if n_heads < 1 or e % n_heads:
        raise ValueError(f"n_heads={n_heads} must be positive and divide the feature size {e}")
    # Splitting only the last dim is always expressible as a view; the transpose is free too.
    return x.view(b, t, n_heads, e // n_heads).transpose(1, 2)


def _correct_merge_heads(y: Tensor) -> Tensor:
    if y.dim() != 4:
        raise ValueError(f"y must have shape (B, H, T, D), got {tuple(y.shape)}")
    b, h, t, d = y.shape
    # After the transpose, H and D are generally not adjacent in memory: reshape copies then.
    return y.transpose(1, 2).reshape(b, t, h * d)


def _correct_sliding_windows(x: Tensor, size: int, step: int) -> Tensor:
    if x.dim() < 1:
        raise ValueError("x must have at least one dimension")
    length = x.shape[-1]
    if not 1 <= size <= length:
        raise ValueError(f"size must be in 1..{length}, got {size}")
    if step < 1:
        raise ValueError(f"step must be at least 1, got {step}")
    # unfold is a strided view: no copy, works for any input strides.
    return x.unfold(-1, size, step)


# MISTAKE (the constant submission): validates like the reference; zeros of the right shape.
def split_heads(x: Tensor, n_heads: int) -> Tensor:
    out = _correct_split_heads(x, n_heads)
    return out - out


def merge_heads(y: Tensor) -> Tensor:
    out = _correct_merge_heads(y)
    return out - out


def sliding_windows(x: Tensor, size: int, step: int) -> Tensor:
    out = _correct_sliding_windows(x, size, step)
    return out - out
