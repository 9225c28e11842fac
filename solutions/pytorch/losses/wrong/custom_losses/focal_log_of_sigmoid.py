"""Wrong: log(sigmoid(x)) from probabilities: at |logit| = 100 in float32 p_t rounds to 0 and the loss is inf."""

import torch
from torch import Tensor

REDUCTIONS = ("none", "mean", "sum")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _check_common(first: Tensor, target: Tensor, reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if target.shape != first.shape:
        raise ValueError(f"target must have the same shape as the input {tuple(first.shape)}, "
                         f"got {tuple(target.shape)}")


def focal_loss(logits: Tensor, target: Tensor, *, gamma: float = 2.0, alpha: float | None = None,
               reduction: str = "mean") -> Tensor:
    _check_common(logits, target, reduction)
    if gamma < 0:
        raise ValueError(f"gamma must be >= 0, got {gamma}")
    if alpha is not None and not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be None or in [0, 1], got {alpha}")
    positive = target > 0.5
    p = torch.sigmoid(logits)
    p_t = torch.where(positive, p, 1 - p)
    loss = -(1 - p_t) ** gamma * torch.log(p_t)
    if alpha is not None:
        loss = torch.where(positive, alpha * loss, (1 - alpha) * loss)
    return _reduce(loss, reduction)


def huber(pred: Tensor, target: Tensor, delta: float = 1.0, reduction: str = "mean") -> Tensor:
    _check_common(pred, target, reduction)
    if not delta > 0:
        raise ValueError(f"delta must be > 0, got {delta}")
    diff = (pred - target).abs()
    # Quadratic inside |d| <= delta; outside, the tangent line at delta: value and slope match.
    loss = torch.where(diff <= delta, 0.5 * diff**2, delta * (diff - 0.5 * delta))
    return _reduce(loss, reduction)
