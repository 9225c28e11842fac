"""Wrong: rejects only floating-point targets, so a bool target reaches gather and fails there
with a RuntimeError instead of the TypeError naming target. Breaks: TypeError for a non-integer
target (float or bool)."""

import torch
from torch import Tensor

REDUCTIONS = ("none", "mean", "sum")


def _check_arguments(logits: Tensor, target: Tensor, weight: Tensor | None,
                     label_smoothing: float, reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing}")
    if not logits.is_floating_point():
        raise TypeError(f"logits must be a floating-point tensor, got {logits.dtype}")
    if logits.dim() == 0:
        raise ValueError("logits must have shape (C,), (N, C) or (N, C, d1, ...), got a scalar")
    if target.is_floating_point():
        raise TypeError(f"target must hold integer class indices, got {target.dtype} "
                        "(class-probability targets are not part of this exercise)")
    class_dim = 0 if logits.dim() == 1 else 1
    expected = logits.shape[:class_dim] + logits.shape[class_dim + 1:]
    if target.shape != expected:
        raise ValueError(f"target must have shape {tuple(expected)} for logits of shape "
                         f"{tuple(logits.shape)}, got {tuple(target.shape)}")
    num_classes = logits.shape[class_dim]
    if weight is not None and weight.shape != (num_classes,):
        raise ValueError(f"weight must have shape ({num_classes},), got {tuple(weight.shape)}")


def cross_entropy(logits: Tensor, target: Tensor, *, weight: Tensor | None = None,
                  ignore_index: int = -100, label_smoothing: float = 0.0,
                  reduction: str = "mean") -> Tensor:
    _check_arguments(logits, target, weight, label_smoothing, reduction)
    if logits.dim() == 1:  # unbatched: (C,) with a scalar target is a batch of one
        out = cross_entropy(logits.unsqueeze(0), target.unsqueeze(0), weight=weight,
                            ignore_index=ignore_index, label_smoothing=label_smoothing,
                            reduction=reduction)
        return out.squeeze(0) if reduction == "none" else out

    # Low-precision logits (autocast) are upcast: log-sum-exp in bfloat16 loses ~2 digits.
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()
    # Classes last, so every position is a row: (N, d1, ..., C).
    logits = logits.movedim(1, -1)
    num_classes = logits.shape[-1]
    # Stable log-softmax: logsumexp subtracts the row max before exponentiating.
    log_probs = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
    w = (torch.ones(num_classes, dtype=logits.dtype, device=logits.device) if weight is None
         else weight.to(logits.dtype))

    keep = target != ignore_index
    # Ignored positions may hold any value (-100 by default): point them at class 0, mask later.
    safe_target = torch.where(keep, target, torch.zeros_like(target)).unsqueeze(-1)
    target_log_prob = log_probs.gather(-1, safe_target).squeeze(-1)
    target_weight = w[safe_target.squeeze(-1)] * keep

    nll = -target_weight * target_log_prob
    # Smoothing mixes in the uniform distribution over all C classes (target class included).
    smooth = -(log_probs * w).sum(-1) * keep
    loss = (1 - label_smoothing) * nll + (label_smoothing / num_classes) * smooth

    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    # Weighted mean: divide by the total weight of the counted targets (0/0 = nan if none).
    return loss.sum() / target_weight.sum()
