"""Public tests for pytorch.nn.custom_layer: a few quick examples. Run with
``pytest exercises/pytorch/nn/test_custom_layer.py``."""

import torch
from torch import nn

from grader.checks import assert_close


def test_starts_equal_to_base(impl):
    base = nn.Linear(6, 4)
    layer = impl.LoRALinear(base, rank=2, alpha=4.0)
    x = torch.randn(3, 6)
    assert_close(layer(x), base(x), name="LoRALinear(base, 2, 4.0)(x) at initialisation")


def test_only_lora_factors_are_trainable(impl):
    layer = impl.LoRALinear(nn.Linear(6, 4), rank=2, alpha=4.0)
    trainable = sum(p.numel() for p in layer.parameters() if p.requires_grad)
    assert trainable == 2 * (6 + 4), f"{trainable} trainable parameters, expected {2 * (6 + 4)}"


def test_merge_gives_same_output(impl):
    layer = impl.LoRALinear(nn.Linear(6, 4), rank=2, alpha=4.0)
    with torch.no_grad():
        layer.lora_B.normal_()
    x = torch.randn(3, 6)
    assert_close(layer.merge()(x), layer(x), rtol=1e-5, atol=1e-5, name="merge()(x) vs layer(x)")
