"""Wrong: a constant submission -- right shapes, dtypes, devices, flags and errors, but every value
is zero (and so is every gradient)."""

import torch
from torch import Tensor, nn


def straight_through_round(x: Tensor) -> Tensor:
    return x * 0


def mse_to_fixed_target(pred: Tensor, target: Tensor) -> Tensor:
    if target.shape != pred.shape:
        raise ValueError(f"target must have the shape of pred {tuple(pred.shape)}")
    return (pred * 0).sum()


def predict(model: nn.Module, x: Tensor) -> Tensor:
    modes = [(module, module.training) for module in model.modules()]
    try:
        model.eval()
        with torch.inference_mode():
            return torch.zeros_like(model(x))
    finally:
        for module, training in modes:
            module.training = training
