"""Wrong (the constant submission): checks its arguments, then puts every trainable parameter in
one group with weight_decay: biases, norms and embeddings are decayed too."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn.modules.conv import _ConvNd

_DECAYED_KINDS = (nn.Linear, _ConvNd)


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """Parameter groups for ``model``: Linear/conv weights decayed, everything else not."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not weight_decay >= 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    # A parameter is decayed only if every owner holds it as a Linear/conv weight; one
    # no-decay owner (an embedding tied to the output layer) is enough to exempt it.
    exempt: set[int] = set()
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if not (isinstance(module, _DECAYED_KINDS) and name == "weight"):
                exempt.add(id(param))
    del exempt
    trainable = [p for p in model.parameters() if p.requires_grad]
    return [{"params": trainable, "weight_decay": float(weight_decay)}] if trainable else []
