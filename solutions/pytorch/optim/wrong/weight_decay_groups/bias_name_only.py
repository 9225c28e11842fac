"""Wrong: exempts only parameters whose name ends in 'bias', so the scales of normalisation
layers, embeddings and bare parameters are all decayed."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not weight_decay >= 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if name.endswith("bias") else decay).append(p)
    return [{"params": decay, "weight_decay": float(weight_decay)},
            {"params": no_decay, "weight_decay": 0.0}]
