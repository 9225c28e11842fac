"""Wrong: exponentiates the raw scores without subtracting the row maximum: large scores overflow
to inf/inf = NaN (breaks the stability clause)."""


from __future__ import annotations

import math

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
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    allowed = None
    if mask is not None:
        if mask.dtype == torch.bool:
            allowed = mask
        else:
            scores = scores + mask
    if causal:
        lq, lk = scores.shape[-2:]
        tri = torch.ones(lq, lk, dtype=torch.bool, device=q.device).tril()
        allowed = tri if allowed is None else allowed & tri
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    # Shift by the row maximum (stability); a row of only -inf shifts by 0 so that every
    # exponential is exactly 0 and the row's weights become 0, with no NaN anywhere.
    row_max = scores.detach().amax(dim=-1, keepdim=True)
    row_max = torch.zeros_like(row_max)
    exp = torch.exp(scores - row_max)
    total = exp.sum(dim=-1, keepdim=True)
    weights = exp / torch.where(total > 0, total, torch.ones_like(total))
    return weights @ v, weights
