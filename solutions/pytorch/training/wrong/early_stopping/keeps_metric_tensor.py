"""Wrong: keeps the metric as given, so a loss tensor (and its whole autograd graph) stays alive
as best."""

from __future__ import annotations

import math
import numbers

import torch


class EarlyStopping:
    """Stop training when a metric stops improving, and keep the best model state."""

    def __init__(self, patience: int, min_delta: float = 0.0, mode: str = "min", restore_best: bool = True):
        if not (isinstance(patience, int) and patience >= 1):
            raise ValueError(f"patience must be an int >= 1, got {patience!r}")
        if not (isinstance(min_delta, numbers.Real) and math.isfinite(min_delta) and min_delta >= 0):
            raise ValueError(f"min_delta must be a finite number >= 0, got {min_delta!r}")
        if mode not in ("min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
        self.patience = patience
        self.min_delta = float(min_delta)
        self.mode = mode
        self.restore_best = restore_best
        self.best = math.inf if mode == "min" else -math.inf
        self.bad_steps = 0
        self._best_state: dict[str, torch.Tensor] | None = None

    def _improves(self, value: float) -> bool:
        # NaN compares False both ways, so a NaN metric never improves.
        if self.mode == "min":
            return value < self.best - self.min_delta
        return value > self.best + self.min_delta

    def step(self, metric: float | torch.Tensor, model: torch.nn.Module) -> bool:
        """Record one epoch's ``metric``; return ``True`` when training should stop."""
        if isinstance(metric, torch.Tensor):
            if metric.numel() != 1:
                raise TypeError(f"metric must be a number or a one-element tensor, got shape {tuple(metric.shape)}")
            value = metric
        elif isinstance(metric, numbers.Real):
            value = float(metric)
        else:
            raise TypeError(f"metric must be a number or a one-element tensor, got {type(metric).__name__}")
        if self._improves(value):
            self.best = value
            self.bad_steps = 0
            if self.restore_best:
                # Clones: state_dict() holds the live tensors that later steps overwrite in place.
                self._best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            self.bad_steps += 1
        return self.bad_steps >= self.patience

    def restore(self, model: torch.nn.Module) -> None:
        """Load the best state seen into ``model``."""
        if not self.restore_best:
            raise RuntimeError("restore_best=False: no best state was kept to restore")
        if self._best_state is None:
            raise RuntimeError("nothing to restore: no step has improved yet")
        model.load_state_dict(self._best_state)
