"""A custom Dataset: sliding windows over a time series.

The question
------------
How do you feed your own data to a PyTorch model? Subclass ``torch.utils.data.Dataset`` and
give it ``__len__`` (how many samples there are) and ``__getitem__`` (sample number ``index``);
a ``DataLoader`` then does the batching, the shuffling and the parallel loading in worker
processes. A classic example is forecasting: a series of ``T`` time steps with ``F`` features is
cut into overlapping windows, each an input ``x`` of ``window`` steps and the target ``y`` of the
``horizon`` steps that follow it.

Your task
---------
Write ``WindowDataset(series, window, horizon, stride=1)``.

Contract
--------
- ``WindowDataset`` is a subclass of ``torch.utils.data.Dataset``.
- ``series`` is a tensor of shape ``(T, F)``; a tensor with another number of dimensions raises
  ``ValueError`` naming ``series``.
- ``window``, ``horizon`` and ``stride`` are ints >= 1; a value below 1 raises ``ValueError``
  naming the argument.
- Sample ``i`` starts at step ``s = i * stride``: ``x = series[s : s + window]`` and
  ``y = series[s + window : s + window + horizon]``. Each is a tensor of shape ``(window, F)``,
  ``(horizon, F)``, with ``series``' dtype and device.
- ``len(dataset)`` is the number of samples that fit entirely in the series:
  ``max(0, (T - window - horizon) // stride + 1)``. A series too short for one sample gives an
  empty dataset, not an error.
- ``dataset[index]`` returns the tuple ``(x, y)``. ``index`` is an int (or any integer with
  ``__index__``, such as a NumPy integer); a negative index counts from the end, as for a list,
  and an index outside ``[-len(dataset), len(dataset))`` raises ``IndexError``. An index that is
  not an integer (a float such as ``1.0``) raises ``TypeError``.
- The series is never modified, and samples do not share memory with it: changing a returned
  ``x`` or ``y`` in place leaves ``series`` and every later sample unchanged.
- The dataset works with a ``DataLoader`` that shuffles and loads in worker processes
  (``num_workers=2``): one epoch yields every sample exactly once, batched as
  ``(B, window, F)`` and ``(B, horizon, F)``.

Hints
-----
- ``operator.index(index)`` turns any integer into an ``int`` and rejects anything else.
- Overlapping windows are views of the same memory; ``.clone()`` makes a sample its own.
- Where the windows start is a ``range``: ``range(0, T - window - horizon + 1, stride)``, whose
  ``len`` and negative indexing are already right.
"""

from __future__ import annotations

import operator

import torch
from torch.utils.data import Dataset


class WindowDataset(Dataset):
    """Sliding ``(x, y)`` windows over a ``(T, F)`` series: ``window`` input steps, then
    ``horizon`` target steps, one sample every ``stride`` steps."""

    def __init__(self, series: torch.Tensor, window: int, horizon: int, stride: int = 1) -> None:
        if not isinstance(series, torch.Tensor):
            raise TypeError(f"series must be a torch.Tensor of shape (T, F), got {type(series).__name__}")
        if series.dim() != 2:
            raise ValueError(f"series must have shape (T, F), got {tuple(series.shape)}")
        for name, value in (("window", window), ("horizon", horizon), ("stride", stride)):
            if operator.index(value) < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value}")
        self.series = series
        self.window = window
        self.horizon = horizon
        # range gives the length, negative indices and IndexError exactly as the contract says.
        self.starts = range(0, series.shape[0] - window - horizon + 1, stride)

    def __len__(self) -> int:
        """The number of windows that fit entirely in the series."""
        return len(self.starts)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Sample ``index`` as ``(x, y)``: ``(window, F)`` and ``(horizon, F)``."""
        start = self.starts[operator.index(index)]
        middle = start + self.window
        # Windows overlap: without a copy, changing one sample in place would change the series.
        return (self.series[start:middle].clone(), self.series[middle:middle + self.horizon].clone())
