"""Wrong: always saves the whole model, whatever the path's suffix."""

from __future__ import annotations

import math
import os

import keras


class WarmupScheduler(keras.callbacks.Callback):
    """Sets the learning rate before every training batch: a linear warmup to ``peak_lr``."""

    def __init__(self, peak_lr: float, warmup_steps: int) -> None:
        super().__init__()
        if (not isinstance(peak_lr, (int, float)) or isinstance(peak_lr, bool)
                or not math.isfinite(peak_lr) or peak_lr <= 0):
            raise ValueError(f"peak_lr must be a positive finite number, got {peak_lr!r}")
        _check_positive_int(warmup_steps, "warmup_steps")
        self.peak_lr = float(peak_lr)
        self.warmup_steps = warmup_steps

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Set ``model.optimizer``'s learning rate for the batch about to run."""
        # The optimizer's update count, not `batch` (which restarts every epoch): the warmup then
        # carries on across epochs, fit calls and a scheduler made afresh when training resumes.
        step = int(self.model.optimizer.iterations)
        self.model.optimizer.learning_rate = self.peak_lr * min(1.0, (step + 1) / self.warmup_steps)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        """Record the learning rate in use in the epoch's logs as ``"learning_rate"``."""
        if logs is not None:  # the dict History reads after the callbacks
            logs["learning_rate"] = float(self.model.optimizer.learning_rate)


def training_callbacks(checkpoint_path: str | os.PathLike, patience: int) -> list[keras.callbacks.Callback]:
    """Early stopping on ``val_loss`` with the best weights restored, and a best-only checkpoint."""
    path = os.fspath(checkpoint_path)
    if not path.endswith((".keras", ".weights.h5")):
        raise ValueError(f"checkpoint_path must end in .keras (whole model) or .weights.h5 (weights "
                         f"only), got {path!r}")
    _check_positive_int(patience, "patience")
    return [
        # mode="min" spelled out: "auto" guesses from the metric's name.
        keras.callbacks.EarlyStopping(monitor="val_loss", mode="min", patience=patience,
                                      restore_best_weights=True),
        keras.callbacks.ModelCheckpoint(path, monitor="val_loss", mode="min", save_best_only=True,
                                        save_weights_only=False),
    ]


def _check_positive_int(value, name: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
