"""Wrong: predict() remembers only model.training and restores with model.train(was_training),
which flattens mixed states (a frozen BatchNorm kept in eval ends up in train mode)."""

import torch
from torch import Tensor, nn


def straight_through_round(x: Tensor) -> Tensor:
    # Value: x + (round(x) - x) == round(x). Gradient: 1 through x, 0 through the detached term.
    return x + (torch.round(x) - x).detach()


def mse_to_fixed_target(pred: Tensor, target: Tensor) -> Tensor:
    if target.shape != pred.shape:
        raise ValueError(f"target must have the shape of pred {tuple(pred.shape)}, "
                         f"got {tuple(target.shape)}")
    # detach() cuts target out of the graph without touching the caller's tensor or its flags.
    return ((pred - target.detach()) ** 2).mean()


def predict(model: nn.Module, x: Tensor) -> Tensor:
    was_training = model.training
    try:
        model.eval()
        with torch.inference_mode():
            return model(x)
    finally:
        model.train(was_training)
