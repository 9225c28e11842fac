"""Wrong: validates its arguments, then returns zeros of the right shapes, dtype and device (the
constant submission)."""


from __future__ import annotations

import torch
from torch import Tensor


def _check(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> None:
    if k.shape[-1] != q.shape[-1] or k.shape[:-2] != q.shape[:-2]:
        raise ValueError(f"k has shape {tuple(k.shape)}; expected (..., Lk, {q.shape[-1]}) with "
                         f"q's leading dims {tuple(q.shape[:-2])}")
    if v.shape[-2] != k.shape[-2] or v.shape[:-2] != k.shape[:-2]:
        raise ValueError(f"v has shape {tuple(v.shape)}; expected (..., {k.shape[-2]}, Dv)")
    if mask is None:
        return
    if mask.dtype != torch.bool and mask.dtype != q.dtype:
        raise TypeError(f"mask must be boolean or of q's dtype {q.dtype}, got {mask.dtype}")
    scores_shape = (*q.shape[:-1], k.shape[-2])
    try:
        broadcast = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        broadcast = None
    if broadcast != torch.Size(scores_shape):
        raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' "
                         f"shape {scores_shape}")


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, *, mask: Tensor | None = None,
                                 causal: bool = False) -> tuple[Tensor, Tensor]:
    """Attention of queries ``q`` over keys ``k`` and values ``v``; returns ``(out, weights)``."""
    _check(q, k, v, mask)
    weights = q.new_zeros((*q.shape[:-1], k.shape[-2]))
    return q.new_zeros((*q.shape[:-1], v.shape[-1])), weights
