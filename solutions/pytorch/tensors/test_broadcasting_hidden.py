"""Hidden tests for pytorch.tensors.broadcasting (the catalog's contract checks)."""

import re

import pytest
import torch
from hypothesis import given, strategies as st

from grader.checks import (assert_close, assert_device, assert_raises_naming, assert_shape,
                           broadcastable_batch_shapes, check_gradients, count_aten_ops,
                           device_params)


# Each error case isolates one rule, so there are many of them; together they must not outweigh
# the value tests (a submission returning constants passes every one).
ERROR_CASE_POINTS = 0.5


def brute_force_sq_dists(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Independent reference: explicit (..., N, M, D) differences."""
    return ((a.unsqueeze(-2) - b.unsqueeze(-3)) ** 2).sum(-1)


sizes = st.integers(1, 5)


@pytest.mark.points(2)
@given(batch=broadcastable_batch_shapes(2), n=sizes, m=sizes, d=sizes, seed=st.integers(0, 2**16))
def test_pairwise_matches_brute_force_over_broadcast_shapes(impl, batch, n, m, d, seed):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(*batch[0], n, d, generator=gen, dtype=torch.float64)
    b = torch.randn(*batch[1], m, d, generator=gen, dtype=torch.float64)
    out = impl.pairwise_sq_dists(a, b)
    expected = brute_force_sq_dists(a, b)
    name = f"pairwise_sq_dists(a{tuple(a.shape)}, b{tuple(b.shape)})"
    assert_shape(out, tuple(expected.shape), name=name)
    assert_close(out, expected, rtol=1e-9, atol=1e-9, name=name)


def test_pairwise_float32_keeps_dtype(impl):
    a, b = torch.randn(4, 3), torch.randn(5, 3)
    assert_close(impl.pairwise_sq_dists(a, b), brute_force_sq_dists(a, b), rtol=1e-4, atol=1e-4,
                 name="pairwise_sq_dists on float32 inputs")


def test_pairwise_never_negative(impl):
    # Large, nearly identical rows: the expanded formula cancels catastrophically here. The last
    # 8 rows are far from the others, so the result must still be the distances, not a constant.
    base = torch.randn(1, 16, dtype=torch.float32) * 1e3
    a = torch.cat([base + 1e-3 * torch.randn(32, 16), base + 10 * torch.randn(8, 16)])
    out = impl.pairwise_sq_dists(a, a)
    assert float(out.min()) >= 0, (f"pairwise_sq_dists returned a negative distance "
                                   f"({float(out.min()):.3g}): clamp round-off at zero")
    # float32 round-off of |a|^2 ~ 2e7 is a few units; the far distances are ~3e3.
    assert_close(out, brute_force_sq_dists(a.double(), a.double()).float(), rtol=1e-3, atol=64,
                 name="pairwise_sq_dists of large float32 rows")


@pytest.mark.points(2)
@given(n=st.integers(1, 3), m=st.integers(1, 3), d=st.integers(1, 3))
def test_pairwise_gradients_match_finite_differences(impl, n, m, d):
    a, b = torch.randn(n, d, dtype=torch.float64), torch.randn(2, m, d, dtype=torch.float64)
    check_gradients(impl.pairwise_sq_dists, a, b, name="pairwise_sq_dists",
                    reference=brute_force_sq_dists)


def test_pairwise_gradient_finite_where_rows_coincide(impl):
    a = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    out = impl.pairwise_sq_dists(a, a.detach().clone())
    out.sum().backward()
    assert torch.isfinite(a.grad).all(), ("pairwise_sq_dists: gradient is not finite where two "
                                          "rows are equal (is there a sqrt in the computation?)")
    expected = 2 * (3 * a.detach() - a.detach().sum(0, keepdim=True))
    assert_close(a.grad, expected, rtol=1e-6, atol=1e-6, name="gradient at coinciding rows")


@pytest.mark.points(2)
def test_pairwise_is_vectorised(impl):
    small = torch.randn(4, 3), torch.randn(5, 3)
    large = torch.randn(64, 3), torch.randn(80, 3)
    _, ops_small = count_aten_ops(impl.pairwise_sq_dists, *small)
    out, ops_large = count_aten_ops(impl.pairwise_sq_dists, *large)
    assert_close(out, brute_force_sq_dists(*large), rtol=1e-4, atol=1e-4,
                 name="pairwise_sq_dists(a(64, 3), b(80, 3))")
    assert sum(ops_large.values()) <= sum(ops_small.values()), (
        f"pairwise_sq_dists dispatched {sum(ops_small.values())} tensor ops for N=4 but "
        f"{sum(ops_large.values())} for N=64: the work grows with N, so there is a Python loop "
        "over rows; use broadcasting instead")


@pytest.mark.parametrize("device", device_params(meta=True))
def test_pairwise_stays_on_device(impl, device):
    a = torch.randn(2, 3, 4, device=device)
    b = torch.randn(5, 4, device=device)
    out = impl.pairwise_sq_dists(a, b)
    assert_shape(out, (2, 3, 5), name="pairwise_sq_dists")
    assert_device(out, device, name="pairwise_sq_dists")
    if device != "meta":
        assert_close(out, brute_force_sq_dists(a, b), rtol=1e-4, atol=1e-4,
                     name=f"pairwise_sq_dists on {device}")


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("a_shape, b_shape", [((3, 4), (5, 2)), ((3, 4), (4, 2)), ((3, 4), (5, 1)),
                                              ((2, 3, 4), (2, 5, 3))],
                         ids=["D-4-vs-2", "M-equals-D", "D-of-1-would-broadcast", "batched"])
def test_pairwise_rejects_feature_mismatch(impl, a_shape, b_shape):
    exc = assert_raises_naming(ValueError, "b", impl.pairwise_sq_dists, torch.randn(*a_shape),
                               torch.randn(*b_shape))
    # "b" is one letter: it must stand as a word, not hide inside "between" or "must be".
    assert re.search(r"(?<![A-Za-z0-9_])b(?![A-Za-z0-9_])", str(exc)), (
        f"pairwise_sq_dists(a{a_shape}, b{b_shape}) raised ValueError as expected, but its "
        f"message should name the argument 'b': {exc!s:.200}")


@given(lead=st.lists(st.integers(1, 4), max_size=3), i=sizes, o=sizes,
       x=st.integers(0, 2**16))
def test_affine_matches_linear_over_leading_dims(impl, lead, i, o, x):
    gen = torch.Generator().manual_seed(x)
    inp = torch.randn(*lead, i, generator=gen, dtype=torch.float64)
    weight = torch.randn(o, i, generator=gen, dtype=torch.float64)
    bias = torch.randn(o, generator=gen, dtype=torch.float64)
    out = impl.batched_affine(inp, weight, bias)
    name = f"batched_affine(x{tuple(inp.shape)}, weight{tuple(weight.shape)})"
    assert_close(out, torch.nn.functional.linear(inp, weight, bias), rtol=1e-9, atol=1e-9, name=name)


def test_affine_gradients_match_finite_differences(impl):
    x, w, b = torch.randn(2, 3, 4), torch.randn(5, 4), torch.randn(5)
    check_gradients(impl.batched_affine, x, w, b, name="batched_affine",
                    reference=torch.nn.functional.linear)


@pytest.mark.parametrize("device", device_params(meta=True))
def test_affine_stays_on_device(impl, device):
    x, w, b = (torch.randn(2, 3, 4, device=device), torch.randn(5, 4, device=device),
               torch.randn(5, device=device))
    out = impl.batched_affine(x, w, b)
    assert_shape(out, (2, 3, 5), name="batched_affine")
    assert_device(out, device, name="batched_affine")
    if device != "meta":
        assert_close(out, torch.nn.functional.linear(x, w, b), name=f"batched_affine on {device}")


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("w_shape, b_shape, argname", [
    ((5, 3), (5,), "weight"), ((4, 5), (5,), "weight"), ((5, 1), (5,), "weight"),
    ((5, 4), (4,), "bias"), ((5, 4), (1,), "bias"), ((5, 4), (6,), "bias"),
], ids=["weight-I-3", "weight-transposed", "weight-I-1-would-broadcast", "bias-4", "bias-1-would-broadcast",
        "bias-6"])
def test_affine_rejects_bad_weight_and_bias(impl, w_shape, b_shape, argname):
    assert_raises_naming(ValueError, argname, impl.batched_affine, torch.randn(2, 4),
                         torch.randn(*w_shape), torch.randn(*b_shape))
