"""Hidden tests for pytorch.optim.grad_clipping (the catalog's contract checks).

The reference is ``torch.nn.utils.clip_grad_norm_`` itself, run on an identical copy of the
parameters; each call of the learner's function records whether it ran torch's own clipping
helpers (``record_calls``, in the submission's process when it is graded apart), so delegating
to them is reported.
"""

from __future__ import annotations


import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.checks import (
    assert_close,
    assert_device,
    assert_raises_naming,
    assert_tensor,
    device_params,
    record_calls,
    shapes,
)

TOL64 = {"rtol": 1e-10, "atol": 1e-300}  # float64: only the summation order may differ
TOL32 = {"rtol": 1e-5, "atol": 1e-7}
INF = float("inf")
NORM_TYPES = [1.0, 2.0, INF, 3.0, 0.5]
# max_norm as a multiple of the true norm; 1.0 is left to test_epsilon_is_torchs (a norm right at
# max_norm is the one place where the 1e-6 decides whether anything is scaled).
RATIOS = [0.01, 0.3, 0.9, 1.5, 4.0, 100.0]


# torch.nn.utils' own clipping, wherever the learner's code reaches it from (torch.nn.utils
# re-exports these; get_total_norm and clip_grads_with_norm_ run as the private names).
TORCH_CLIPPING = tuple(f"torch.nn.utils.clip_grad.{name}" for name in (
    "clip_grad_norm_", "clip_grad_norm", "_get_total_norm", "_clip_grads_with_norm_"))


def make_params(grads: list[torch.Tensor | None], shapes_: list[tuple[int, ...]] | None = None,
                *, dtype=torch.float64, device="cpu") -> list[torch.Tensor]:
    """Leaf parameters (values 1..n, never touched) with the given gradients (None = no grad)."""
    params = []
    for i, g in enumerate(grads):
        shape = g.shape if g is not None else shapes_[i]
        p = torch.full(shape, float(i + 1), dtype=dtype, device=device, requires_grad=True)
        p.grad = None if g is None else g.to(device, dtype).clone()
        params.append(p)
    return params


def clone_params(params: list[torch.Tensor]) -> list[torch.Tensor]:
    out = []
    for p in params:
        q = p.detach().clone().requires_grad_(True)
        q.grad = None if p.grad is None else p.grad.clone()
        out.append(q)
    return out


def run_learner(impl, parameters, *args, **kwargs):
    norm, called = record_calls(TORCH_CLIPPING, impl.clip_grad_norm, parameters, *args, **kwargs)
    assert not called, (f"clip_grad_norm called torch.nn.utils' own clipping ({', '.join(called)}): "
                        "write it from scratch")
    return norm


def true_norm(grads: list[torch.Tensor], p: float) -> float:
    flat = torch.cat([g.reshape(-1) for g in grads]).double()
    return float(torch.linalg.vector_norm(flat, p)) if flat.numel() else 0.0


def check_against_torch(impl, params: list[torch.Tensor], max_norm: float, *, label: str,
                        norm_type: float = 2.0, error_if_nonfinite: bool = False,
                        as_generator: bool = False, tol: dict | None = None) -> torch.Tensor:
    """Clip ``params`` with the learner's function and a copy with torch's; compare everything."""
    expected = clone_params(params)
    grad_objects = [p.grad for p in params]
    values = [p.detach().clone() for p in params]
    want = torch.nn.utils.clip_grad_norm_(expected, max_norm, norm_type=norm_type,
                                          error_if_nonfinite=error_if_nonfinite)
    source = (p for p in params) if as_generator else params
    got = run_learner(impl, source, max_norm, norm_type=norm_type,
                      error_if_nonfinite=error_if_nonfinite)
    got = assert_tensor(got, name=f"{label}: the returned total norm")
    assert got.dim() == 0, f"{label}: the returned norm must be a 0-dim tensor, got shape {tuple(got.shape)}"
    tol = tol or (TOL64 if want.dtype == torch.float64 else TOL32)
    assert_close(got, want, **tol, equal_nan=True,
                 name=f"{label}: the returned total norm (computed before clipping)")
    for i, (p, q) in enumerate(zip(params, expected)):
        if q.grad is None:
            assert p.grad is None, f"{label}: parameter {i} had no gradient, but now its .grad is set"
            continue
        assert p.grad is grad_objects[i], (
            f"{label}: parameter {i}'s .grad was replaced by a new tensor: scale it in place")
        assert_close(p.grad, q.grad, **tol, equal_nan=True,
                     name=f"{label}: parameter {i}'s gradient after clipping")
        assert_close(p.detach(), values[i], rtol=0, atol=0,
                     name=f"{label}: parameter {i}'s values (only gradients may change)")
    return got


@st.composite
def grad_lists(draw) -> tuple[list[torch.Tensor | None], list[tuple[int, ...]]]:
    """1-5 parameters of hypothesis shapes, some without a gradient, gradients of any scale."""
    n = draw(st.integers(1, 5))
    param_shapes = [draw(shapes(min_dims=0, max_dims=3, max_side=5)) for _ in range(n)]
    has_grad = [draw(st.booleans()) or i == n - 1 for i in range(n)]
    scale = draw(st.sampled_from([1e-3, 1.0, 1e3]))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    grads = [torch.randn(s, generator=gen, dtype=torch.float64) * scale if h else None
             for s, h in zip(param_shapes, has_grad)]
    return grads, param_shapes


@pytest.mark.points(3)
@settings(max_examples=40)
@given(data=grad_lists(), norm_type=st.sampled_from(NORM_TYPES), ratio=st.sampled_from(RATIOS),
       as_generator=st.booleans())
def test_matches_torch_clip_grad_norm(impl, data, norm_type, ratio, as_generator):
    grads, param_shapes = data
    norm = true_norm([g for g in grads if g is not None], norm_type)
    max_norm = ratio * norm
    label = (f"{len(grads)} parameters of shapes {param_shapes} "
             f"(without a gradient: {[i for i, g in enumerate(grads) if g is None]}), "
             f"norm_type={norm_type}, max_norm={max_norm:.6g} (total norm {norm:.6g}), float64"
             f"{', passed as a generator' if as_generator else ''}")
    check_against_torch(impl, make_params(grads, param_shapes), max_norm, norm_type=norm_type,
                        label=label, as_generator=as_generator)


@pytest.mark.points(2)
def test_one_global_norm_not_one_per_parameter(impl):
    """Norms 3 and 4 make a global L2 norm of 5: both are scaled by 2.5 / 5, not each to 2.5."""
    params = make_params([torch.tensor([3.0, 0.0]), torch.tensor([0.0, 0.0, 4.0])])
    norm = check_against_torch(impl, params, 2.5, label="gradients of norms 3 and 4, max_norm=2.5")
    assert_close(norm, torch.tensor(5.0, dtype=torch.float64), **TOL64,
                 name="the global norm of gradients with norms 3 and 4")


@pytest.mark.points(2)
@pytest.mark.parametrize("norm_type", [1.0, 2.0, INF])
def test_small_gradients_are_never_scaled_up(impl, norm_type):
    grads = [torch.tensor([0.1, -0.2]), torch.tensor([[0.05]])]
    params = make_params(grads)
    norm = check_against_torch(impl, params, 10.0, norm_type=norm_type,
                               label=f"total {norm_type}-norm far below max_norm=10")
    for p, g in zip(params, grads):
        assert_close(p.grad, g.double(), rtol=0, atol=0,
                     name=f"a gradient whose total {norm_type}-norm ({float(norm):.3g}) is below "
                          "max_norm=10 (the coefficient is clamped to 1, never above)")


@pytest.mark.points(2)
def test_returns_the_norm_from_before_clipping(impl):
    params = make_params([torch.tensor([6.0, 8.0])])
    norm = check_against_torch(impl, params, 1.0, label="a gradient of norm 10, max_norm=1")
    assert_close(norm, torch.tensor(10.0, dtype=torch.float64), **TOL64,
                 name="returned norm (the norm before clipping, 10, not the clipped one)")


@pytest.mark.points(2)
def test_parameters_without_gradient_are_skipped(impl):
    grads = [None, torch.tensor([3.0, 4.0]), None, torch.tensor([[12.0]])]
    shapes_ = [(2, 2), (2,), (3,), (1, 1)]
    for norm_type in (2.0, INF):
        check_against_torch(impl, make_params(grads, shapes_), 1.0, norm_type=norm_type,
                            label=f"parameters 0 and 2 without .grad, norm_type={norm_type}")
    norm = run_learner(impl, make_params([None, None], [(2,), (3,)]), 1.0)
    norm = assert_tensor(norm, name="the norm when no parameter has a gradient")
    assert norm.dim() == 0 and float(norm) == 0.0, (
        f"no parameter has a gradient: expected a 0-dim tensor 0.0, got {norm!r}")


@pytest.mark.points(2)
def test_a_single_tensor(impl):
    for norm_type in (2.0, 1.0, INF):
        gen = torch.Generator().manual_seed(1)
        (p,) = make_params([torch.randn(4, 3, generator=gen, dtype=torch.float64)])
        q = p.detach().clone().requires_grad_(True)
        q.grad = p.grad.clone()
        grad_object = p.grad
        want = torch.nn.utils.clip_grad_norm_(q, 0.5, norm_type=norm_type)
        got = run_learner(impl, p, 0.5, norm_type=norm_type)
        label = f"a single (4, 3) tensor passed as parameters, norm_type={norm_type}"
        assert_close(assert_tensor(got, name=label), want, **TOL64,
                     name=f"{label}: the returned norm (a tensor is one parameter, not rows)")
        assert p.grad is grad_object, f"{label}: .grad was replaced, scale it in place"
        assert_close(p.grad, q.grad, **TOL64, name=f"{label}: the gradient after clipping")


@pytest.mark.points(2)
def test_a_generator_is_consumed_once(impl):
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()
    model(torch.randn(5, 3, dtype=torch.float64)).pow(2).sum().mul(10).backward()
    params = list(model.parameters())
    expected = clone_params(params)
    want = torch.nn.utils.clip_grad_norm_(expected, 0.1)
    got = run_learner(impl, model.parameters(), 0.1)
    label = "model.parameters() (a generator) with max_norm=0.1"
    assert_close(assert_tensor(got, name=label), want, **TOL64, name=f"{label}: the returned norm")
    for (name, p), q in zip(model.named_parameters(), expected):
        assert_close(p.grad, q.grad, **TOL64,
                     name=f"{label}: {name}.grad (a generator can only be iterated once)")


@pytest.mark.points(2)
def test_zero_gradients_give_no_nan(impl):
    for max_norm in (1.0, 0.0):
        params = make_params([torch.zeros(3), torch.zeros(2, 2)])
        norm = check_against_torch(impl, params, max_norm,
                                   label=f"all-zero gradients, max_norm={max_norm}")
        assert float(norm) == 0.0
        for p in params:
            assert not p.grad.isnan().any(), (
                f"all-zero gradients with max_norm={max_norm} became nan: "
                "divide by total_norm + 1e-6, not by total_norm")


@pytest.mark.points(2)
def test_epsilon_is_torchs(impl):
    """coef = max_norm / (total_norm + 1e-6): visible when the norm is small or equals max_norm."""
    check_against_torch(impl, make_params([torch.tensor([6e-4, 8e-4])]), 1e-4,
                        label="a gradient of norm 1e-3 with max_norm=1e-4 (coefficient "
                              "1e-4 / (1e-3 + 1e-6), not 0.1)")
    check_against_torch(impl, make_params([torch.tensor([3.0, 4.0])]), 5.0,
                        label="a gradient of norm 5 with max_norm=5 (coefficient 5 / (5 + 1e-6))")


@pytest.mark.points(2)
@pytest.mark.parametrize("bad", [INF, float("nan")], ids=["inf", "nan"])
def test_non_finite_gradients(impl, bad):
    grads = [torch.tensor([1.0, bad]), torch.tensor([2.0])]
    params = make_params(grads)
    before = [p.grad.clone() for p in params]
    with pytest.raises(RuntimeError):
        run_learner(impl, params, 1.0, error_if_nonfinite=True)
    for i, (p, g) in enumerate(zip(params, before)):
        assert_close(p.grad, g, rtol=0, atol=0, equal_nan=True,
                     name=f"gradient {i} after the RuntimeError (nothing may change before it)")
    for norm_type in (2.0, INF):
        check_against_torch(impl, make_params(grads), 1.0, norm_type=norm_type,
                            label=f"a gradient holding {bad}, error_if_nonfinite=False, "
                                  f"norm_type={norm_type} (clipped with the formula anyway)")
    check_against_torch(impl, make_params([torch.tensor([3.0, 4.0])]), 1.0,
                        error_if_nonfinite=True,
                        label="finite gradients with error_if_nonfinite=True (no error)")


@pytest.mark.parametrize("device", device_params(meta=True))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_devices_and_dtypes(impl, device, dtype):
    gen = torch.Generator().manual_seed(3)
    grads = [torch.randn(5, 4, generator=gen), None, torch.randn(7, generator=gen)]
    params = make_params(grads, [(5, 4), (3,), (7,)], dtype=dtype, device=device)
    label = f"{dtype} gradients on {device}"
    if device == "meta":
        try:
            got = run_learner(impl, params, 1.0)
        except RuntimeError as exc:
            raise AssertionError(
                f"{label}: clip_grad_norm raised {exc!s:.200} -- the computation must stay on the "
                "device: no .item(), float(tensor) or Python `if` on the norm (use torch.clamp)"
            ) from None
        got = assert_tensor(got, name=f"{label}: the returned norm")
        assert_device(got, "meta", name=f"{label}: the returned norm")
        assert got.dim() == 0 and got.dtype == dtype, (
            f"{label}: expected a 0-dim {dtype} norm, got shape {tuple(got.shape)}, {got.dtype}")
        for i in (0, 2):
            assert_device(params[i].grad, "meta", name=f"{label}: gradient {i}")
        return
    norm = check_against_torch(impl, params, 1.0, label=label)
    assert_device(norm, device, name=f"{label}: the returned norm")
    assert norm.dtype == dtype, f"{label}: the returned norm is {norm.dtype}, expected {dtype}"


def params_on(devices: tuple[str, str]) -> list[torch.Tensor]:
    """A parameter without .grad on ``devices[1]``, then gradients on ``devices[0]`` and ``devices[1]``:
    the first *gradient* is on ``devices[0]``."""
    gen = torch.Generator().manual_seed(6)
    grads = [torch.randn(4, 3, generator=gen, dtype=torch.float64) * 2,
             torch.randn(5, generator=gen, dtype=torch.float64)]
    return [make_params([None], [(2,)], device=devices[1])[0],
            *(make_params([g], device=d)[0] for g, d in zip(grads, devices))]


@pytest.mark.cuda
@pytest.mark.parametrize("devices", [("cuda", "cpu"), ("cpu", "cuda")], ids=["cuda-first", "cpu-first"])
def test_gradients_on_two_devices(impl, devices):
    label = f"a parameter without .grad on {devices[1]}, then gradients on {devices[0]} and {devices[1]}"
    norm = check_against_torch(impl, params_on(devices), 1.0, label=label)
    assert_device(norm, devices[0], name=f"{label}: the returned norm (on the first gradient's device)")


@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
def test_under_autocast(impl, low):
    gen = torch.Generator().manual_seed(4)
    grads = [torch.randn(6, 5, generator=gen) * 3, torch.randn(5, generator=gen)]
    params = make_params(grads, dtype=torch.float32)
    expected = clone_params(params)
    want = torch.nn.utils.clip_grad_norm_(expected, 1.0)
    with torch.autocast("cpu", dtype=low):
        got = run_learner(impl, params, 1.0)
    label = f"float32 gradients inside torch.autocast('cpu', dtype={low})"
    got = assert_tensor(got, name=label)
    assert got.dtype == torch.float32, f"{label}: the returned norm is {got.dtype}, expected float32"
    assert_close(got, want, **TOL32, name=f"{label}: the returned norm")
    for i, (p, q) in enumerate(zip(params, expected)):
        assert_close(p.grad, q.grad, **TOL32, name=f"{label}: gradient {i}")


def one_param() -> list[torch.Tensor]:
    return make_params([torch.tensor([3.0, 4.0])])


# Each bad argument alone, every other argument valid, so a check on the wrong argument fails.
@pytest.mark.parametrize("bad", ["1.0", None], ids=["str", "None"])
def test_max_norm_not_a_real_number_raises_type_error(impl, bad):
    assert_raises_naming(TypeError, "max_norm", impl.clip_grad_norm, one_param(), bad)


@pytest.mark.parametrize("bad", [-1.0, -1e-12, -INF, float("nan")], ids=["-1", "-1e-12", "-inf", "nan"])
def test_max_norm_negative_or_nan_raises_value_error(impl, bad):
    assert_raises_naming(ValueError, "max_norm", impl.clip_grad_norm, one_param(), bad)


@pytest.mark.parametrize("bad", ["2", "inf", None], ids=["str", "str-inf", "None"])
def test_norm_type_not_a_real_number_raises_type_error(impl, bad):
    assert_raises_naming(TypeError, "norm_type", impl.clip_grad_norm, one_param(), 1.0, norm_type=bad)


@pytest.mark.parametrize("bad", [0, 0.0, -1.0, -INF, float("nan")], ids=["int0", "0.0", "-1", "-inf", "nan"])
def test_norm_type_not_positive_raises_value_error(impl, bad):
    assert_raises_naming(ValueError, "norm_type", impl.clip_grad_norm, one_param(), 1.0, norm_type=bad)


@pytest.mark.parametrize("bad", [3.0, [1.0, 2.0], None], ids=["float", "list-of-floats", "None"])
def test_parameters_not_tensors_raise_type_error(impl, bad):
    assert_raises_naming(TypeError, "parameters", impl.clip_grad_norm, bad, 1.0)


@pytest.mark.parametrize("max_norm", [0.0, 0, INF, 1, 10**20], ids=["0.0", "int0", "inf", "int1", "int1e20"])
def test_allowed_max_norm_ends_and_ints(impl, max_norm):
    """max_norm=0 zeroes the gradients, inf never clips, and an int is a real number too, however
    large (torch takes 10**20, which no int64 holds)."""
    check_against_torch(impl, one_param(), max_norm, label=f"max_norm={max_norm!r}")


@pytest.mark.points(2)
@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.0, 0.5, INF, 2, 1e-3],
                         ids=["1", "2", "3", "0.5", "inf", "int2", "1e-3"])
def test_each_norm_type_matches_torch(impl, norm_type):
    """Every norm the contract names, on several gradients of mixed signs (one without .grad)."""
    gen = torch.Generator().manual_seed(5)
    grads = [torch.randn(3, 2, generator=gen, dtype=torch.float64), None,
             torch.randn(4, generator=gen, dtype=torch.float64) * 3]
    check_against_torch(impl, make_params(grads, [(3, 2), (2,), (4,)]), 0.5, norm_type=norm_type,
                        label=f"three parameters (one without .grad), norm_type={norm_type!r}")


@pytest.mark.parametrize("kind", ["list", "tuple", "generator", "dict values"])
def test_container_kinds(impl, kind):
    """A list, a tuple, a one-shot generator or any other iterable of tensors."""
    gen = torch.Generator().manual_seed(6)
    grads = [torch.randn(2, 3, generator=gen, dtype=torch.float64) * 4, None,
             torch.randn(5, generator=gen, dtype=torch.float64)]
    params = make_params(grads, [(2, 3), (4,), (5,)])
    expected = clone_params(params)
    want = torch.nn.utils.clip_grad_norm_(expected, 1.0)
    source = {"list": lambda: list(params), "tuple": lambda: tuple(params),
              "generator": lambda: (p for p in params),
              "dict values": lambda: dict(enumerate(params)).values()}[kind]()
    got = run_learner(impl, source, 1.0)
    label = f"parameters given as a {kind} of 3 tensors (one without .grad), max_norm=1"
    assert_close(assert_tensor(got, name=label), want, **TOL64, name=f"{label}: the returned norm")
    for i, (p, q) in enumerate(zip(params, expected)):
        if q.grad is not None:
            assert_close(p.grad, q.grad, **TOL64, name=f"{label}: gradient {i} after clipping")
