"""Hidden tests for pytorch.autograd.custom_function (the catalog's contract checks)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from hypothesis import example, given, settings, strategies as st

from grader.checks import (assert_close, assert_device, assert_raises_naming, assert_shape,
                           autocast, autograd_function, check_gradients, count_aten_ops,
                           device_params, shapes, tensors)

# ATen ops that would mean the learner called the built-in instead of writing it.
BUILTINS = {"silu", "silu_backward", "logsumexp", "_softmax", "softmax", "_log_softmax",
            "log_softmax", "_softmax_backward_data", "_log_softmax_backward_data"}

EXTREMES = [-1e4, -3e3, -100.0, -20.0, -1.0, 0.0, 1.0, 20.0, 100.0, 3e3, 1e4]


def _shape_and_dim(draw_shape=shapes(max_dims=3, max_side=5)):
    """A shape and a valid (possibly negative) dim for it."""
    return draw_shape.flatmap(lambda s: st.tuples(st.just(s), st.integers(-len(s), len(s) - 1)))


class _CtxClaimingNoGrad:
    """The real ``ctx`` of a forward call, except that ``needs_input_grad`` says no input needs a
    gradient. Everything else (saved tensors, attributes the learner stored) is the real ctx's."""

    def __init__(self, ctx: Any, n_inputs: int) -> None:
        object.__setattr__(self, "_ctx", ctx)
        object.__setattr__(self, "needs_input_grad", (False,) * n_inputs)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_ctx"), name)


def _all_none(result: Any) -> bool:
    items = result if isinstance(result, (tuple, list)) else (result,)
    return all(item is None for item in items)


def _kinds(result: Any) -> str:
    items = result if isinstance(result, (tuple, list)) else (result,)
    return "(" + ", ".join(type(item).__name__ for item in items) + ")"


# --------------------------------------------------------------------------------------- SiLU


def test_silu_is_a_custom_function(impl):
    assert isinstance(impl.SiLU, type) and issubclass(impl.SiLU, torch.autograd.Function), (
        "SiLU must be a subclass of torch.autograd.Function")
    x = torch.randn(4, 3, requires_grad=True)

    def run():
        out = impl.silu(x)
        out.sum().backward()
        return out

    out, ops = count_aten_ops(run)
    assert_close(out.detach(), F.silu(x.detach()), name="silu(x)")
    assert autograd_function(out) is impl.SiLU, (
        f"silu(x).grad_fn is {type(out.grad_fn).__name__}, not SiLU's backward node: silu must "
        "return SiLU.apply(x)")
    used = sorted(BUILTINS & set(ops))
    assert not used, f"silu (forward and backward) called the built-in op(s) {used}: write them"


@pytest.mark.points(2)
@given(x=st.tuples(shapes(max_dims=3, max_side=5), st.sampled_from([1.0, 30.0, 1e4]),
                   st.sampled_from([torch.float32, torch.float64]))
       .flatmap(lambda a: tensors(a[0], scale=a[1], dtype=a[2])))
def test_silu_matches_torch(impl, x):
    x_before = x.clone()
    x = x.requires_grad_(True)
    name = f"silu(x{tuple(x.shape)}, {x.dtype}, max |x| {x.abs().max().item():.3g})"
    out = impl.silu(x)
    assert torch.equal(x.detach(), x_before), f"{name} modified its input x in place"
    assert_close(out, F.silu(x.detach()), name=name)
    g = torch.randn_like(x)
    got, = torch.autograd.grad(out, x, g)
    x_ref = x.detach().clone().requires_grad_(True)
    want, = torch.autograd.grad(F.silu(x_ref), x_ref, g)
    assert_close(got, want, name=f"gradient of {name}")


@pytest.mark.points(2)
@settings(max_examples=10)
@given(x=tensors(shapes(max_dims=3, max_side=3)))
def test_silu_first_and_second_derivatives(impl, x):
    check_gradients(impl.silu, x, name=f"silu(x{tuple(x.shape)})", second_order=True,
                    reference=F.silu)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_silu_finite_and_correct_at_extremes(impl, dtype):
    x = torch.tensor(EXTREMES, dtype=dtype, requires_grad=True)
    out = impl.silu(x)
    name = f"silu at extremes ({dtype})"
    assert torch.isfinite(out).all(), f"{name}: {out.detach().tolist()} has inf/NaN"
    g1, = torch.autograd.grad(out.sum(), x, create_graph=True)
    assert torch.isfinite(g1).all(), (f"{name}: first derivative {g1.detach().tolist()} has "
                                      "inf/NaN (does backward compute exp(-x) or exp(x) directly?)")
    assert g1.requires_grad, f"{name}: the gradient is not differentiable (double backward)"
    g2, = torch.autograd.grad(g1.sum(), x)
    assert torch.isfinite(g2).all(), f"{name}: second derivative {g2.tolist()} has inf/NaN"
    x_ref = x.detach().clone().requires_grad_(True)
    r1, = torch.autograd.grad(F.silu(x_ref).sum(), x_ref, create_graph=True)
    r2, = torch.autograd.grad(r1.sum(), x_ref)
    assert_close(out, F.silu(x.detach()), name=name)
    assert_close(g1.detach(), r1.detach(), name=f"first derivative of {name}")
    assert_close(g2, r2, atol=1e-4 if dtype == torch.float32 else None,
                 name=f"second derivative of {name}")


def test_silu_backward_respects_needs_input_grad(impl):
    x = torch.randn(5, requires_grad=True)
    out = impl.silu(x)
    assert out.grad_fn is not None, "silu(x) of an x that requires grad has no grad_fn"
    ctx = _CtxClaimingNoGrad(out.grad_fn, 1)
    result = impl.SiLU.backward(ctx, torch.ones_like(out))
    assert _all_none(result), (
        f"SiLU.backward returned {_kinds(result)} although ctx.needs_input_grad was (False,): "
        "it must return None for an input that needs no gradient")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_silu_keeps_low_precision_dtype(impl, dtype):
    x = torch.linspace(-6, 6, 25).to(dtype)
    out = impl.silu(x)
    # A few roundings in the low dtype are fine: about 4 ulps of float16, 8 of bfloat16.
    rtol = 4e-3 if dtype == torch.float16 else 3e-2
    assert_close(out, F.silu(x.float()).to(dtype), rtol=rtol, atol=1e-3,
                 name=f"silu on {dtype} input")
    xg = x.clone().requires_grad_(True)
    grad, = torch.autograd.grad(impl.silu(xg).sum(), xg)
    x32 = x.float().requires_grad_(True)
    want, = torch.autograd.grad(F.silu(x32).sum(), x32)
    assert_close(grad, want.to(dtype), rtol=3e-2, atol=1e-2, name=f"gradient of silu on {dtype}")


@pytest.mark.parametrize("device", device_params(meta=True))
def test_silu_stays_on_device(impl, device):
    x = torch.randn(2, 3, 4, device=device, requires_grad=True)
    out = impl.silu(x)
    assert_shape(out, (2, 3, 4), name="silu(x)")
    assert_device(out, device, name="silu(x)")
    assert out.dtype == x.dtype, f"silu(x): dtype {out.dtype}, expected {x.dtype}"
    assert_close(out, F.silu(x.detach()), name=f"silu(x) on {device}")
    out.sum().backward()
    assert_shape(x.grad, (2, 3, 4), name="gradient of silu(x)")
    assert_device(x.grad, device, name="gradient of silu(x)")


# ---------------------------------------------------------------------------------- LogSumExp


def test_logsumexp_is_a_custom_function(impl):
    cls = impl.LogSumExp
    assert isinstance(cls, type) and issubclass(cls, torch.autograd.Function), (
        "LogSumExp must be a subclass of torch.autograd.Function")
    x = torch.randn(4, 3, requires_grad=True)

    def run():
        out = impl.logsumexp(x, 1)
        out.sum().backward()
        return out

    out, ops = count_aten_ops(run)
    assert_close(out.detach(), torch.logsumexp(x.detach(), 1), name="logsumexp(x, 1)")
    assert autograd_function(out) is impl.LogSumExp, (
        f"logsumexp(x, 1).grad_fn is {type(out.grad_fn).__name__}, not LogSumExp's backward "
        "node: logsumexp must return LogSumExp.apply(...)")
    used = sorted(BUILTINS & set(ops))
    assert not used, (f"logsumexp (forward and backward) called the built-in op(s) {used}: "
                      "write them")


@pytest.mark.points(2)
@given(case=_shape_and_dim(), keepdim=st.booleans(), scale=st.sampled_from([1.0, 30.0, 1e4]),
       seed=st.integers(0, 2**31 - 1))
@example(case=((3, 4, 2), 1), keepdim=False, scale=30.0, seed=1)
@example(case=((3, 4, 2), -3), keepdim=True, scale=1e4, seed=2)
@example(case=((5,), 0), keepdim=False, scale=1.0, seed=3)
def test_logsumexp_matches_torch_float64(impl, case, keepdim, scale, seed):
    shape, dim = case
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen, dtype=torch.float64) * scale
    x_before = x.clone()
    x.requires_grad_(True)
    name = (f"logsumexp(x{shape}, dim={dim}, keepdim={keepdim}) "
            f"with max |x| {x.abs().max().item():.3g}")
    out = impl.logsumexp(x, dim, keepdim=keepdim)
    assert torch.equal(x.detach(), x_before), f"{name} modified its input x in place"
    expected = torch.logsumexp(x.detach(), dim, keepdim=keepdim)
    assert_close(out, expected, name=name)
    g = torch.randn(expected.shape, dtype=torch.float64, generator=gen)
    got, = torch.autograd.grad(out, x, g)
    x_ref = x.detach().clone().requires_grad_(True)
    want, = torch.autograd.grad(torch.logsumexp(x_ref, dim, keepdim=keepdim), x_ref, g)
    assert_close(got, want, name=f"gradient of {name}")


@given(case=_shape_and_dim(shapes(max_dims=3, max_side=6)), keepdim=st.booleans(),
       seed=st.integers(0, 2**31 - 1))
def test_logsumexp_matches_torch_float32(impl, case, keepdim, seed):
    shape, dim = case
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * 3
    x.requires_grad_(True)
    name = f"logsumexp(x{shape} float32, dim={dim}, keepdim={keepdim})"
    out = impl.logsumexp(x, dim, keepdim=keepdim)
    assert_close(out, torch.logsumexp(x.detach(), dim, keepdim=keepdim), rtol=1e-5, atol=1e-5,
                 name=name)
    got, = torch.autograd.grad(out.sum(), x)
    want = torch.softmax(x.detach().double(), dim).float()
    assert_close(got, want, rtol=1e-4, atol=1e-6, name=f"gradient of {name}.sum()")


@pytest.mark.points(2)
@settings(max_examples=10)
@given(case=_shape_and_dim(shapes(max_dims=3, max_side=3)), keepdim=st.booleans(),
       seed=st.integers(0, 2**31 - 1))
@example(case=((2, 3), 1), keepdim=False, seed=4)
@example(case=((2, 3), 0), keepdim=True, seed=5)
def test_logsumexp_first_and_second_derivatives(impl, case, keepdim, seed):
    shape, dim = case
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    check_gradients(lambda t: impl.logsumexp(t, dim, keepdim=keepdim), x, second_order=True,
                    name=f"logsumexp(x{shape}, dim={dim}, keepdim={keepdim})",
                    reference=lambda t: torch.logsumexp(t, dim, keepdim=keepdim))


@pytest.mark.points(2)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_logsumexp_finite_and_correct_at_extremes(impl, dtype):
    rows = [[1e4, -1e4, 0.0, 5.0],
            [1e4, 1e4 - 1, 1e4 - 2, 1e4 - 3],
            [-1e4, -1e4 + 1, -1e4 + 2, -1e4 + 3],
            [-1e4, -1e4, -1e4, -1e4],
            [3e3, -3e3, 100.0, -100.0]]
    x = torch.tensor(rows, dtype=dtype)
    truth = torch.tensor(rows, dtype=torch.float64)
    # float32 stores |x| ~ 1e4 to within 5e-4, so x - lse (hence the softmax) is that uncertain.
    tol = dict(rtol=1e-6, atol=2e-3) if dtype == torch.float32 else {}
    for dim, keepdim in [(1, False), (-1, True), (0, False)]:
        name = f"logsumexp(x with |x| ~ 1e4, {dtype}, dim={dim}, keepdim={keepdim})"
        xg = x.clone().requires_grad_(True)
        out = impl.logsumexp(xg, dim, keepdim=keepdim)
        assert torch.isfinite(out).all(), (f"{name} gave {out.detach().tolist()}: exp overflowed "
                                           "or underflowed (shift by the max before exp)")
        grad, = torch.autograd.grad(out.sum(), xg)
        assert torch.isfinite(grad).all(), (f"{name}: the gradient has inf/NaN (is it "
                                            "exp(x) / exp(lse)? use exp(x - lse))")
        assert_close(out, torch.logsumexp(truth, dim, keepdim=keepdim).to(dtype), name=name)
        assert_close(grad, torch.softmax(truth, dim).to(dtype), **tol, name=f"gradient of {name}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("dim, keepdim", [(1, False), (-1, True), (0, False)], ids=str)
def test_logsumexp_masked_entries(impl, dtype, dim, keepdim):
    ninf = float("-inf")
    rows = torch.tensor([[0.0, ninf, 1.0, ninf], [ninf, ninf, ninf, ninf], [ninf, 2.0, ninf, ninf],
                         [ninf, ninf, ninf, ninf]], dtype=dtype)
    # Slices along dim: rows 1 and 3 (or, transposed, columns 1 and 3) are all -inf.
    x = (rows if dim != 0 else rows.T.contiguous()).requires_grad_(True)
    out = impl.logsumexp(x, dim, keepdim=keepdim)
    name = f"logsumexp(x, dim={dim}, keepdim={keepdim}) with -inf entries ({dtype})"
    expected = torch.logsumexp(x.detach(), dim, keepdim=keepdim)
    assert not torch.isnan(out).any(), (f"{name} gave {out.detach().tolist()}: NaN where the "
                                        "slice is all -inf (-inf - -inf is NaN: do not shift by "
                                        "an infinite max)")
    assert_close(out, expected, name=f"{name} (slices 1 and 3 all -inf)")
    # The gradient of an all -inf slice is not specified; the other slices' is the masked softmax.
    flat = out.reshape(-1)
    grad, = torch.autograd.grad(flat[0] + flat[2], x)
    want = torch.tensor([[1 / (1 + torch.e), 0.0, torch.e / (1 + torch.e), 0.0], [0.0] * 4,
                         [0.0, 1.0, 0.0, 0.0], [0.0] * 4], dtype=dtype)
    keep = torch.tensor([0, 2])
    got = grad if dim != 0 else grad.T
    assert_close(got[keep], want[keep], name=f"gradient of {name} at slices with -inf entries")


def test_logsumexp_backward_respects_needs_input_grad(impl):
    x = torch.randn(3, 4, requires_grad=True)
    out = impl.logsumexp(x, 1)
    assert out.grad_fn is not None, "logsumexp(x, 1) of an x that requires grad has no grad_fn"
    ctx = _CtxClaimingNoGrad(out.grad_fn, len(out.grad_fn.needs_input_grad))
    result = impl.LogSumExp.backward(ctx, torch.ones_like(out))
    assert _all_none(result), (
        f"LogSumExp.backward returned {_kinds(result)} although ctx.needs_input_grad said that "
        "no input needs a gradient: it must return None for each input then")


def test_logsumexp_returns_none_for_non_tensor_arguments(impl):
    # Autograd itself rejects a gradient returned for dim/keepdim; a backward must run cleanly.
    x = torch.randn(3, 4, 5, requires_grad=True)
    for dim, keepdim in [(0, False), (1, True), (-1, False)]:
        try:
            impl.logsumexp(x, dim, keepdim=keepdim).sum().backward()
        except RuntimeError as exc:
            raise AssertionError(f"backward of logsumexp(x(3, 4, 5), dim={dim}, keepdim={keepdim}) "
                                 f"raised RuntimeError: {exc!s:.300}") from None


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_logsumexp_keeps_low_precision_dtype(impl, dtype):
    x = (torch.randn(4, 7, generator=torch.Generator().manual_seed(0)) * 4).to(dtype)
    out = impl.logsumexp(x, -1)
    assert_close(out, torch.logsumexp(x.float(), -1).to(dtype), rtol=2e-2, atol=2e-2,
                 name=f"logsumexp on {dtype} input")
    xg = x.clone().requires_grad_(True)
    grad, = torch.autograd.grad(impl.logsumexp(xg, -1).sum(), xg)
    assert_close(grad, torch.softmax(x.float(), -1).to(dtype), rtol=3e-2, atol=1e-2,
                 name=f"gradient of logsumexp on {dtype}")


@pytest.mark.parametrize("device", device_params(meta=True))
def test_logsumexp_stays_on_device(impl, device):
    x = torch.randn(2, 3, 4, device=device, requires_grad=True)
    for dim, keepdim, shape in [(1, False, (2, 4)), (-1, True, (2, 3, 1))]:
        out = impl.logsumexp(x, dim, keepdim=keepdim)
        name = f"logsumexp(x(2, 3, 4), dim={dim}, keepdim={keepdim})"
        assert_shape(out, shape, name=name)
        assert_device(out, device, name=name)
        assert out.dtype == x.dtype, f"{name}: dtype {out.dtype}, expected {x.dtype}"
        assert_close(out, torch.logsumexp(x.detach(), dim, keepdim=keepdim), name=name)
        grad, = torch.autograd.grad(out.sum(), x)
        assert_shape(grad, (2, 3, 4), name=f"gradient of {name}")
        assert_device(grad, device, name=f"gradient of {name}")


@pytest.mark.parametrize("dim", [2, -3], ids=str)
def test_logsumexp_accepts_both_ends_of_the_dim_range(impl, dim):
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    assert_close(impl.logsumexp(x, dim), torch.logsumexp(x, dim),
                 name=f"logsumexp(x(2, 3, 4), dim={dim})")


def test_logsumexp_rejects_bad_dim(impl):
    x = torch.randn(3, 4)
    assert_raises_naming((IndexError, ValueError), "dim", impl.logsumexp, x, 2)
    assert_raises_naming((IndexError, ValueError), "dim", impl.logsumexp, x, -3)
    assert_raises_naming(TypeError, "dim", impl.logsumexp, x, 1.0)
    assert_raises_naming(TypeError, "dim", impl.logsumexp, x, "1")
    assert_raises_naming(TypeError, "dim", impl.logsumexp, x, None)
    v = torch.randn(5)  # 1-D: only 0 and -1 are in range
    assert_raises_naming((IndexError, ValueError), "dim", impl.logsumexp, v, 1)
    assert_raises_naming((IndexError, ValueError), "dim", impl.logsumexp, v, -2)


# ------------------------------------------------------------------------------------ autocast


@pytest.mark.points(2)
def test_both_run_under_cpu_autocast(impl):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(6, 8, generator=gen)
    w = (torch.randn(8, 5, generator=gen) / 3).requires_grad_(True)
    w_ref = w.detach().clone().requires_grad_(True)
    with autocast("cpu") as low:
        h = x @ w                     # autocast runs the matmul in bfloat16
        act = impl.silu(h)
        out = impl.logsumexp(act, -1)
        h_ref = x @ w_ref
        out_ref = torch.logsumexp(F.silu(h_ref), -1)
    assert act.dtype == low, f"silu of a {low} activation under CPU autocast gave {act.dtype}"
    assert out.dtype == low, f"logsumexp of a {low} activation under CPU autocast gave {out.dtype}"
    exact = torch.logsumexp(F.silu(h.detach().float()), -1)
    assert_close(out.float(), exact, rtol=2e-2, atol=3e-2,
                 name="logsumexp(silu(x @ w), -1) under autocast vs float32")
    out.float().sum().backward()
    out_ref.float().sum().backward()
    assert w.grad is not None, "under autocast, no gradient reached the float32 weight w"
    assert w.grad.dtype == torch.float32, f"w.grad has dtype {w.grad.dtype}, expected float32"
    assert torch.isfinite(w.grad).all(), "under autocast, the gradient of w has inf/NaN"
    scale = w_ref.grad.abs().max().item()
    assert_close(w.grad, w_ref.grad, rtol=5e-2, atol=5e-2 * scale,
                 name="gradient of w through silu and logsumexp under autocast")
