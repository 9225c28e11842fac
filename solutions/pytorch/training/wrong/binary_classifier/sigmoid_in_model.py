"""Wrong: puts a Sigmoid inside the model and trains it with BCELoss: the same loss, but the
returned model outputs probabilities, not logits, and is not a single nn.Linear."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def _check_arguments(X: torch.Tensor, y: torch.Tensor, epochs: int, lr: float, batch_size: int) -> None:
    if X.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"X must be a float32 or float64 tensor, got {X.dtype}")
    if X.dim() != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must have shape (N, D) with N >= 1 and D >= 1, got {tuple(X.shape)}")
    if not torch.isfinite(X).all():
        raise ValueError("X holds NaN or inf")
    if tuple(y.shape) != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) to match X, got {tuple(y.shape)}")
    if not ((y == 0) | (y == 1)).all():
        raise ValueError("y must hold only 0s and 1s")
    if epochs < 0:
        raise ValueError(f"epochs must be >= 0, got {epochs}")
    if not (math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a finite number > 0, got {lr}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")


def fit_binary_classifier(X: torch.Tensor, y: torch.Tensor, *, epochs: int, lr: float, batch_size: int,
                          seed: int) -> nn.Module:
    """Train a logistic-regression ``nn.Linear(D, 1)`` on ``(X, y)`` with shuffled mini-batch SGD."""
    _check_arguments(X, y, epochs, lr, batch_size)
    n, d = X.shape
    # fork_rng: seed the layer's initialisation without touching the caller's global RNG.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(d, 1, dtype=X.dtype), nn.Sigmoid())
    model.to(X.device)
    targets = y.to(X.dtype).unsqueeze(1)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    shuffle = torch.Generator().manual_seed(seed)
    # A caller's autocast region would run the loop in low precision and serve every step its
    # cached low-precision copy of the initial weights: train in X's dtype.
    with torch.autocast(X.device.type, enabled=False):
        for _ in range(epochs):
            order = torch.randperm(n, generator=shuffle).to(X.device)
            for batch in order.split(batch_size):
                optimizer.zero_grad()
                loss = F.binary_cross_entropy(model(X[batch]), targets[batch])
                loss.backward()
                optimizer.step()
    return model.eval()
