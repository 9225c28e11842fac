"""Public tests for pytorch.autograd.custom_function: a few quick examples. Run with
``pytest exercises/pytorch/autograd/test_custom_function.py``."""

import torch
import torch.nn.functional as F

from grader.checks import assert_close, check_gradients


def test_silu_small_example(impl):
    x = torch.tensor([-2.0, -0.5, 0.0, 0.5, 2.0], requires_grad=True)
    out = impl.silu(x)
    assert_close(out, F.silu(x), name="silu(x)")
    out.sum().backward()
    expected = torch.autograd.grad(F.silu(x).sum(), x)[0]
    assert_close(x.grad, expected, name="gradient of silu(x).sum()")


def test_logsumexp_small_example(impl):
    x = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    assert_close(impl.logsumexp(x, 1), torch.logsumexp(x, 1), name="logsumexp(x, dim=1)")
    assert_close(impl.logsumexp(x, 0, keepdim=True), torch.logsumexp(x, 0, keepdim=True),
                 name="logsumexp(x, dim=0, keepdim=True)")


def test_logsumexp_large_values_do_not_overflow(impl):
    x = torch.tensor([1000.0, 1000.0])
    out = impl.logsumexp(x, 0)
    assert torch.isfinite(out), f"logsumexp([1000, 1000]) gave {out.item()}: exp(1000) overflows"
    assert_close(out, torch.tensor(1000.0 + 0.6931471805599453), name="logsumexp([1000, 1000])")


def test_gradients_match_finite_differences(impl):
    x = torch.randn(2, 3, dtype=torch.float64)
    check_gradients(impl.silu, x, name="silu", second_order=True, reference=F.silu)
    check_gradients(lambda t: impl.logsumexp(t, -1), x, name="logsumexp(x, -1)",
                    reference=lambda t: torch.logsumexp(t, -1))
