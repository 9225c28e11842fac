"""Hidden tests for pytorch.deploy.quantization (the catalog's contract checks).

Scales and zero points are compared with the docstring's formulas evaluated here in float64 on
the input; the round trip is checked against the input itself (error at most half a step), and
QuantLinear against ``F.linear`` with a weight quantized here, row by row.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.checks import assert_close, assert_device, assert_raises_naming, device_params

BITS = (2, 3, 4, 5, 6, 7, 8)


def int_range(num_bits: int, symmetric: bool) -> tuple[int, int]:
    qmax = 2 ** (num_bits - 1) - 1
    return (-qmax if symmetric else -qmax - 1), qmax


def expected_params(x: torch.Tensor, num_bits: int, symmetric: bool, axis):
    """(scale, zero_point) by the docstring's formulas, float64 / int64, shaped as promised."""
    qmin, qmax = int_range(num_bits, symmetric)
    xd = x.double()
    if axis is None:
        slices = xd.reshape(1, -1)
    else:
        slices = xd.movedim(axis, 0).reshape(x.shape[axis], -1)
    if symmetric:
        scale = slices.abs().amax(dim=1) / qmax
    else:
        lo, hi = slices.amin(dim=1).clamp(max=0), slices.amax(dim=1).clamp(min=0)
        scale = (hi - lo) / (qmax - qmin)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    if symmetric:
        zero_point = torch.zeros_like(scale, dtype=torch.int64)
    else:
        zero_point = (qmin - torch.round(lo / scale.float().double())).clamp(qmin, qmax).long()
    if axis is None:
        return scale.reshape(()), zero_point.reshape(())
    return scale, zero_point


def channel_shape(x: torch.Tensor, axis) -> tuple[int, ...]:
    if axis is None:
        return ()
    axis %= x.dim()
    return tuple(n if d == axis else 1 for d, n in enumerate(x.shape))


def check_quantized(impl, x, num_bits, symmetric, axis, label):
    """Everything the contract promises about one quantize() call."""
    q, scale, zero_point = impl.quantize(x, num_bits, symmetric, axis)
    want_scale, want_zp = expected_params(x, num_bits, symmetric, axis)
    qmin, qmax = int_range(num_bits, symmetric)
    assert isinstance(q, torch.Tensor) and q.dtype == torch.int8 and q.shape == x.shape, (
        f"{label}: q should be an int8 tensor of shape {tuple(x.shape)}, got "
        f"{getattr(q, 'dtype', type(q).__name__)} {tuple(getattr(q, 'shape', ()))}")
    assert_close(scale, want_scale.float(), rtol=1e-6, atol=0, name=f"{label}: scale")
    assert_close(zero_point, want_zp, name=f"{label}: zero_point")
    assert int(q.min()) >= qmin and int(q.max()) <= qmax, (
        f"{label}: q spans [{int(q.min())}, {int(q.max())}], outside the integer range [{qmin}, {qmax}]")
    shape = channel_shape(x, axis)
    back = (q.double() - want_zp.reshape(shape).double()) * scale.double().reshape(shape)
    err = (back - x.double()).abs()
    bound = scale.double().reshape(shape) / 2 * (1 + 1e-6) + 1e-6 * x.double().abs()
    bad = err > bound
    assert not bool(bad.any()), (
        f"{label}: (q - zero_point) * scale is {float(err[bad].max()):.3g} away from x at "
        f"{int(bad.sum())} of {x.numel()} values; it must be within scale / 2 (round to nearest)")
    return q, scale, zero_point


# -- argument checks ---------------------------------------------------------------------------

@pytest.mark.points(1)
@pytest.mark.parametrize("x", [
    pytest.param(torch.arange(6), id="int64"),
    pytest.param(torch.randn(6).half(), id="float16"),
    pytest.param([0.5, -1.0], id="list"),
])
def test_x_that_is_not_float32_or_float64_raises_type_error(impl, x):
    assert_raises_naming(TypeError, "x", impl.quantize, x)


@pytest.mark.points(1)
@pytest.mark.parametrize("num_bits", [1, 9, 0, 4.0])  # 4.0: in range, but not an int
def test_num_bits_outside_2_to_8_raises_value_error(impl, num_bits):
    assert_raises_naming(ValueError, "num_bits", impl.quantize, torch.randn(5), num_bits)


@pytest.mark.points(1)
@pytest.mark.parametrize("num_bits", [2, 8])
@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "asymmetric"])
def test_num_bits_at_both_ends_is_accepted(impl, num_bits, symmetric):
    x = torch.linspace(-1.0, 3.0, 9)
    check_quantized(impl, x, num_bits, symmetric, None, f"num_bits={num_bits}, symmetric={symmetric}")


@pytest.mark.points(1)
@pytest.mark.parametrize("axis", [3, -4, 10])
def test_axis_outside_the_dims_raises_value_error(impl, axis):
    assert_raises_naming(ValueError, "axis", impl.quantize, torch.randn(2, 3, 4), 8, True, axis)


@pytest.mark.points(1)
@pytest.mark.parametrize("axis", [-3, 2])
def test_axis_at_both_ends_is_accepted(impl, axis):
    x = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(axis + 5))
    check_quantized(impl, x, 8, True, axis, f"x of shape (2, 3, 4), axis={axis}")


# -- values --------------------------------------------------------------------------------------

@pytest.mark.points(2)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("num_bits", BITS)
def test_symmetric_scale_zero_point_and_round_trip_per_tensor(impl, dtype, num_bits):
    x = torch.randn(5, 7, generator=torch.Generator().manual_seed(num_bits), dtype=dtype) * 3
    check_quantized(impl, x, num_bits, True, None, f"symmetric, num_bits={num_bits}, {dtype}")


@pytest.mark.points(2)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("num_bits", BITS)
def test_asymmetric_scale_zero_point_and_round_trip_per_tensor(impl, dtype, num_bits):
    x = torch.rand(5, 7, generator=torch.Generator().manual_seed(num_bits), dtype=dtype) * 4 - 1
    check_quantized(impl, x, num_bits, False, None, f"asymmetric, num_bits={num_bits}, {dtype}")


@pytest.mark.points(2)
@pytest.mark.parametrize("data", [
    pytest.param([0.5, 1.0, 2.0, 4.0], id="all-positive"),
    pytest.param([-4.0, -2.0, -0.5], id="all-negative"),
    pytest.param([3.0], id="one-value"),
])
def test_asymmetric_range_always_includes_zero(impl, data):
    x = torch.tensor(data)
    check_quantized(impl, x, 8, False, None, f"asymmetric, x={data}")


@pytest.mark.points(2)
@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "asymmetric"])
@pytest.mark.parametrize("axis", [None, 0], ids=["per-tensor", "axis0"])
def test_all_zero_input_gets_scale_one(impl, symmetric, axis):
    x = torch.zeros(3, 4)
    q, scale, zero_point = check_quantized(impl, x, 8, symmetric, axis, f"all-zero x, symmetric={symmetric}")
    assert bool(torch.isfinite(scale).all()) and bool((scale == 1.0).all()), (
        f"all-zero x: scale is {scale.tolist()}, expected 1.0 (never 0, NaN or inf)")


@pytest.mark.points(1)
def test_a_range_wider_than_float32_max_still_gets_a_finite_scale(impl):
    # hi - lo = 5e38 overflows float32 (max 3.4e38), but the scale (hi - lo) / 255 ~ 2e36 does not.
    x = torch.tensor([-3e38, 0.0, 1e38, 2e38])
    _, scale, _ = check_quantized(impl, x, 8, False, None, "asymmetric float32 x from -3e38 to 2e38")
    assert bool(torch.isfinite(scale).all()), f"scale is {scale.tolist()}: it must never be inf"


@pytest.mark.points(1)
@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "asymmetric"])
def test_a_range_too_small_for_a_float32_scale_still_gets_a_positive_scale(impl, symmetric):
    # max|x| / 127 (or the range / 255) for the smallest float32 subnormal is below float32's
    # smallest value: it rounds to 0 unless guarded after the rounding.
    x = torch.tensor([1e-45, -1e-45, 0.0])
    _, scale, _ = impl.quantize(x, 8, symmetric)
    assert bool(torch.isfinite(scale).all()) and bool((scale > 0).all()), (
        f"x = [1e-45, -1e-45, 0]: scale is {scale.tolist()}; it must never be 0, NaN or inf")


@pytest.mark.points(2)
@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "asymmetric"])
def test_a_zero_channel_among_others_gets_scale_one(impl, symmetric):
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(1))
    x[2] = 0
    q, scale, _ = check_quantized(impl, x, 8, symmetric, 0, f"row 2 all zero, axis=0, symmetric={symmetric}")
    assert float(scale[2]) == 1.0, f"the all-zero channel got scale {float(scale[2])}, expected 1.0"


@pytest.mark.points(2)
@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "asymmetric"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2])
def test_per_channel_uses_each_slice_alone(impl, symmetric, axis):
    gen = torch.Generator().manual_seed(axis + 10)
    x = torch.randn(3, 4, 5, generator=gen)
    # Channels of very different magnitudes along every axis: a per-tensor scale cannot pass.
    for d, n in enumerate(x.shape):
        x = x * (10.0 ** torch.arange(n, dtype=x.dtype)).reshape([n if e == d else 1 for e in range(3)])
    q, scale, zero_point = check_quantized(impl, x, 8, symmetric, axis,
                                           f"x of shape (3, 4, 5), axis={axis}, symmetric={symmetric}")
    n = x.shape[axis]
    assert scale.shape == (n,) and scale.dtype == torch.float32, (
        f"axis={axis}: scale should be a float32 tensor of shape ({n},), got {scale.dtype} {tuple(scale.shape)}")
    assert zero_point.shape == (n,) and zero_point.dtype == torch.int64, (
        f"axis={axis}: zero_point should be an int64 tensor of shape ({n},), got "
        f"{zero_point.dtype} {tuple(zero_point.shape)}")


@pytest.mark.points(1)
@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "asymmetric"])
def test_per_tensor_scale_and_zero_point_are_0_dim(impl, symmetric):
    _, scale, zero_point = impl.quantize(torch.randn(3, 4), 8, symmetric)
    assert isinstance(scale, torch.Tensor) and scale.shape == () and scale.dtype == torch.float32, (
        f"per tensor, scale should be a 0-dim float32 tensor, got {getattr(scale, 'dtype', type(scale).__name__)} "
        f"{tuple(getattr(scale, 'shape', ()))}")
    assert (isinstance(zero_point, torch.Tensor) and zero_point.shape == ()
            and zero_point.dtype == torch.int64), (
        f"per tensor, zero_point should be a 0-dim int64 tensor, got "
        f"{getattr(zero_point, 'dtype', type(zero_point).__name__)} {tuple(getattr(zero_point, 'shape', ()))}")


@pytest.mark.points(2)
@settings(max_examples=25)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), num_bits=st.sampled_from(BITS),
       symmetric=st.booleans(), axis_pick=st.integers(-1, 2), spread=st.floats(1e-3, 1e3),
       offset=st.floats(-2, 2), seed=st.integers(0, 2**16))
@example(shape=[1], num_bits=8, symmetric=True, axis_pick=-1, spread=1.0, offset=0.0, seed=0)
@example(shape=[3, 1], num_bits=2, symmetric=False, axis_pick=1, spread=1.0, offset=1.5, seed=1)
def test_round_trip_is_within_half_a_step(impl, shape, num_bits, symmetric, axis_pick, spread, offset, seed):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=gen, dtype=torch.float64) + offset) * spread
    axis = None if axis_pick < 0 else axis_pick % len(shape)
    label = f"x of shape {tuple(shape)}, num_bits={num_bits}, symmetric={symmetric}, axis={axis}"
    q, scale, zero_point = check_quantized(impl, x, num_bits, symmetric, axis, label)
    back = impl.dequantize(q, scale, zero_point, axis)
    assert_close(back, ((q.double() - zero_point.double().reshape(channel_shape(x, axis)))
                        * scale.double().reshape(channel_shape(x, axis))).float(),
                 name=f"{label}: dequantize(quantize(x))")


@pytest.mark.points(1)
@pytest.mark.parametrize("device", device_params())
def test_outputs_stay_on_the_input_device(impl, device):
    x = torch.randn(4, 3, device=device)
    q, scale, zero_point = impl.quantize(x, 8, False, 1)
    for name, t in (("q", q), ("scale", scale), ("zero_point", zero_point)):
        assert_device(t, device, name=name)
    assert_device(impl.dequantize(q, scale, zero_point, 1), device, name="dequantize(...)")


# -- dequantize ----------------------------------------------------------------------------------

@pytest.mark.points(2)
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_dequantize_is_q_minus_zero_point_times_scale(impl, axis):
    gen = torch.Generator().manual_seed(3)
    q = torch.randint(-128, 128, (3, 4), generator=gen, dtype=torch.int8)
    n = 1 if axis is None else q.shape[axis]
    scale = (torch.rand(n, generator=gen) + 0.1).reshape(() if axis is None else (n,))
    zero_point = torch.randint(-5, 5, (n,), generator=gen).reshape(() if axis is None else (n,))
    shape = channel_shape(q, axis)
    want = (q.double() - zero_point.double().reshape(shape)) * scale.double().reshape(shape)
    assert_close(impl.dequantize(q, scale, zero_point, axis), want.float(), name=f"dequantize, axis={axis}")


# -- QuantLinear -----------------------------------------------------------------------------------

def reference_quantized_weight(weight: torch.Tensor) -> torch.Tensor:
    scale = weight.double().abs().amax(dim=1, keepdim=True) / 127
    scale = torch.where(scale > 0, scale, torch.ones_like(scale)).float().double()
    return (torch.round(weight.double() / scale).clamp(-127, 127) * scale).float()


@pytest.mark.points(1)
@pytest.mark.parametrize("layer", [
    pytest.param(lambda: torch.nn.Conv1d(2, 3, 1), id="Conv1d"),
    pytest.param(lambda: torch.randn(3, 2), id="tensor"),
])
def test_from_float_rejects_what_is_not_a_linear(impl, layer):
    assert_raises_naming(TypeError, "linear", impl.QuantLinear.from_float, layer())


@pytest.mark.points(3)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("n_in, n_out", [(16, 4), (3, 7), (2, 1)])
def test_quant_linear_forward_equals_linear_with_the_quantized_weight(impl, bias, n_in, n_out):
    torch.manual_seed(n_in * 10 + n_out)
    linear = torch.nn.Linear(n_in, n_out, bias=bias)
    with torch.no_grad():  # rows of very different magnitudes: one scale per row is needed
        linear.weight.mul_(10.0 ** torch.arange(n_out, dtype=torch.float32)[:, None] / n_out)
        linear.weight[0, 0] = 0.0
    x = torch.randn(5, n_in)
    got = impl.QuantLinear.from_float(linear)(x)
    want = F.linear(x, reference_quantized_weight(linear.weight.detach()), linear.bias)
    assert_close(got.detach(), want.detach(), rtol=1e-5, atol=1e-5,
                 name=f"QuantLinear({n_in}, {n_out}, bias={bias}) output")


@pytest.mark.points(1)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16],
                         ids=["float64", "float16", "bfloat16"])
def test_from_float_takes_a_linear_of_any_float_dtype(impl, dtype):
    torch.manual_seed(7)
    linear = torch.nn.Linear(6, 3).to(dtype)
    x = torch.randn(4, 6)
    weight, bias = linear.weight.detach().float(), linear.bias.detach().float()  # exact conversions
    want = F.linear(x, reference_quantized_weight(weight), bias)
    got = impl.QuantLinear.from_float(linear)(x)
    assert_close(got.detach(), want, rtol=1e-5, atol=1e-5, check_dtype=False,
                 name=f"QuantLinear of a {dtype} nn.Linear(6, 3), float32 x")


@pytest.mark.points(1)
def test_quant_linear_with_an_all_zero_weight(impl):
    linear = torch.nn.Linear(4, 3)
    with torch.no_grad():
        linear.weight.zero_()
    x = torch.randn(2, 4)
    out = impl.QuantLinear.from_float(linear)(x).detach()
    assert_close(out, linear(x).detach(), rtol=1e-6, atol=1e-6, name="QuantLinear of an all-zero weight")


@pytest.mark.points(1)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_state_dict_holds_the_weight_as_int8_only(impl, bias):
    linear = torch.nn.Linear(8, 5, bias=bias)
    state = impl.QuantLinear.from_float(linear).state_dict()
    int8 = [k for k, v in state.items() if v.dtype == torch.int8 and tuple(v.shape) == (5, 8)]
    assert len(int8) == 1, (f"the state_dict should hold the weight as one int8 tensor of shape (5, 8); "
                            f"it holds {[(k, str(v.dtype), tuple(v.shape)) for k, v in state.items()]}")
    big = [k for k, v in state.items() if v.is_floating_point() and v.numel() > 5]
    assert big == [], (f"the state_dict keeps floating-point tensors larger than out_features (a float "
                       f"copy of the weight?): {big}")
