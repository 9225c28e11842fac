"""Wrong: validates gamma with gamma < 0, which is False for NaN, so gamma=nan is accepted (every
loss NaN). Breaks: a negative or NaN gamma raises ValueError naming gamma."""

import torch
import torch.nn.functional as F
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
    if alpha is not None and not 0.0 <= alpha <= 1.0:  # NaN fails both comparisons
        raise ValueError(f"alpha must be None or in [0, 1], got {alpha}")
    # With z = x for positives and -x for negatives, p_t = sigmoid(z) and 1 - p_t = sigmoid(-z):
    # logsigmoid keeps both logs finite however large |x| is.
    positive = target > 0.5
    z = torch.where(positive, logits, -logits)
    log_p_t = F.logsigmoid(z)
    modulating = torch.exp(gamma * F.logsigmoid(-z))  # (1 - p_t) ** gamma, no 0 ** gamma issues
    loss = -modulating * log_p_t
    if alpha is not None:
        loss = torch.where(positive, alpha * loss, (1 - alpha) * loss)
    return _reduce(loss, reduction)


def huber(pred: Tensor, target: Tensor, delta: float = 1.0, reduction: str = "mean") -> Tensor:
    _check_common(pred, target, reduction)
    if not delta > 0:
        raise ValueError(f"delta must be > 0, got {delta}")
    # target may have another floating dtype: the loss keeps pred's dtype.
    diff = (pred - target.to(pred.dtype)).abs()
    # Quadratic inside |d| <= delta; outside, the tangent line at delta: value and slope match.
    loss = torch.where(diff <= delta, 0.5 * diff**2, delta * (diff - 0.5 * delta))
    return _reduce(loss, reduction)
