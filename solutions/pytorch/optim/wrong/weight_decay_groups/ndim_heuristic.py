"""Wrong: the shortcut 'decay every parameter with 2 or more dimensions': it does exclude
biases and norm parameters, but decays embeddings and other bare weight tables too."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not weight_decay >= 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    return [{"params": decay, "weight_decay": float(weight_decay)},
            {"params": no_decay, "weight_decay": 0.0}]
