"""Public tests for pytorch.optim.grad_clipping: a few quick examples. Run with
``pytest exercises/pytorch/optim/test_grad_clipping.py``."""

import torch

from grader.checks import assert_close


def with_grad(grad: list[float]) -> torch.Tensor:
    p = torch.zeros(len(grad), dtype=torch.float64)
    p.grad = torch.tensor(grad, dtype=torch.float64)
    return p


def test_large_gradients_are_scaled_to_max_norm(impl):
    a, b = with_grad([3.0, 0.0]), with_grad([0.0, 4.0])  # global L2 norm 5
    norm = impl.clip_grad_norm([a, b], max_norm=1.0)
    assert_close(norm, torch.tensor(5.0, dtype=torch.float64), name="returned norm (before clipping)")
    coef = 1.0 / (5.0 + 1e-6)
    assert_close(a.grad, torch.tensor([3.0 * coef, 0.0], dtype=torch.float64), name="a.grad")
    assert_close(b.grad, torch.tensor([0.0, 4.0 * coef], dtype=torch.float64), name="b.grad")


def test_small_gradients_are_left_alone(impl):
    a = with_grad([0.3, -0.4])
    norm = impl.clip_grad_norm(a, max_norm=10.0)
    assert_close(norm, torch.tensor(0.5, dtype=torch.float64), name="returned norm")
    assert_close(a.grad, torch.tensor([0.3, -0.4], dtype=torch.float64),
                 name="a.grad (norm 0.5 <= max_norm 10: never scaled up)")


def test_inf_norm_is_the_largest_absolute_value(impl):
    a, b = with_grad([1.0, -7.0]), with_grad([2.0])
    norm = impl.clip_grad_norm([a, b], max_norm=100.0, norm_type=float("inf"))
    assert_close(norm, torch.tensor(7.0, dtype=torch.float64), name="inf-norm")
