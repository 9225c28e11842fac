"""Wrong: returns slices of the series: overlapping windows share its memory, so an in-place
change to one sample (an augmentation, a normalisation) changes the series and other samples."""

from __future__ import annotations

import operator

import torch
from torch.utils.data import Dataset


class WindowDataset(Dataset):
    """Sliding ``(x, y)`` windows over a ``(T, F)`` series: ``window`` input steps, then
    ``horizon`` target steps, one sample every ``stride`` steps."""

    def __init__(self, series: torch.Tensor, window: int, horizon: int, stride: int = 1) -> None:
        if series.dim() != 2:
            raise ValueError(f"series must have shape (T, F), got {tuple(series.shape)}")
        for name, value in (("window", window), ("horizon", horizon), ("stride", stride)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        self.series, self.window, self.horizon, self.stride = series, window, horizon, stride

    def __len__(self) -> int:
        """The number of windows that fit entirely in the series."""
        return max(0, (self.series.shape[0] - self.window - self.horizon) // self.stride + 1)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Sample ``index`` as ``(x, y)``: ``(window, F)`` and ``(horizon, F)``."""
        index = operator.index(index)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"sample index out of range for a dataset of {len(self)}")
        start = index * self.stride
        x = self.series[start:start + self.window]
        y = self.series[start + self.window:start + self.window + self.horizon]
        return x, y
