"""Wrong: classifies parameters per owning module without de-duplicating, so a weight shared
by an Embedding and an output Linear lands in both groups (the optimizer then refuses it)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn.modules.conv import _ConvNd


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not weight_decay >= 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    decay, no_decay = [], []
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad:
                continue
            if isinstance(module, (nn.Linear, _ConvNd)) and name == "weight":
                decay.append(p)
            else:
                no_decay.append(p)
    return [{"params": decay, "weight_decay": float(weight_decay)},
            {"params": no_decay, "weight_decay": 0.0}]
