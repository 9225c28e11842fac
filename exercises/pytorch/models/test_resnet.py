"""Public tests for pytorch.models.resnet: a few quick examples. Run with
``pytest exercises/pytorch/models/test_resnet.py``."""

import torch
from torch import nn


def test_conv_output_size_like_conv2d(impl):
    conv = nn.Conv2d(1, 1, 3, stride=2, padding=1)
    assert impl.conv_output_size(32, 3, stride=2, padding=1) == conv(torch.empty(1, 1, 32, 32)).shape[-1]


def test_projection_only_when_shapes_change(impl):
    assert impl.BasicBlock(8, 8).shortcut is None
    assert impl.BasicBlock(8, 16, stride=2).shortcut is not None


def test_logits_shape(impl):
    model = impl.SmallResNet(10)
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 10)
