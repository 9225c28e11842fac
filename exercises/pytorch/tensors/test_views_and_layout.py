"""Public tests for pytorch.tensors.views_and_layout: a few quick examples. Run with
``pytest exercises/pytorch/tensors/test_views_and_layout.py``."""

import torch

from grader.checks import assert_close


def test_split_heads_small_example(impl):
    x = torch.arange(8.0).reshape(1, 2, 4)  # B=1, T=2, E=4 -> 2 heads of size 2
    expected = torch.tensor([[[[0.0, 1.0], [4.0, 5.0]],
                              [[2.0, 3.0], [6.0, 7.0]]]])
    assert_close(impl.split_heads(x, 2), expected, name="split_heads(x(1, 2, 4), 2)")


def test_merge_heads_inverts_split_heads(impl):
    x = torch.randn(2, 5, 12)
    assert_close(impl.merge_heads(impl.split_heads(x, 3)), x, name="merge_heads(split_heads(x, 3))")


def test_sliding_windows_small_example(impl):
    x = torch.arange(7.0)
    expected = torch.tensor([[0.0, 1.0, 2.0], [2.0, 3.0, 4.0], [4.0, 5.0, 6.0]])
    assert_close(impl.sliding_windows(x, 3, 2), expected, name="sliding_windows(arange(7), 3, 2)")
