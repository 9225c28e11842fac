"""Hidden tests for pytorch.tensors.from_data (the catalog's contract checks)."""

import copy
import math
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from grader.checks import assert_close, assert_device, assert_shape, assert_tensor, device_params

# ---------------------------------------------------------------------------------------------
# Helpers private to this file.

_KIND_DTYPE = {"bool": torch.bool, "int": torch.int64, "float": torch.float32}
_LEAVES = {
    "bool": st.booleans(),
    "int": st.integers(-(2**62), 2**62),
    # Finite and inside float32's range, so float32 rounding is the only change.
    "float": st.floats(-1e30, 1e30, allow_nan=False, allow_infinity=False),
}
# Every real NumPy dtype torch can hold; complex arrays are outside the contract.
_NUMPY_DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.uint16, np.uint32,
                 np.uint64, np.float16, np.float32, np.float64]


def _short(data) -> str:
    text = repr(data)
    return text if len(text) <= 120 else text[:117] + "..."


# Each dtype is its own test case, so each needs only a few drawn shapes.
_PER_DTYPE_EXAMPLES = 8


def _random_array(dtype, shape, seed: int) -> np.ndarray:
    """A NumPy array of ``dtype`` and ``shape`` with varied values (no NaN/inf)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        values = rng.random(shape) < 0.5
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    else:
        values = rng.standard_normal(shape) * 100
    # For shape () NumPy hands back scalars; the tests want 0-d arrays.
    return np.array(values, dtype=dtype, ndmin=0)


def _nest(flat: list, shape: tuple[int, ...], containers: list[bool]):
    """``flat`` laid out as nested sequences of ``shape``; ``containers`` picks list or tuple."""
    it = iter(flat)
    pick = iter(containers)

    def build(level: int):
        if level == len(shape):
            return next(it)
        items = [build(level + 1) for _ in range(shape[level])]
        return tuple(items) if next(pick, False) else items

    return build(0)


@st.composite
def nested_data(draw, kind: str):
    """(data, expected tensor) for regular nested lists/tuples of ``kind`` scalars."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    if 0 in shape:  # nothing below an empty sequence records the later sizes
        shape = shape[: shape.index(0) + 1]
    n = math.prod(shape)
    flat = draw(st.lists(_LEAVES[kind], min_size=n, max_size=n))
    containers = draw(st.lists(st.booleans(), min_size=64, max_size=64))
    data = flat[0] if shape == () else _nest(flat, shape, containers)
    dtype = _KIND_DTYPE[kind] if n else torch.float32
    expected = torch.tensor(flat, dtype=dtype).reshape(shape)
    return data, expected


@st.composite
def ragged_data(draw):
    """(data, depth): a regular nesting broken at exactly one depth."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=3))
    shape = (max(shape[0], 2), *shape[1:])  # at least two items at every depth
    n = math.prod(shape)
    data = _nest(list(range(n)), shape, [False] * 64)
    ndim = len(shape)
    modes = ["scalar_into_list"] + (["grow_list", "list_into_scalar"] if ndim > 1 else [])
    mode = draw(st.sampled_from(modes))
    if mode == "scalar_into_list":
        depth = ndim  # a leaf becomes [leaf]: a sequence beside scalars at the deepest depth
    else:
        depth = draw(st.integers(1, ndim - 1))  # lists at this depth exist and are >= 2
    # Walk to one node at `depth` (chosen by drawn indices), then change it.
    parent = data
    for level in range(depth - 1):
        parent = parent[draw(st.integers(0, shape[level] - 1))]
    index = draw(st.integers(0, shape[depth - 1] - 1))
    if mode == "scalar_into_list":
        parent[index] = [parent[index]]
    elif mode == "grow_list":
        parent[index].append(copy.deepcopy(parent[index][-1]))
    else:  # a whole sub-list becomes one scalar
        parent[index] = -1
    if draw(st.booleans()):
        data = tuple(data)
    return data, depth


def _assert_ragged(impl, data, depth: int) -> None:
    call = f"to_tensor({_short(data)})"
    try:
        impl.to_tensor(data)
    except ValueError as exc:
        if not re.search(rf"depth\s*{depth}(?!\d)", str(exc), re.IGNORECASE):
            raise AssertionError(f"{call} raised ValueError as expected, but its message should "
                                 f"contain 'depth {depth}': {exc!s:.200}") from None
        return
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported to the learner
        raise AssertionError(f"{call} is ragged at depth {depth}: it should raise ValueError "
                             f"naming 'depth {depth}', but raised {type(exc).__name__}: "
                             f"{exc!s:.200}") from None
    raise AssertionError(f"{call} is ragged at depth {depth}: it should raise ValueError, "
                         "but it returned normally")


def _assert_same_floats(out, expected: torch.Tensor, name: str) -> None:
    """``out`` equals ``expected`` exactly, nan where it has nan and inf of the same sign where it
    has inf (checked here because a finite value never counts as "close" to an infinite one)."""
    assert_close(out, expected, name=name, equal_nan=True)
    same = (out == expected) | (out.isnan() & expected.isnan())
    assert bool(same.all()), (f"{name}: got {out.tolist()}, expected {expected.tolist()} (nan and "
                              "inf must stay nan and inf)")


def _values(t: torch.Tensor) -> np.ndarray:
    """The tensor's values as NumPy, read by the test (trusted) code."""
    return t.detach().cpu().numpy()


# ---------------------------------------------------------------------------------------------
# Python data.


@pytest.mark.points(2)
@pytest.mark.parametrize("kind", sorted(_KIND_DTYPE))
@given(data=st.data())
def test_nested_python_data_dtype_shape_and_values(impl, kind, data):
    data, expected = data.draw(nested_data(kind), label="(data, expected)")
    name = f"to_tensor({_short(data)})"
    out = impl.to_tensor(data)
    assert_shape(out, tuple(expected.shape), name=name)
    assert_close(out, expected, name=name)


@pytest.mark.parametrize("value, dtype", [(3, torch.int64), (-7, torch.int64), (2.5, torch.float32),
                                          (True, torch.bool), (False, torch.bool),
                                          (math.inf, torch.float32), (-math.inf, torch.float32),
                                          (math.nan, torch.float32)],
                         ids=["int", "negative-int", "float", "True", "False", "inf", "-inf", "nan"])
def test_python_scalar_gives_0d_tensor(impl, value, dtype):
    name = f"to_tensor({value!r})"
    out = impl.to_tensor(value)
    assert_shape(out, (), name=name)
    _assert_same_floats(out, torch.tensor(value, dtype=dtype), name)


def test_non_finite_floats_in_lists(impl):
    data = [[1.0, math.nan], [-math.inf, math.inf]]
    name = f"to_tensor({data!r})"
    _assert_same_floats(impl.to_tensor(data), torch.tensor(data, dtype=torch.float32), name)


@pytest.mark.parametrize("data, dtype", [
    (2.5, torch.float32), ([1.0, 2.0], torch.float32), ([[1, 2.5]], torch.float32),
    ([], torch.float32), ([[], []], torch.float32), ([1, 2], torch.int64), ([True], torch.bool),
], ids=["float", "floats", "int+float", "[]", "[[], []]", "ints", "bools"])
def test_python_dtypes_ignore_the_default_dtype(impl, data, dtype):
    name = f"to_tensor({data!r}) after torch.set_default_dtype(torch.float64)"
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        out = impl.to_tensor(data)
    finally:
        torch.set_default_dtype(previous)
    assert_tensor(out, name=name)
    assert out.dtype == dtype, (f"{name}: dtype {out.dtype}, expected {dtype} (the contract's "
                                "dtypes do not follow torch's default dtype)")
    assert_close(out, torch.tensor(data, dtype=dtype), name=name)


@pytest.mark.parametrize("data, dtype", [
    ([True, False], torch.bool),
    ([True, 2], torch.int64),
    ([1, 2.5], torch.float32),
    ([[True], [2.5]], torch.float32),
    ((1, (2, 3.0))[1:], torch.float32),
    ([[1, 2], [3, 4]], torch.int64),
], ids=["bools", "bool+int", "int+float", "bool+float", "tuple-int+float", "ints"])
def test_mixed_kinds_promote(impl, data, dtype):
    name = f"to_tensor({_short(data)})"
    out = impl.to_tensor(data)
    assert_close(out, torch.tensor(data, dtype=dtype), name=name)


@pytest.mark.parametrize("data, shape", [([], (0,)), ([[], []], (2, 0)), (((), (), ()), (3, 0))],
                         ids=["[]", "[[], []]", "3-empty-tuples"])
def test_empty_sequences_are_float32(impl, data, shape):
    name = f"to_tensor({data!r})"
    out = impl.to_tensor(data)
    assert_shape(out, shape, name=name)
    assert out.dtype == torch.float32, f"{name}: dtype {out.dtype}, expected torch.float32"
    typed = impl.to_tensor(data, dtype=torch.int64)
    assert typed.dtype == torch.int64, (f"to_tensor({data!r}, dtype=torch.int64): dtype "
                                        f"{typed.dtype}, expected torch.int64")


def test_python_source_mutation_does_not_leak(impl):
    data = [[1.0, 2.0], [3.0, 4.0]]
    out = impl.to_tensor(data)
    data[0][0] = 100.0
    data[1].append(5.0)
    assert_close(out, torch.tensor([[1.0, 2.0], [3.0, 4.0]]),
                 name="to_tensor(list) after the list was changed")


# ---------------------------------------------------------------------------------------------
# NumPy data.


@pytest.mark.parametrize("dtype", _NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
@settings(max_examples=_PER_DTYPE_EXAMPLES)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
       seed=st.integers(0, 2**32 - 1))
def test_numpy_array_keeps_dtype_shape_and_values(impl, dtype, shape, seed):
    a = _random_array(dtype, shape, seed)
    name = f"to_tensor(np.ndarray dtype={a.dtype}, shape={a.shape})"
    out = assert_tensor(impl.to_tensor(a), name=name)
    expected_dtype = torch.from_numpy(a.copy()).dtype
    assert out.dtype == expected_dtype, f"{name}: dtype {out.dtype}, expected {expected_dtype}"
    assert_shape(out, a.shape, name=name)
    assert np.array_equal(_values(out), a), f"{name}: values differ from the array's"


@pytest.mark.parametrize("scalar", [np.float64(1.25), np.float32(-2.5), np.float16(0.5),
                                    np.int32(7), np.int64(-3), np.uint8(200), np.bool_(True)],
                         ids=lambda s: type(s).__name__)
def test_numpy_scalar_keeps_dtype(impl, scalar):
    name = f"to_tensor(np.{type(scalar).__name__}({scalar!r}))"
    out = assert_tensor(impl.to_tensor(scalar), name=name)
    assert_shape(out, (), name=name)
    expected = torch.from_numpy(np.asarray(scalar).copy())
    assert out.dtype == expected.dtype, f"{name}: dtype {out.dtype}, expected {expected.dtype}"
    assert_close(out, expected, name=name)


@pytest.mark.points(2)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_],
                         ids=lambda d: np.dtype(d).name)
def test_numpy_result_is_a_copy(impl, dtype):
    a = _random_array(dtype, (3, 4), seed=0)
    original = a.copy()
    name = f"to_tensor({np.dtype(dtype).name} array)"
    out = assert_tensor(impl.to_tensor(a), name=name)
    before = _values(out).copy()
    assert out.dtype == torch.from_numpy(original).dtype and np.array_equal(before, original), (
        f"{name}: the tensor's dtype ({out.dtype}) or values do not match the array")
    a[...] = _random_array(dtype, (3, 4), seed=1)
    assert np.array_equal(_values(out), before), (
        f"{name}: writing to the array after the call changed the tensor, so they share memory "
        "(torch.as_tensor and torch.from_numpy do that); the contract asks for a copy")
    a[...] = original
    out.copy_(torch.from_numpy(_random_array(dtype, (3, 4), seed=2)))
    assert np.array_equal(a, original), (f"{name}: writing to the tensor changed the source array, "
                                         "so they share memory; the contract asks for a copy")


@pytest.mark.points(2)
@pytest.mark.parametrize("kwargs", [{"dtype": torch.float32}, {"device": "cpu"},
                                    {"device": torch.device("cpu")},
                                    {"dtype": torch.float32, "device": "cpu"}],
                         ids=["dtype=float32", "device='cpu'", "device=torch.device", "both"])
@pytest.mark.parametrize("layout", ["contiguous", "0-d"])
def test_numpy_copy_with_matching_dtype_and_device(impl, kwargs, layout):
    a = _random_array(np.float32, (3, 4) if layout == "contiguous" else (), seed=3)
    original = a.copy()
    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    name = f"to_tensor({layout} float32 array, {args})"
    out = assert_tensor(impl.to_tensor(a, **kwargs), name=name)
    assert_close(out, torch.from_numpy(original.copy()), name=name)
    a[...] = original + 1
    assert np.array_equal(_values(out), original), (
        f"{name}: writing to the array after the call changed the tensor, so they share memory; "
        "the result must be a copy also when dtype=/device= match the source's")
    a[...] = original
    out.fill_(-7.0)
    assert np.array_equal(a, original), (f"{name}: writing to the tensor changed the source array; "
                                         "the result must be a copy")


_VIEWS = {"reversed": lambda b: b[::-1], "reversed-cols": lambda b: b[:, ::-2],
          "transposed": lambda b: b.T, "strided": lambda b: b[1:, ::3], "flipped": np.flip}


@pytest.mark.parametrize("view", sorted(_VIEWS))
def test_numpy_views_of_any_layout(impl, view):
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    a = _VIEWS[view](base)
    expected = torch.from_numpy(np.array(a, copy=True))  # made before any change
    name = f"to_tensor({view} view of a (4, 6) array, strides {a.strides})"
    out = impl.to_tensor(a)
    assert_close(out, expected, name=name)
    base[...] = -1
    assert_close(out, expected, name=f"{name} after the array was overwritten (the result must "
                                      "be a copy)")


# ---------------------------------------------------------------------------------------------
# dtype= and device=.


@pytest.mark.parametrize("data, dtype", [
    ([1, 2, 3], torch.float64),
    ([True, False], torch.float32),
    ([[0.1, 0.2], [1e-30, 3.3]], torch.float64),
    ([1.5, -2.25], torch.float16),
    (np.arange(4, dtype=np.int32), torch.float64),
    (np.array([0.1, 0.7], dtype=np.float64), torch.float32),
    (5, torch.float64),
], ids=["ints->f64", "bools->f32", "floats->f64", "floats->f16", "int32-array->f64",
        "f64-array->f32", "int-scalar->f64"])
def test_dtype_argument_converts_from_the_source(impl, data, dtype):
    name = f"to_tensor({_short(data)}, dtype={dtype})"
    out = impl.to_tensor(data, dtype=dtype)
    # torch.tensor(..., dtype=...) rounds each source number once, straight to `dtype` (0.1 ->
    # the nearest float64); the arrays' values are exact Python numbers after tolist().
    source = data.tolist() if isinstance(data, np.ndarray) else data
    expected = torch.tensor(source, dtype=dtype)
    assert_close(out, expected, rtol=0, atol=0, name=name)


@pytest.mark.parametrize("device", device_params(meta=True))
def test_device_argument(impl, device):
    cases = [([[1, 2, 3], [4, 5, 6]], {}, (2, 3), torch.int64),
             ([0.5, 1.5], {"dtype": torch.float64}, (2,), torch.float64),
             (np.ones((2, 2), dtype=np.float32)[::-1], {}, (2, 2), torch.float32),
             (7, {}, (), torch.int64)]
    for data, kwargs, shape, dtype in cases:
        for dev in (device, torch.device(device)):
            name = f"to_tensor({_short(data)}, device={dev!r})"
            out = impl.to_tensor(data, device=dev, **kwargs)
            assert_shape(out, shape, name=name)
            assert_device(out, device, name=name)
            assert out.dtype == dtype, f"{name}: dtype {out.dtype}, expected {dtype}"
            if device != "meta":
                source = data.copy() if isinstance(data, np.ndarray) else data
                assert_close(out.cpu(), torch.tensor(source, dtype=dtype), name=name)


# ---------------------------------------------------------------------------------------------
# Errors.


@pytest.mark.points(2)
@pytest.mark.parametrize("data, depth", [
    ([[1, 2], [3]], 1),
    ([[1], 2], 1),
    ([1, [2]], 1),
    (([1, 2], (3, 4), [5]), 1),
    ([[[1, 2], [3, 4]], [[5], [6]]], 2),
    ([[[1, 2]], [[3]]], 2),
    ([[[1], 2]], 2),
    ([[[1.0, 2.0], [3.0, [4.0]]]], 3),
], ids=["lengths", "list-then-scalar", "scalar-then-list", "tuples", "depth2-lengths",
        "depth2-inner", "depth2-scalar", "depth3-floats"])
def test_ragged_nesting_names_the_depth(impl, data, depth):
    _assert_ragged(impl, data, depth)


@given(case=ragged_data())
def test_ragged_nesting_property(impl, case):
    data, depth = case
    _assert_ragged(impl, data, depth)


@pytest.mark.parametrize("data", ["abc", None, {"a": 1}, [1, "a"], [[1.0, 2.0], [3.0, None]],
                                  object()],
                         ids=["str", "None", "dict", "str-in-list", "None-in-nested", "object"])
def test_non_numeric_data_raises_type_error(impl, data):
    call = f"to_tensor({_short(data)})"
    try:
        impl.to_tensor(data)
    except TypeError as exc:
        assert "data" in str(exc).lower(), (f"{call} raised TypeError as expected, but its message "
                                            f"should name 'data': {exc!s:.200}")
        return
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported to the learner
        raise AssertionError(f"{call} should raise TypeError naming 'data', but raised "
                             f"{type(exc).__name__}: {exc!s:.200}") from None
    raise AssertionError(f"{call} should raise TypeError naming 'data', but it returned normally")
