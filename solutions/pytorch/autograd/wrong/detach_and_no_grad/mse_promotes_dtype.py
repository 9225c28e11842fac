"""Wrong: mse_to_fixed_target subtracts a target of another dtype as it is, so a float64 target
promotes a float32 pred's loss to float64 instead of returning pred's dtype."""

import torch
from torch import Tensor, nn


def straight_through_round(x: Tensor) -> Tensor:
    # Value: x + (round(x) - x) == round(x). Gradient: 1 through x, 0 through the detached term.
    # At +-inf and NaN, round(x) - x is NaN although round(x) is x itself: the step there is 0.
    return x + (torch.round(x) - x).detach().nan_to_num(nan=0.0)


def mse_to_fixed_target(pred: Tensor, target: Tensor) -> Tensor:
    if target.shape != pred.shape:
        raise ValueError(f"target must have the shape of pred {tuple(pred.shape)}, "
                         f"got {tuple(target.shape)}")
    return ((pred - target.detach()) ** 2).mean()


def predict(model: nn.Module, x: Tensor) -> Tensor:
    # Remember every module's own flag: model.train(was_training) would flatten mixed states.
    modes = [(module, module.training) for module in model.modules()]
    try:
        model.eval()
        with torch.inference_mode():
            return model(x)
    finally:
        for module, training in modes:
            module.training = training
