"""Public tests for pytorch.nn.mlp: a few quick examples. Run with
``pytest exercises/pytorch/nn/test_mlp.py``."""

import torch

from grader.checks import assert_close, assert_shape


def test_output_shape_with_leading_dims(impl):
    model = impl.MLP(4, [8, 6], 3)
    assert_shape(model(torch.randn(2, 5, 4)), (2, 5, 3), name="MLP(4, [8, 6], 3)(x(2, 5, 4))")


def test_parameter_count(impl):
    model = impl.MLP(4, [8, 6], 3)
    count = sum(p.numel() for p in model.parameters())
    expected = (4 * 8 + 8) + (8 * 6 + 6) + (6 * 3 + 3)
    assert count == expected, f"MLP(4, [8, 6], 3) has {count} parameters, expected {expected}"


def test_eval_mode_is_deterministic(impl):
    model = impl.MLP(4, [32], 2, dropout=0.5).eval()
    x = torch.randn(10, 4)
    assert_close(model(x), model(x), name="two eval-mode forwards of the same input")
