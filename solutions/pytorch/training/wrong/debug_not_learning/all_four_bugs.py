"""Wrong: buggy_train unchanged, all four planted bugs left (the untouched loop scores nothing)."""

from __future__ import annotations

import torch
from torch import nn


def fixed_train(model: nn.Module, optimizer: torch.optim.Optimizer, X: torch.Tensor, y: torch.Tensor, *,
                epochs: int, batch_size: int, seed: int = 0) -> list[float]:
    """Train ``model`` on ``(X, y)``; return the loss on all of it after each epoch."""
    if epochs < 1:
        raise ValueError(f"epochs must be an int >= 1, got {epochs}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size}")
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} rows but y has {len(y)} labels")
    loss_fn = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(seed)
    history = []
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(X), generator=generator).to(X.device)
        for start in range(0, len(X), batch_size):
            rows = order[start:start + batch_size]
            probs = torch.softmax(model(X[rows]), dim=1)
            loss = loss_fn(probs, y[rows].float())
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            history.append(loss_fn(model(X), y.long()).item())
    return history
