"""Hidden tests for pytorch.nn.functional_vs_module (the catalog's contract checks)."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import example, given, settings
from hypothesis import strategies as st
from torch import nn

from grader.checks import (
    assert_close,
    assert_device,
    assert_raises_naming,
    assert_shape,
    check_gradients,
    count_aten_ops,
    device_params,
    shapes,
)

NORM_KERNELS = ("layer_norm", "group_norm", "batch_norm", "instance_norm", "rms_norm")


def split_shape(full: tuple[int, ...], k: int) -> tuple[int, ...]:
    return full[len(full) - k:]


# ---------------------------------------------------------------- layer_norm (functional)

@pytest.mark.points(0.5)
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
@given(full=shapes(min_dims=1, max_dims=4), k=st.integers(1, 3), as_int=st.booleans(),
       eps=st.sampled_from([1e-5, 1e-3, 0.1]), seed=st.integers(0, 2**16))
@example(full=(3, 5), k=1, as_int=True, eps=1e-5, seed=0)  # normalized_shape given as an int
@example(full=(3, 5), k=1, as_int=False, eps=0.0, seed=1)  # eps = 0, the included end
def test_layer_norm_matches_torch_over_shapes(impl, affine, full, k, as_int, eps, seed):
    k = min(k, len(full))
    norm_shape = split_shape(full, k)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(full, generator=gen, dtype=torch.float64) * 3 + 1
    w = torch.randn(norm_shape, generator=gen, dtype=torch.float64) if affine in ("weight", "both") else None
    b = torch.randn(norm_shape, generator=gen, dtype=torch.float64) if affine in ("bias", "both") else None
    arg = norm_shape[0] if as_int and k == 1 else norm_shape
    name = (f"layer_norm(x{full}, {arg!r}, weight={'given' if w is not None else None}, "
            f"bias={'given' if b is not None else None}, eps={eps})")
    out = impl.layer_norm(x, arg, w, b, eps)
    assert_close(out, F.layer_norm(x, norm_shape, w, b, eps), rtol=1e-8, atol=1e-8, name=name)


def test_layer_norm_uses_biased_variance(impl):
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=torch.float64)
    expected = (x - 2.5) / torch.sqrt(torch.tensor(1.25 + 1e-5, dtype=torch.float64))
    assert_close(impl.layer_norm(x, 4), expected, rtol=1e-9, atol=1e-9,
                 name="layer_norm([[1, 2, 3, 4]], 4) (variance divides by N, not N - 1)")


def test_layer_norm_normalises_all_trailing_dims(impl):
    # Rows of very different scale: normalising each last-dim row separately gives other values.
    x = torch.randn(3, 4, 5, dtype=torch.float64) * torch.arange(1, 5, dtype=torch.float64).view(4, 1)
    flat = x.reshape(3, 20)
    mean = flat.mean(-1, keepdim=True)
    var = ((flat - mean) ** 2).mean(-1, keepdim=True)
    expected = ((flat - mean) / torch.sqrt(var + 1e-5)).reshape(3, 4, 5)
    assert_close(impl.layer_norm(x, (4, 5)), expected, rtol=1e-9, atol=1e-9,
                 name="layer_norm(x(3, 4, 5), (4, 5)) (mean and variance over both trailing dims)")


@pytest.mark.points(2)
def test_layer_norm_stable_with_large_offset(impl):
    gen = torch.Generator().manual_seed(0)
    x = 1000.0 + torch.randn(16, 64, generator=gen)
    w, b = torch.rand(64, generator=gen) + 0.5, torch.randn(64, generator=gen)
    exact = F.layer_norm(x.double(), (64,), w.double(), b.double()).float()
    out = impl.layer_norm(x, 64, w, b)
    assert_close(out, exact, rtol=0, atol=2e-3,
                 name="float32 layer_norm of rows 1000 + randn(64) vs the exact result "
                      "(catastrophic cancellation in the variance?)")


@pytest.mark.points(2)
@settings(max_examples=6)
@given(full=shapes(min_dims=1, max_dims=3, max_side=3), k=st.integers(1, 2))
def test_layer_norm_gradients_match_finite_differences(impl, full, k):
    k = min(k, len(full))
    norm_shape = split_shape(full, k)
    x = torch.randn(full, dtype=torch.float64)
    w, b = torch.randn(norm_shape, dtype=torch.float64), torch.randn(norm_shape, dtype=torch.float64)
    check_gradients(lambda x, w, b: impl.layer_norm(x, norm_shape, w, b), x, w, b,
                    reference=lambda x, w, b: F.layer_norm(x, norm_shape, w, b),
                    name=f"layer_norm(x{full}, {norm_shape}, weight, bias)", second_order=True)


def test_layer_norm_is_from_scratch(impl):
    x = torch.randn(3, 8)
    _, ops = count_aten_ops(impl.layer_norm, x, 8, torch.ones(8), torch.zeros(8))
    used = sorted(op for op in ops if any(k in op for k in NORM_KERNELS))
    assert not used, (f"layer_norm dispatched the normalisation kernel(s) {used}: write it from "
                      "mean, variance and arithmetic instead")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16], ids=str)
def test_layer_norm_keeps_dtype(impl, dtype):
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(0)).to(dtype)
    out = impl.layer_norm(x, 6, torch.ones(6, dtype=dtype), torch.zeros(6, dtype=dtype))
    assert out.dtype == dtype, f"layer_norm on {dtype} input returned {out.dtype}"
    tol = {torch.bfloat16: 5e-2, torch.float16: 5e-3}.get(dtype, 1e-5)
    assert_close(out.float(), F.layer_norm(x.float(), (6,)), rtol=tol, atol=tol,
                 name=f"layer_norm on {dtype} input")


@pytest.mark.parametrize("device", device_params(meta=True))
def test_layer_norm_stays_on_device(impl, device):
    x = torch.randn(2, 3, 4, device=device)
    out = impl.layer_norm(x, (3, 4), torch.ones(3, 4, device=device), torch.zeros(3, 4, device=device))
    assert_shape(out, (2, 3, 4), name=f"layer_norm on {device}")
    assert_device(out, device, name=f"layer_norm on {device}")
    if device != "meta":
        assert_close(out.cpu(), F.layer_norm(x.cpu(), (3, 4)), rtol=1e-5, atol=1e-5,
                     name=f"layer_norm on {device}")


# Each case breaks exactly one rule; the shape mismatches keep the number of elements.
BAD_LAYER_NORM_ARGUMENTS = {
    "normalized_shape=3": ("normalized_shape", (3,), {}),
    "normalized_shape=(2, 4)": ("normalized_shape", ((2, 4),), {}),
    "normalized_shape=(4, 3) (same numel)": ("normalized_shape", ((4, 3),), {}),
    "normalized_shape=(5, 2, 3, 4)": ("normalized_shape", ((5, 2, 3, 4),), {}),
    "normalized_shape=()": ("normalized_shape", ((),), {}),
    "weight of shape (4,)": ("weight", ((3, 4), torch.ones(4)), {}),
    "weight of shape (12,) (same numel)": ("weight", ((3, 4), torch.ones(12)), {}),
    "bias of shape (4, 1)": ("bias", (4, None, torch.zeros(4, 1)), {}),
    "bias of shape (4, 3) (same numel)": ("bias", ((3, 4), None, torch.zeros(4, 3)), {}),
    "eps=-1e-5": ("eps", (4, None, None, -1e-5), {}),
    "eps=nan": ("eps", (4,), {"eps": math.nan}),
}


@pytest.mark.points(0.25)
@pytest.mark.parametrize("case", sorted(BAD_LAYER_NORM_ARGUMENTS))
def test_layer_norm_rejects_bad_arguments(impl, case):
    argname, args, kwargs = BAD_LAYER_NORM_ARGUMENTS[case]
    assert_raises_naming(ValueError, argname, impl.layer_norm, torch.randn(2, 3, 4), *args, **kwargs)


# ---------------------------------------------------------------- LayerNorm (module)

@given(shape=shapes(min_dims=1, max_dims=2), as_int=st.booleans())
def test_module_parameters_and_attributes(impl, shape, as_int):
    arg = shape[0] if as_int and len(shape) == 1 else shape
    ln = impl.LayerNorm(arg)
    name = f"LayerNorm({arg!r})"
    assert ln.normalized_shape == tuple(shape) and isinstance(ln.normalized_shape, tuple), (
        f"{name}.normalized_shape is {ln.normalized_shape!r}, expected the tuple {tuple(shape)}")
    assert ln.eps == 1e-5, f"{name}.eps is {ln.eps!r}, expected the default 1e-5"
    assert ln.elementwise_affine is True, (
        f"{name}.elementwise_affine is {getattr(ln, 'elementwise_affine', None)!r}, expected True")
    for pname, fill in (("weight", 1.0), ("bias", 0.0)):
        p = getattr(ln, pname, None)
        assert isinstance(p, nn.Parameter), (f"{name}.{pname} is {type(p).__name__}, expected an "
                                             "nn.Parameter (a plain tensor is never trained or saved)")
        assert_close(p.detach(), torch.full(shape, fill), name=f"{name}.{pname} at initialisation")
    keys = sorted(ln.state_dict())
    assert keys == ["bias", "weight"], f"{name}.state_dict() keys are {keys}, expected ['bias', 'weight']"
    params = {id(p) for p in ln.parameters()}
    assert params == {id(ln.weight), id(ln.bias)}, (
        f"{name}.parameters() must yield exactly weight and bias ({len(params)} found)")


def test_module_without_affine(impl):
    ln = impl.LayerNorm((3, 4), elementwise_affine=False)
    assert getattr(ln, "elementwise_affine", None) is False, (
        "LayerNorm(..., elementwise_affine=False).elementwise_affine must be False")
    assert ln.weight is None and ln.bias is None, (
        "LayerNorm(..., elementwise_affine=False): weight and bias must be None")
    assert not list(ln.parameters()), "LayerNorm(..., elementwise_affine=False) has parameters"
    assert not ln.state_dict(), "LayerNorm(..., elementwise_affine=False) has a non-empty state_dict"
    x = torch.randn(2, 3, 4)
    assert_close(ln(x), F.layer_norm(x, (3, 4)), rtol=1e-5, atol=1e-5,
                 name="LayerNorm((3, 4), elementwise_affine=False)(x)")


@pytest.mark.points(2)
def test_module_loads_torch_layer_norm_state(impl):
    torch.manual_seed(0)
    theirs = nn.LayerNorm((3, 5), eps=1e-3)
    with torch.no_grad():
        theirs.weight.normal_()
        theirs.bias.normal_()
    ours = impl.LayerNorm((3, 5), eps=1e-3)
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(4, 3, 5)
    assert_close(ours(x), theirs(x), rtol=1e-5, atol=1e-5,
                 name="LayerNorm after load_state_dict(nn.LayerNorm(...).state_dict())")
    back = nn.LayerNorm((3, 5), eps=1e-3)
    back.load_state_dict(ours.state_dict())
    assert_close(back.weight.detach(), theirs.weight.detach(),
                 name="nn.LayerNorm loaded from your LayerNorm's state_dict: weight")


@pytest.mark.parametrize("eps", [0.5, 0.0], ids=str)  # eps = 0 is allowed, as for layer_norm
def test_module_forward_uses_its_eps(impl, eps):
    ln = impl.LayerNorm(6, eps=eps)
    assert ln.eps == eps, f"LayerNorm(6, eps={eps}).eps is {ln.eps!r}"
    x = torch.randn(5, 6, dtype=torch.float64) * 0.5
    assert_close(ln.double()(x), F.layer_norm(x, (6,), eps=eps), rtol=1e-9, atol=1e-9,
                 name=f"LayerNorm(6, eps={eps})(x) (forward must pass self.eps on)")


def test_module_trains_weight_and_bias(impl):
    ln = impl.LayerNorm(6)
    x = torch.randn(5, 6)
    target = torch.randn(5, 6)
    ((ln(x) - target) ** 2).sum().backward()
    for pname in ("weight", "bias"):
        g = getattr(ln, pname).grad
        assert g is not None and bool(g.abs().sum() > 0), (
            f"LayerNorm.{pname} received no gradient from a loss on the output")


@pytest.mark.parametrize("device", device_params(meta=True))
def test_module_moves_with_to(impl, device):
    ln = impl.LayerNorm(4).to(device)
    assert_device(ln.weight, device, name=f"LayerNorm(4).to({device!r}).weight")
    out = ln(torch.randn(3, 4, device=device))
    assert_device(out, device, name=f"LayerNorm(4).to({device!r})(x)")
    ln64 = impl.LayerNorm(4).double()
    assert ln64.weight.dtype == torch.float64, "LayerNorm(4).double().weight is not float64"


# ---------------------------------------------------------------- sequential_mlp

def expected_children(sizes):
    out = []
    n = len(sizes) - 1
    for i in range(1, n + 1):
        out.append((f"fc{i}", nn.Linear, (sizes[i - 1], sizes[i])))
        if i < n:
            out.append((f"act{i}", nn.ReLU, None))
    return out


@pytest.mark.points(2)
@given(sizes=st.lists(st.integers(1, 6), min_size=2, max_size=5), as_tuple=st.booleans())
@example(sizes=[3, 2], as_tuple=False)  # two sizes: a single Linear, no activation
@example(sizes=[4, 3, 2], as_tuple=True)  # a tuple is a sequence too
def test_sequential_named_children_and_keys(impl, sizes, as_tuple):
    model = impl.sequential_mlp(tuple(sizes) if as_tuple else sizes)
    name = f"sequential_mlp({sizes})"
    assert isinstance(model, nn.Sequential), f"{name} returned {type(model).__name__}, not nn.Sequential"
    children = list(model.named_children())
    want = expected_children(sizes)
    assert [c[0] for c in children] == [w[0] for w in want], (
        f"{name}: children are named {[c[0] for c in children]}, expected {[w[0] for w in want]}")
    for (cname, child), (_, kind, dims) in zip(children, want):
        assert isinstance(child, kind), f"{name}.{cname} is {type(child).__name__}, expected {kind.__name__}"
        if dims is not None:
            got = (child.in_features, child.out_features)
            assert got == dims, f"{name}.{cname} maps {got[0]} -> {got[1]}, expected {dims[0]} -> {dims[1]}"
    keys = list(model.state_dict())
    want_keys = [f"fc{i}.{p}" for i in range(1, len(sizes)) for p in ("weight", "bias")]
    assert keys == want_keys, f"{name}.state_dict() keys are {keys}, expected {want_keys}"


def test_sequential_forward(impl):
    torch.manual_seed(0)
    model = impl.sequential_mlp([3, 5, 4, 2])
    x = torch.randn(7, 3)
    h = F.relu(F.linear(x, model.fc1.weight, model.fc1.bias))
    h = F.relu(F.linear(h, model.fc2.weight, model.fc2.bias))
    expected = F.linear(h, model.fc3.weight, model.fc3.bias)
    assert_close(model(x), expected, name="sequential_mlp([3, 5, 4, 2])(x)")


@pytest.mark.points(0.25)
@pytest.mark.parametrize("sizes", [[4], [], [4, 0, 2], [4, -3], [4, 2.0], [4, 2.5, 2]], ids=str)
def test_sequential_rejects_bad_sizes(impl, sizes):
    assert_raises_naming(ValueError, "sizes", impl.sequential_mlp, sizes)
