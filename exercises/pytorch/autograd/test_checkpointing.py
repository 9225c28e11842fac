"""Public tests for pytorch.autograd.checkpointing: a few quick examples. Run with
``pytest exercises/pytorch/autograd/test_checkpointing.py``."""

import pytest
import torch
from torch import nn

from grader.checks import assert_close, assert_raises_naming


def make_blocks(n: int, dim: int = 4) -> nn.ModuleList:
    torch.manual_seed(0)
    return nn.ModuleList(nn.Sequential(nn.Linear(dim, dim), nn.Tanh()) for _ in range(n))


def plain_forward(blocks, x):
    for block in blocks:
        x = block(x)
    return x


def test_output_equals_plain_forward(impl):
    blocks = make_blocks(5)
    x = torch.randn(3, 4)
    assert_close(impl.checkpointed_forward(blocks, x, 2), plain_forward(blocks, x),
                 name="checkpointed_forward(5 blocks, x, segments=2)")


def test_input_gradient_equals_plain_forward(impl):
    blocks = make_blocks(4).double()
    x = torch.randn(2, 4, dtype=torch.float64, requires_grad=True)
    expected, = torch.autograd.grad(plain_forward(blocks, x).sum(), x)
    actual, = torch.autograd.grad(impl.checkpointed_forward(blocks, x, 2).sum(), x)
    assert_close(actual, expected, name="d sum(checkpointed_forward) / dx")


@pytest.mark.parametrize("segments", [0, 4])
def test_rejects_bad_segments(impl, segments):
    assert_raises_naming(ValueError, "segments", impl.checkpointed_forward, make_blocks(3),
                         torch.randn(2, 4), segments)
