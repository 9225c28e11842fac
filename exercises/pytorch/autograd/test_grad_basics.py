"""Public tests for pytorch.autograd.grad_basics: a few quick examples. Run with
``pytest exercises/pytorch/autograd/test_grad_basics.py``."""

import torch

from grader.checks import assert_close


def test_gradient_of_sum_of_squares(impl):
    x = torch.tensor([1.0, -2.0, 3.0])
    g = impl.gradient(lambda z: (z ** 2).sum(), x)
    assert_close(g, 2 * x, name="gradient(sum(x**2), x)")
    assert x.grad is None and not x.requires_grad, (
        "gradient must leave x.grad and x.requires_grad alone")


def test_jacobian_of_elementwise_square(impl):
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    j = impl.jacobian(lambda z: z ** 2, x)
    assert j.shape == (2, 2, 2, 2), (
        f"jacobian shape {tuple(j.shape)}, expected (*out, *in) = (2, 2, 2, 2)")
    assert_close(j.reshape(4, 4), torch.diag(2 * x.reshape(-1)),
                 name="jacobian(x**2) as a 4x4 matrix")


def test_accumulate_three_times(impl):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    g = impl.accumulate(lambda z: (3 * z).sum(), x, 3)
    assert_close(g, torch.tensor([9.0, 9.0]), name="accumulate(sum(3x), x, times=3)")
