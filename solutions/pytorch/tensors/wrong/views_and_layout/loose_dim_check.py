"""Wrong: split_heads rejects only tensors with fewer than 3 dims, so a 4-D x reaches
`b, t, e = x.shape` and fails with Python's "too many values to unpack" instead of a ValueError
naming x. Breaks "an x that is not 3-D raises ValueError naming x"."""

from torch import Tensor


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    if x.dim() < 3:  # MISTAKE: 4-D and higher slip through
        raise ValueError(f"x must have shape (B, T, E), got {tuple(x.shape)}")
    b, t, e = x.shape
    if n_heads < 1 or e % n_heads:
        raise ValueError(f"n_heads={n_heads} must be positive and divide the feature size {e}")
    # Splitting only the last dim is always expressible as a view; the transpose is free too.
    return x.view(b, t, n_heads, e // n_heads).transpose(1, 2)


def merge_heads(y: Tensor) -> Tensor:
    if y.dim() != 4:
        raise ValueError(f"y must have shape (B, H, T, D), got {tuple(y.shape)}")
    b, h, t, d = y.shape
    # After the transpose, H and D are generally not adjacent in memory: reshape copies then.
    return y.transpose(1, 2).reshape(b, t, h * d)


def sliding_windows(x: Tensor, size: int, step: int) -> Tensor:
    if x.dim() < 1:
        raise ValueError("x must have at least one dimension")
    length = x.shape[-1]
    if not 1 <= size <= length:
        raise ValueError(f"size must be in 1..{length}, got {size}")
    if step < 1:
        raise ValueError(f"step must be at least 1, got {step}")
    # unfold is a strided view: no copy, works for any input strides.
    return x.unfold(-1, size, step)
