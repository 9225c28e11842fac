"""Public tests for pytorch.tensors.broadcasting: a few quick examples. Run with
``pytest exercises/pytorch/tensors/test_broadcasting.py``."""

import torch

from grader.checks import assert_close


def test_pairwise_small_example(impl):
    a = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    b = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    expected = torch.tensor([[1.0, 4.0, 2.0], [1.0, 2.0, 0.0]])
    assert_close(impl.pairwise_sq_dists(a, b), expected, name="pairwise_sq_dists(a, b)")


def test_pairwise_broadcasts_batch_dims(impl):
    a, b = torch.randn(3, 1, 4, 5), torch.randn(2, 6, 5)
    assert impl.pairwise_sq_dists(a, b).shape == (3, 2, 4, 6)


def test_batched_affine_matches_linear(impl):
    layer = torch.nn.Linear(4, 3)
    x = torch.randn(2, 5, 4)
    assert_close(impl.batched_affine(x, layer.weight, layer.bias), layer(x),
                 name="batched_affine(x, weight, bias)")
