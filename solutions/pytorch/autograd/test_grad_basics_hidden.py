"""Hidden tests for pytorch.autograd.grad_basics (the catalog's contract checks).

Expected gradients and Jacobians come from central finite differences in float64 on functions
drawn by hypothesis (compositions of smooth elementwise maps plus a quadratic form), never from
autograd itself. ``jacobian`` runs under ``record_calls``, which reports any call into
``torch.autograd.functional`` or the ``torch.func`` transforms, however they were imported (in the
submission's process when it is graded apart).
"""

from __future__ import annotations

from typing import Callable

import pytest
import torch
import torch.nn.functional as F
from hypothesis import example, given, settings, strategies as st

from grader.checks import (assert_close, assert_device, assert_raises_naming, assert_shape,
                           check_gradients, device_params, record_calls, shapes, tensors)


# Smooth elementwise maps, bounded or gently growing so finite differences stay accurate.
SMOOTH: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "sin": torch.sin,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "softplus": F.softplus,
    "square": lambda t: t * t,
    "gauss": lambda t: torch.exp(-0.5 * t * t),
}

FD_TOL = dict(rtol=1e-5, atol=1e-6)


class SmoothScalar:
    """f(x) = sum(w * g_k(...g_1(x))) + 0.5 * x.A.x, with w and A fixed by a seed."""

    def __init__(self, shape: tuple[int, ...], ops: list[str], seed: int) -> None:
        gen = torch.Generator().manual_seed(seed)
        n = 1
        for s in shape:
            n *= s
        self.ops = ops
        self.w = torch.randn(shape, generator=gen, dtype=torch.float64)
        self.a = torch.randn(n, n, generator=gen, dtype=torch.float64) / max(n, 1)
        self.name = f"f(x) = sum(w * {'('.join(reversed(ops))}(x{')' * len(ops)}) + 0.5 x.A.x"

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        y = x
        for op in self.ops:
            y = SMOOTH[op](y)
        w = self.w.to(x.device, x.dtype)
        a = self.a.to(x.device, x.dtype)
        flat = x.reshape(-1)
        return (w * y).sum() + 0.5 * flat @ (a @ flat)


class SmoothMap:
    """f(x) = g(M @ x.flatten() + c).reshape(out_shape): any input shape to any output shape."""

    def __init__(self, in_shape: tuple[int, ...], out_shape: tuple[int, ...], op: str,
                 seed: int) -> None:
        gen = torch.Generator().manual_seed(seed)
        n_in = int(torch.Size(in_shape).numel())
        n_out = int(torch.Size(out_shape).numel())
        self.m = torch.randn(n_out, n_in, generator=gen, dtype=torch.float64)
        self.c = torch.randn(n_out, generator=gen, dtype=torch.float64)
        self.op, self.out_shape = op, out_shape

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        m, c = self.m.to(x.device, x.dtype), self.c.to(x.device, x.dtype)
        return SMOOTH[self.op](m @ x.reshape(-1) + c).reshape(self.out_shape)


def fd_jacobian(f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
                eps: float = 1e-6) -> torch.Tensor:
    """Central differences in float64: shape (*f(x).shape, *x.shape)."""
    x = x.detach().to(torch.float64)
    with torch.no_grad():
        out_shape = f(x).shape
        flat = x.reshape(-1)
        cols = []
        for j in range(flat.numel()):
            step = torch.zeros_like(flat)
            step[j] = eps
            plus = f((flat + step).reshape(x.shape))
            minus = f((flat - step).reshape(x.shape))
            cols.append(((plus - minus) / (2 * eps)).reshape(-1))
        jac = torch.stack(cols, dim=-1) if cols else torch.zeros(out_shape.numel(), 0,
                                                                 dtype=torch.float64)
    return jac.reshape((*out_shape, *x.shape))


def _grad(x: torch.Tensor) -> torch.Tensor | None:
    # .grad of a non-leaf is always None (and reading it warns): only leaves hold gradients.
    return x.grad if x.is_leaf else None


def state(x: torch.Tensor) -> tuple[bool, torch.Tensor | None, torch.Tensor]:
    return x.requires_grad, (None if _grad(x) is None else x.grad.clone()), x.detach().clone()


def assert_untouched(x: torch.Tensor, before: tuple, call: str) -> None:
    requires_grad, grad, values = before
    assert x.requires_grad == requires_grad, (
        f"{call} changed x.requires_grad from {requires_grad} to {x.requires_grad}: compute the "
        "gradient without modifying the caller's tensor")
    if grad is None:
        assert _grad(x) is None, (
            f"{call} wrote into x.grad (it was None before the call): use torch.autograd.grad, "
            "which returns gradients, instead of backward(), which accumulates them into .grad")
    else:
        assert x.grad is not None, f"{call} cleared x.grad, which held a gradient before the call"
        assert_close(x.grad, grad, name=f"x.grad after {call} (must be unchanged)")
    assert_close(x.detach(), values, name=f"x after {call} (values must be unchanged)")


# torch.autograd.functional and the torch.func transforms, as the functions that run them.
JACOBIAN_HELPERS = ("torch.autograd.functional.*", "torch._functorch.apis.grad",
                    "torch._functorch.apis.grad_and_value",
                    *(f"torch._functorch.eager_transforms.{name}" for name in (
                        "jacrev", "jacfwd", "hessian", "vjp", "jvp", "linearize", "grad_impl",
                        "grad_and_value_impl")))


ops_lists = st.lists(st.sampled_from(sorted(SMOOTH)), min_size=1, max_size=3)
small_shapes = shapes(min_dims=1, max_dims=3, max_side=4)
seeds = st.integers(0, 2**16)


# ---------------------------------------------------------------------------------------------
# gradient
# ---------------------------------------------------------------------------------------------

@pytest.mark.points(2)
@given(shape=small_shapes, ops=ops_lists, seed=seeds, data=st.data())
def test_gradient_matches_finite_differences(impl, shape, ops, seed, data):
    f = SmoothScalar(shape, ops, seed)
    x = data.draw(tensors(shape))
    got = impl.gradient(f, x)
    name = f"gradient({f.name}, x{tuple(shape)})"
    assert_shape(got, tuple(shape), name=name)
    assert_close(got, fd_jacobian(f, x), name=name, **FD_TOL)


@pytest.mark.points(2)
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("case", ["plain tensor", "leaf with requires_grad", "leaf with a .grad",
                                  "non-leaf"])
def test_gradient_leaves_x_untouched(impl, case, create_graph):
    f = SmoothScalar((2, 3), ["tanh", "square"], 7)
    base = torch.randn(2, 3, dtype=torch.float64)
    if case == "plain tensor":
        x = base.clone()
    elif case == "leaf with requires_grad":
        x = base.clone().requires_grad_(True)
    elif case == "leaf with a .grad":
        x = base.clone().requires_grad_(True)
        x.grad = torch.full_like(base, 0.25)
    else:
        leaf = base.clone().requires_grad_(True)
        x = leaf * 1.0
    before = state(x)
    got = impl.gradient(f, x, create_graph=create_graph)
    call = f"gradient(f, x) on a {case} (create_graph={create_graph})"
    assert_untouched(x, before, call)
    assert_close(got.detach(), fd_jacobian(f, base), name=call, **FD_TOL)
    if case == "non-leaf":
        assert leaf.grad is None, f"{call} wrote a gradient into the leaf that x was computed from"


@pytest.mark.parametrize("requires_grad", [False, True])
def test_gradient_has_no_graph_without_create_graph(impl, requires_grad):
    x = torch.randn(4, dtype=torch.float64, requires_grad=requires_grad)
    got = impl.gradient(lambda z: (z ** 3).sum(), x)
    assert not got.requires_grad and got.grad_fn is None, (
        f"gradient(f, x) with create_graph=False returned a tensor with autograd history "
        f"(requires_grad={got.requires_grad}, grad_fn={got.grad_fn}) for x.requires_grad="
        f"{requires_grad}: it should not build a graph for the gradient")
    assert_close(got, 3 * x.detach() ** 2, name="gradient(sum(x**3), x)", rtol=1e-9, atol=1e-9)


@pytest.mark.points(2)
def test_second_derivative_of_cube(impl):
    x = torch.tensor([-1.5, 0.0, 0.5, 2.0], dtype=torch.float64)

    def first(z: torch.Tensor) -> torch.Tensor:
        return impl.gradient(lambda t: (t ** 3).sum(), z, create_graph=True)

    try:
        second = impl.gradient(lambda z: first(z).sum(), x)
    except RuntimeError as exc:
        raise AssertionError(
            "the second derivative gradient(lambda z: gradient(f, z, create_graph=True).sum(), x) "
            f"raised RuntimeError: {exc!s:.200}. When z already requires grad, differentiate "
            "with respect to z itself so the inner gradient stays connected to it") from None
    name = "d/dx sum(d/dx sum(x**3)) = 6x"
    if not bool(second.abs().any()):
        name += (" (got all zeros: the gradient returned with create_graph=True is not connected "
                 "to the z it was called with)")
    assert_close(second, 6 * x, name=name, rtol=1e-9, atol=1e-9)


@pytest.mark.points(2)
@settings(max_examples=10)
@given(shape=shapes(min_dims=1, max_dims=2, max_side=3), ops=ops_lists, seed=seeds)
def test_hessian_through_create_graph_matches_finite_differences(impl, shape, ops, seed):
    f = SmoothScalar(shape, ops, seed)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    # gradcheck of x -> gradient(f, x, create_graph=True) compares the Hessian computed by
    # differentiating the returned gradient with finite differences of that gradient.
    check_gradients(lambda z: impl.gradient(f, z, create_graph=True), x,
                    name=f"gradient({f.name}, x{tuple(shape)}, create_graph=True)")


def test_gradient_of_unconnected_output_is_zero(impl):
    x = torch.randn(2, 3, dtype=torch.float64)
    got = impl.gradient(lambda z: torch.tensor(2.0, dtype=z.dtype), x)
    assert_close(got, torch.zeros_like(x), name="gradient of a constant f (must be zeros)")
    got = impl.gradient(lambda z: z.detach().sum() * 3.0, x)
    assert_close(got, torch.zeros_like(x), name="gradient of f using only x.detach() (zeros)")
    w = torch.randn(3, dtype=torch.float64, requires_grad=True)
    got = impl.gradient(lambda z: (w * w).sum(), x)
    assert_close(got, torch.zeros_like(x),
                 name="gradient of f depending only on another tensor that requires grad (zeros)")


def test_gradient_works_inside_no_grad(impl):
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    with torch.no_grad():
        got = impl.gradient(lambda z: (z.sin() * z).sum(), x)
    expected = x.sin() + x * x.cos()
    assert_close(got, expected, name="gradient(f, x) called inside torch.no_grad()", rtol=1e-9,
                 atol=1e-9)


FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("device", device_params(meta=True))
def test_gradient_keeps_dtype_and_device(impl, device, dtype):
    x = torch.tensor([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]], dtype=dtype, device=device)
    got = impl.gradient(lambda z: (z.sin() * z).sum(), x)
    name = f"gradient(f, x) for {dtype} x on {device}"
    assert_shape(got, (3, 2), name=name)
    assert_device(got, device, name=name)
    assert got.dtype == dtype, f"{name}: dtype {got.dtype}, expected {dtype}"
    x64 = x.to(torch.float64)
    assert_close(got, (x64.sin() + x64 * x64.cos()).to(dtype), name=name, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("out_shape", [(), (1,), (1, 1)], ids=str)
def test_gradient_accepts_any_one_element_output(impl, out_shape):
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    got = impl.gradient(lambda z: (z * z).sum().reshape(out_shape), x)
    assert_close(got, 2 * x, name=f"gradient(f, x) for f returning shape {out_shape}",
                 rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("out_shape", [(3,), (1, 2), (0,)], ids=str)
def test_gradient_rejects_output_without_exactly_one_element(impl, out_shape):
    x = torch.randn(3, dtype=torch.float64)
    n = int(torch.Size(out_shape).numel())
    assert_raises_naming(ValueError, "f", impl.gradient, lambda z: z[:n].reshape(out_shape) * 2, x)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool], ids=str)
def test_gradient_rejects_non_floating_x(impl, dtype):
    assert_raises_naming(TypeError, "x", impl.gradient, lambda z: z.sum(),
                         torch.ones(3, dtype=dtype))


# ---------------------------------------------------------------------------------------------
# jacobian
# ---------------------------------------------------------------------------------------------

@pytest.mark.points(2)
@given(in_shape=shapes(min_dims=0, max_dims=2, max_side=4),
       out_shape=shapes(min_dims=0, max_dims=3, max_side=3), op=st.sampled_from(sorted(SMOOTH)),
       seed=seeds)
@example(in_shape=(), out_shape=(), op="sin", seed=0)
@example(in_shape=(), out_shape=(2,), op="tanh", seed=1)
@example(in_shape=(3,), out_shape=(), op="softplus", seed=2)
def test_jacobian_matches_finite_differences(impl, in_shape, out_shape, op, seed):
    f = SmoothMap(in_shape, out_shape, op, seed)
    x = torch.randn(in_shape, generator=torch.Generator().manual_seed(seed + 1),
                    dtype=torch.float64)
    got = impl.jacobian(f, x)
    name = f"jacobian(f: {tuple(in_shape)} -> {tuple(out_shape)})"
    assert_shape(got, (*out_shape, *in_shape), name=name)
    assert_close(got, fd_jacobian(f, x), name=name, **FD_TOL)


def test_jacobian_of_non_symmetric_map(impl):
    # J[i, j] = d out_i / d x_j = m[i, j]: a transposed layout cannot pass here.
    m = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]], dtype=torch.float64)
    x = torch.randn(3, dtype=torch.float64)
    got = impl.jacobian(lambda z: m @ z, x)
    assert_close(got, m, name="jacobian(x -> m @ x) (must equal m, rows = outputs)")


@pytest.mark.parametrize("case", ["plain tensor", "leaf with requires_grad", "leaf with a .grad",
                                  "non-leaf"])
def test_jacobian_leaves_x_untouched_and_has_no_graph(impl, case):
    base = torch.randn(2, 2, dtype=torch.float64)
    x = base.clone()
    if case == "leaf with requires_grad":
        x.requires_grad_(True)
    elif case == "leaf with a .grad":
        x.requires_grad_(True)
        x.grad = torch.ones_like(x)
    elif case == "non-leaf":
        leaf = base.clone().requires_grad_(True)
        x = leaf * 1.0
    before = state(x)

    def f(z: torch.Tensor) -> torch.Tensor:
        return torch.tanh(z).cumsum(0)

    got = impl.jacobian(f, x)
    call = f"jacobian(f, x) on a {case}"
    assert_untouched(x, before, call)
    assert not got.requires_grad, (
        f"{call} returned a tensor that requires grad: the result must carry no autograd history")
    assert_close(got, fd_jacobian(f, base), name=call, **FD_TOL)
    if case == "non-leaf":
        assert leaf.grad is None, f"{call} wrote a gradient into the leaf that x was computed from"


def test_jacobian_of_unconnected_outputs_is_zero(impl):
    x = torch.randn(3, dtype=torch.float64)
    got = impl.jacobian(lambda z: torch.stack([(z * z).sum(), z.new_tensor(1.0)]), x)
    expected = torch.stack([2 * x, torch.zeros_like(x)])
    assert_close(got, expected, name="jacobian with an output that ignores x (zero row)")
    got = impl.jacobian(lambda z: torch.ones(2, dtype=z.dtype), x)
    assert_close(got, torch.zeros(2, 3, dtype=torch.float64),
                 name="jacobian of a constant f (all zeros)")
    w = torch.randn(2, dtype=torch.float64, requires_grad=True)
    got = impl.jacobian(lambda z: w * 2, x)
    assert_close(got, torch.zeros(2, 3, dtype=torch.float64),
                 name="jacobian of f depending only on another tensor that requires grad (zeros)")
    got = impl.jacobian(lambda z: torch.cat([w * 2, z.sum().reshape(1)]), x)
    expected = torch.cat([torch.zeros(2, 3, dtype=torch.float64), torch.ones(1, 3, dtype=torch.float64)])
    assert_close(got, expected,
                 name="jacobian with outputs depending only on another tensor that requires grad "
                      "(zero rows)")


@pytest.mark.points(2)
def test_jacobian_is_built_from_autograd_grad(impl):
    x = torch.randn(2, 3, dtype=torch.float64)
    got, seen = record_calls(JACOBIAN_HELPERS, impl.jacobian, lambda z: z.sin().sum(0), x)
    assert not seen, (
        f"jacobian called {', '.join(seen)}: build the Jacobian from torch.autograd.grad "
        "instead of torch.autograd.functional or the torch.func transforms")
    # J[i, j, k] = d sum_r sin(x[r, i]) / d x[j, k] = cos(x[j, i]) when k == i, else 0.
    expected = torch.einsum("ik,ji->ijk", torch.eye(3, dtype=x.dtype), x.cos())
    assert_close(got, expected, name="jacobian(x -> sin(x).sum(0))", rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("device", device_params(meta=True))
def test_jacobian_keeps_dtype_and_device(impl, device, dtype):
    x = torch.tensor([[0.5, -1.0, 2.0], [0.25, -0.75, 1.5]], dtype=dtype, device=device)
    got = impl.jacobian(lambda z: z.tanh().sum(-1), x)
    name = f"jacobian for {dtype} x on {device}"
    assert_shape(got, (2, 2, 3), name=name)
    assert_device(got, device, name=name)
    assert got.dtype == dtype, f"{name}: dtype {got.dtype}, expected {dtype}"
    # J[i, j, k] = d sum_k' tanh(x[i, k']) / d x[j, k] = 1 - tanh(x[j, k])^2 when j == i, else 0.
    d = 1 - x.to(torch.float64).tanh() ** 2
    expected = torch.einsum("ij,jk->ijk", torch.eye(2, dtype=d.dtype, device=device), d)
    assert_close(got, expected.to(dtype), name=name, rtol=2e-2, atol=2e-2)


# ---------------------------------------------------------------------------------------------
# accumulate
# ---------------------------------------------------------------------------------------------

@pytest.mark.points(2)
@given(shape=small_shapes, times=st.integers(1, 4), seed=seeds)
def test_accumulate_adds_one_gradient_per_backward(impl, shape, times, seed):
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(shape, generator=gen, dtype=torch.float64)
    x = torch.randn(shape, generator=gen, dtype=torch.float64).requires_grad_(True)
    got = impl.accumulate(lambda z: (w * z.sin()).sum(), x, times)
    expected = times * w * x.detach().cos()
    name = f"accumulate(f, x{tuple(shape)}, times={times}) (x.grad started as None)"
    assert_close(got, expected, name=name, rtol=1e-9, atol=1e-9)
    assert x.grad is not None, f"{name}: x.grad is None after the call"
    assert_close(x.grad, expected, name=f"x.grad after {name}", rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("times", [1, 3])
def test_accumulate_keeps_the_existing_grad(impl, times):
    x = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64, requires_grad=True)
    x.grad = torch.tensor([10.0, 20.0, 30.0], dtype=torch.float64)
    got = impl.accumulate(lambda z: (z * z).sum(), x, times)
    expected = torch.tensor([10.0, 20.0, 30.0], dtype=torch.float64) + times * 2 * x.detach()
    assert_close(got, expected, rtol=1e-9, atol=1e-9,
                 name=f"accumulate(f, x, {times}) with x.grad already holding [10, 20, 30] "
                      "(gradients add to it; nothing is zeroed)")


@pytest.mark.parametrize("device", device_params(meta=True))
def test_accumulate_keeps_device(impl, device):
    x = torch.randn(2, 3, device=device, requires_grad=True)
    got = impl.accumulate(lambda z: (z * z).sum(), x, 2)
    assert_shape(got, (2, 3), name=f"accumulate on {device}")
    assert_device(got, device, name=f"accumulate on {device}")
    assert_close(got, 4 * x.detach(), name=f"accumulate(sum(x**2), x, 2) on {device}")


def test_accumulate_rejects_bad_arguments(impl):
    def f(z: torch.Tensor) -> torch.Tensor:
        return (z * z).sum()

    assert_raises_naming(ValueError, "x", impl.accumulate, f, torch.randn(3), 2)
    leaf = torch.randn(3, requires_grad=True)
    assert_raises_naming(ValueError, "x", impl.accumulate, f, leaf * 2, 2)
    for bad in (0, -1, 2.0, "2"):
        assert_raises_naming(ValueError, "times", impl.accumulate, f,
                             torch.randn(3, requires_grad=True), bad)
