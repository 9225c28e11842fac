"""Wrong: shuffles with the global RNG (torch.randperm without the seeded generator), so the
order does not come from seed."""

from __future__ import annotations

import torch
from torch import nn


def fixed_train(model: nn.Module, optimizer: torch.optim.Optimizer, X: torch.Tensor, y: torch.Tensor, *,
                epochs: int, batch_size: int, seed: int = 0) -> list[float]:
    """``buggy_train`` with its four bugs fixed (see the contract above)."""
    if epochs < 1:
        raise ValueError(f"epochs must be an int >= 1, got {epochs}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size}")
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} rows but y has {len(y)} labels")
    labels = y.long()  # CrossEntropyLoss wants int64 class indices, not floats or int32
    loss_fn = nn.CrossEntropyLoss()
    history = []
    for _ in range(epochs):
        model.train()  # the evaluation at the end of the previous epoch left eval mode on
        order = torch.randperm(len(X)).to(X.device)
        for start in range(0, len(X), batch_size):
            rows = order[start:start + batch_size]
            optimizer.zero_grad()
            loss = loss_fn(model(X[rows]), labels[rows])  # logits: the loss applies log_softmax
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            history.append(loss_fn(model(X), labels).item())
    return history
