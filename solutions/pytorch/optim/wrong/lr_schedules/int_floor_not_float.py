"""Wrong: returns base_lr * min_lr_ratio unconverted once step >= total_steps, an int when both
are ints. Breaks 'lr_at returns a float even when every argument is an int'."""

from __future__ import annotations

import functools
import math

import torch
from torch.optim.lr_scheduler import LambdaLR


def _check_schedule(warmup_steps: int, total_steps: int, min_lr_ratio: float) -> None:
    if warmup_steps < 0:
        raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}")
    if total_steps <= warmup_steps:
        raise ValueError(f"total_steps ({total_steps}) must be greater than warmup_steps "
                         f"({warmup_steps})")
    if not 0.0 <= min_lr_ratio <= 1.0:
        raise ValueError(f"min_lr_ratio must be in [0, 1], got {min_lr_ratio}")


def lr_at(step: int, *, base_lr: float, warmup_steps: int, total_steps: int,
          min_lr_ratio: float = 0.0) -> float:
    """Learning rate for the optimizer step that follows ``step`` completed steps."""
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    if not base_lr >= 0:
        raise ValueError(f"base_lr must be >= 0, got {base_lr}")
    _check_schedule(warmup_steps, total_steps, min_lr_ratio)
    if step < warmup_steps:
        return float(base_lr * step / warmup_steps)
    if step >= total_steps:
        return base_lr * min_lr_ratio
    # Past total_steps the progress is clamped at 1: the cosine must not come back up.
    progress = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))
    cosine = 0.5 * (1.0 + math.cos(math.pi * progress))
    return float(base_lr * (min_lr_ratio + (1.0 - min_lr_ratio) * cosine))


def warmup_cosine(optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int,
                  min_lr_ratio: float = 0.0) -> LambdaLR:
    """A ``LambdaLR`` giving every group of ``optimizer`` the schedule of ``lr_at``."""
    _check_schedule(warmup_steps, total_steps, min_lr_ratio)
    # base_lr=1.0 makes lr_at a multiplier; LambdaLR scales it by each group's own initial lr.
    # The factor depends only on the step LambdaLR passes in, so a restored scheduler continues.
    factor = functools.partial(lr_at, base_lr=1.0, warmup_steps=warmup_steps,
                               total_steps=total_steps, min_lr_ratio=min_lr_ratio)
    return LambdaLR(optimizer, factor)
