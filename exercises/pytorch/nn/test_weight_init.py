"""Public tests for pytorch.nn.weight_init: a few quick examples. Run with
``pytest exercises/pytorch/nn/test_weight_init.py``."""

import math

import torch
from torch import nn


def test_fans_of_linear_and_conv(impl):
    assert impl.fan_in_and_fan_out(torch.empty(5, 3)) == (3, 5), "fans of a (5, 3) Linear weight"
    assert impl.fan_in_and_fan_out(torch.empty(8, 4, 3, 3)) == (36, 72), "fans of an (8, 4, 3, 3) conv weight"


def test_kaiming_std_and_zero_bias(impl):
    torch.manual_seed(0)
    layer = impl.init_weights(nn.Linear(400, 300), "kaiming")
    std = layer.weight.detach().std().item()
    assert abs(std / math.sqrt(2 / 400) - 1) < 0.05, f"weight std {std:.4f}, expected {math.sqrt(2 / 400):.4f}"
    assert bool((layer.bias == 0).all()), "bias must be zero after init_weights"
