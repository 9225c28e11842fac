"""Hidden tests for pytorch.tensors.creation_ops (the catalog's contract checks)."""

import math
import re
import warnings

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, strategies as st

from grader.checks import (assert_close, assert_device, assert_raises_naming, assert_shape,
                           device_params)

# Each error case isolates one rule, so there are many of them; together they must not outweigh
# the value tests (a submission returning constants passes every one).
ERROR_CASE_POINTS = 0.5

# ---------------------------------------------------------------------------------------------
# Independent references.


def reference_positions(seq_len: int, dim: int, base: float) -> torch.Tensor:
    """The formula, one element at a time, in Python float64 arithmetic."""
    rows = []
    for p in range(seq_len):
        row = []
        for i in range(dim // 2):
            angle = p * base ** (-2 * i / dim)
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64).reshape(seq_len, dim)


def reference_grid(h: int, w: int) -> torch.Tensor:
    """``F.affine_grid`` of the identity transform with align_corners=True."""
    theta = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], dtype=torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # affine_grid warns about unit-size grids; we want them
        return F.affine_grid(theta, [1, 1, h, w], align_corners=True)[0]


even_dims = st.integers(1, 8).map(lambda k: 2 * k)
bases = st.sampled_from([10000.0, 100.0, 10.0, 2.5, 500000.0])


# ---------------------------------------------------------------------------------------------
# sinusoidal_positions


@pytest.mark.points(2)
@given(seq_len=st.integers(0, 40), dim=even_dims, base=bases)
def test_sinusoidal_formula_in_float64(impl, seq_len, dim, base):
    name = f"sinusoidal_positions({seq_len}, {dim}, base={base}, dtype=torch.float64)"
    out = impl.sinusoidal_positions(seq_len, dim, base=base, dtype=torch.float64)
    # float64 arithmetic gives ~1e-14 here; a float32 detour gives ~1e-6.
    assert_close(out, reference_positions(seq_len, dim, base), rtol=0, atol=1e-10, name=name)


@pytest.mark.points(2)
@given(seq_len=st.integers(0, 64), dim=even_dims, base=bases)
def test_sinusoidal_formula_in_float32(impl, seq_len, dim, base):
    name = f"sinusoidal_positions({seq_len}, {dim}, base={base})"
    out = impl.sinusoidal_positions(seq_len, dim, base=base)
    expected = reference_positions(seq_len, dim, base).to(torch.float32)
    # float32 rounding of angles up to 64 rad: errors ~1e-5 at most.
    assert_close(out, expected, rtol=0, atol=1e-4, name=name)


def test_sinusoidal_first_rows(impl):
    out = impl.sinusoidal_positions(2, 6, base=10000.0)
    f = [10000.0 ** (-2 * i / 6) for i in range(3)]
    expected = torch.tensor([[0.0, 1.0, 0.0, 1.0, 0.0, 1.0],
                             [math.sin(f[0]), math.cos(f[0]), math.sin(f[1]), math.cos(f[1]),
                              math.sin(f[2]), math.cos(f[2])]])
    assert_close(out, expected, rtol=0, atol=1e-6,
                 name="sinusoidal_positions(2, 6): row 0 is 0, 1, 0, 1, ... and row 1 interleaves "
                      "sin/cos of the frequencies")


@pytest.mark.parametrize("dtype, atol", [(torch.bfloat16, 2.0**-7), (torch.float16, 2e-3)],
                         ids=["bfloat16", "float16"])
def test_sinusoidal_low_precision_dtypes_are_accurate(impl, dtype, atol):
    seq_len, dim = 300, 16
    name = f"sinusoidal_positions({seq_len}, {dim}, dtype={dtype})"
    out = impl.sinusoidal_positions(seq_len, dim, dtype=dtype)
    # The float64 table rounded once to the dtype; a correct result is within one ulp of it
    # (2**-8 for bfloat16 values near 1). Computing in the low dtype is off by up to ~0.5.
    expected = reference_positions(seq_len, dim, 10000.0).to(dtype)
    assert_close(out, expected, rtol=0, atol=atol,
                 name=f"{name} (compute in float32, then convert)")


@pytest.mark.parametrize("device", device_params(meta=True))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16],
                         ids=["float32", "float64", "float16", "bfloat16"])
def test_sinusoidal_dtype_and_device(impl, device, dtype):
    for dev in (device, torch.device(device)):
        name = f"sinusoidal_positions(7, 10, dtype={dtype}, device={dev!r})"
        out = impl.sinusoidal_positions(7, 10, dtype=dtype, device=dev)
        assert_shape(out, (7, 10), name=name)
        assert_device(out, device, name=name)
        assert out.dtype == dtype, f"{name}: dtype {out.dtype}, expected {dtype}"
        if device != "meta":
            expected = reference_positions(7, 10, 10000.0).to(dtype)
            atol = {torch.bfloat16: 2.0**-7, torch.float16: 2e-3}.get(dtype, 1e-5)
            assert_close(out.cpu(), expected, rtol=0, atol=atol, name=name)


def test_sinusoidal_defaults(impl):
    out = impl.sinusoidal_positions(4, 2)
    name = "sinusoidal_positions(4, 2)"
    assert_device(out, "cpu", name=name)
    assert out.dtype == torch.float32, f"{name}: dtype {out.dtype}, expected torch.float32"
    assert_close(out, reference_positions(4, 2, 10000.0).float(), rtol=0, atol=1e-6, name=name)


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("args, kwargs, argname", [
    ((4, 5), {}, "dim"),
    ((4, 1), {}, "dim"),
    ((4, 0), {}, "dim"),
    ((4, -2), {}, "dim"),
    ((-1, 4), {}, "seq_len"),
    ((3.0, 4), {}, "seq_len"),
    ((4, 4.0), {}, "dim"),
    ((4, 4), {"dtype": torch.int64}, "dtype"),
    ((4, 4), {"dtype": torch.bool}, "dtype"),
], ids=["odd-dim", "dim-1", "dim-0", "negative-dim", "negative-seq_len", "float-seq_len",
        "float-dim", "int64-dtype", "bool-dtype"])
def test_sinusoidal_rejects_bad_arguments(impl, args, kwargs, argname):
    assert_raises_naming(ValueError, argname, impl.sinusoidal_positions, *args, **kwargs)


def test_sinusoidal_empty_sequence(impl):
    out = impl.sinusoidal_positions(0, 8)
    assert_shape(out, (0, 8), name="sinusoidal_positions(0, 8)")


# ---------------------------------------------------------------------------------------------
# coordinate_grid


@pytest.mark.points(2)
@given(h=st.integers(1, 9), w=st.integers(1, 9))
def test_grid_matches_affine_grid(impl, h, w):
    name = f"coordinate_grid({h}, {w})"
    out = impl.coordinate_grid(h, w)
    assert_shape(out, (h, w, 2), name=name)
    assert_close(out, reference_grid(h, w), name=f"{name} vs F.affine_grid(identity, "
                                                   f"(1, 1, {h}, {w}), align_corners=True)")


@pytest.mark.parametrize("h, w", [(1, 1), (1, 4), (5, 1), (2, 2)])
def test_grid_is_float32_whatever_the_default_dtype(impl, h, w):
    name = f"coordinate_grid({h}, {w}) after torch.set_default_dtype(torch.float64)"
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        out = impl.coordinate_grid(h, w)
    finally:
        torch.set_default_dtype(previous)
    assert_close(out, reference_grid(h, w), name=f"{name} (the grid is float32 whatever torch's "
                                                  "default dtype)")


@pytest.mark.parametrize("h, w", [(1, 1), (1, 4), (5, 1), (2, 2)])
def test_grid_unit_sides_are_centred(impl, h, w):
    name = f"coordinate_grid({h}, {w})"
    out = impl.coordinate_grid(h, w)
    assert_close(out, reference_grid(h, w),
                 name=f"{name} (a side of length 1 has its coordinate at 0, not -1)")


def test_grid_x_varies_along_width(impl):
    out = impl.coordinate_grid(2, 3)
    assert_close(out[..., 0], torch.tensor([[-1.0, 0.0, 1.0], [-1.0, 0.0, 1.0]]),
                 name="coordinate_grid(2, 3)[..., 0] (x must vary along the width)")
    assert_close(out[..., 1], torch.tensor([[-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]]),
                 name="coordinate_grid(2, 3)[..., 1] (y must vary along the height)")


@pytest.mark.parametrize("device", device_params(meta=True))
def test_grid_device(impl, device):
    for dev in (device, torch.device(device)):
        name = f"coordinate_grid(3, 4, device={dev!r})"
        out = impl.coordinate_grid(3, 4, device=dev)
        assert_shape(out, (3, 4, 2), name=name)
        assert_device(out, device, name=name)
        assert out.dtype == torch.float32, f"{name}: dtype {out.dtype}, expected torch.float32"
        if device != "meta":
            assert_close(out.cpu(), reference_grid(3, 4), name=name)
    one = impl.coordinate_grid(1, 1, device=device)
    assert_device(one, device, name=f"coordinate_grid(1, 1, device={device!r})")


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("h, w, argname", [(0, 3, "h"), (3, 0, "w"), (-2, 3, "h"), (3, -1, "w"),
                                            (2.0, 3, "h"), (3, 2.0, "w")])
def test_grid_rejects_bad_sizes(impl, h, w, argname):
    call = f"coordinate_grid({h}, {w})"
    long_name = {"h": "height", "w": "width"}[argname]
    try:
        impl.coordinate_grid(h, w)
    except ValueError as exc:
        text = str(exc)
        assert re.search(rf"\b{argname}\b", text) or long_name in text.lower(), (
            f"{call} raised ValueError as expected, but its message should name {argname!r}: "
            f"{text:.200}")
        return
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported to the learner
        raise AssertionError(f"{call} should raise ValueError naming {argname!r}, but raised "
                             f"{type(exc).__name__}: {exc!s:.200}") from None
    raise AssertionError(f"{call} should raise ValueError naming {argname!r}, but it returned "
                         "normally")
