"""Hidden tests for pytorch.tensors.numpy_bridge (the catalog's contract checks)."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from grader.checks import device_params

# ---------------------------------------------------------------------------------------------
# Helpers private to this file.

# torch dtype -> the NumPy dtype to_numpy must return.
_NUMPY_OF = {
    torch.bool: np.bool_, torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16,
    torch.int32: np.int32, torch.int64: np.int64, torch.uint16: np.uint16,
    torch.uint32: np.uint32, torch.uint64: np.uint64, torch.float16: np.float16,
    torch.bfloat16: np.float32, torch.float32: np.float32, torch.float64: np.float64,
}
_TORCH_DTYPES = list(_NUMPY_OF)
_NUMPY_DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.uint16, np.uint32,
                 np.uint64, np.float16, np.float32, np.float64]
_INT_RANGES = {torch.uint8: (0, 2**8), torch.int8: (-(2**7), 2**7), torch.int16: (-(2**15), 2**15),
               torch.int32: (-(2**31), 2**31), torch.int64: (-(2**62), 2**62),
               torch.uint16: (0, 2**16), torch.uint32: (0, 2**32), torch.uint64: (0, 2**62)}


def _random_tensor(dtype: torch.dtype, shape, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) < 0.5
    if dtype in _INT_RANGES:
        low, high = _INT_RANGES[dtype]
        return torch.randint(low, high, shape, generator=gen, dtype=torch.int64).to(dtype)
    return (torch.randn(shape, generator=gen, dtype=torch.float64) * 100).to(dtype)


# Each dtype is its own test case, so each needs only a few drawn shapes.
_PER_DTYPE_EXAMPLES = 8


def _random_array(dtype, shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        values = rng.random(shape) < 0.5
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    else:
        values = rng.standard_normal(shape) * 100  # |x| < ~600: x + 1 != x even in float16
    return np.array(values, dtype=dtype, ndmin=0)  # 0-d array, never a NumPy scalar


def _changed(a: np.ndarray) -> np.ndarray:
    """A new array of ``a``'s dtype and shape that differs from ``a`` in every element."""
    if a.dtype == np.bool_:
        return ~a
    if a.dtype.kind in "iu":
        return a ^ a.dtype.type(1)
    return a + a.dtype.type(1)


def _expected_numpy(t: torch.Tensor) -> np.ndarray:
    """What to_numpy(t) must return, built without torch's own NumPy conversion."""
    values = np.array(t.detach().cpu().tolist(), dtype=_NUMPY_OF[t.dtype])
    return values.reshape(tuple(t.shape))  # tolist() forgets the shape of empty tensors


def _check_to_numpy(impl, t: torch.Tensor, name: str) -> np.ndarray:
    expected = _expected_numpy(t)
    out = impl.to_numpy(t)
    assert isinstance(out, np.ndarray), (f"{name}: returned {type(out).__name__}, expected an "
                                         "np.ndarray")
    assert out.shape == expected.shape, f"{name}: shape {out.shape}, expected {expected.shape}"
    assert out.dtype == expected.dtype, f"{name}: dtype {out.dtype}, expected {expected.dtype}"
    assert np.array_equal(out, expected), f"{name}: values differ from the tensor's"
    return out


def _values(t: torch.Tensor) -> np.ndarray:
    """The tensor's values read by the test (trusted) code, as a separate copy."""
    return t.detach().cpu().clone().numpy()


def _raises(impl_fn, arg, error: type[BaseException], word: str, call: str) -> None:
    try:
        impl_fn(arg)
    except error as exc:
        assert word.lower() in str(exc).lower(), (
            f"{call} raised {error.__name__} as expected, but its message should mention "
            f"{word!r}: {exc!s:.200}")
        return
    except Exception as exc:  # noqa: BLE001 - reported to the learner
        raise AssertionError(f"{call} should raise {error.__name__} mentioning {word!r}, but "
                             f"raised {type(exc).__name__}: {exc!s:.200}") from None
    raise AssertionError(f"{call} should raise {error.__name__} mentioning {word!r}, but it "
                         "returned normally")


# Positive-stride views: torch.from_numpy can share every one of them.
_SHAREABLE_VIEWS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: a.T,
    "stepped": lambda a: a[..., ::2],
    "offset": lambda a: a[1:],
    "offset-stepped": lambda a: a[..., 1::3],
}


@st.composite
def shareable_arrays(draw, dtype):
    """(description, writeable ``dtype`` array view with non-negative strides)."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=5))
    base = _random_array(dtype, shape, draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(sorted(_SHAREABLE_VIEWS))) if shape else "contiguous"
    if kind == "offset" and shape[0] == 1:
        kind = "contiguous"  # a[1:] would be empty
    view = _SHAREABLE_VIEWS[kind](base)
    name = f"from_numpy({kind} {view.dtype} array of shape {view.shape}, strides {view.strides})"
    return name, view


# ---------------------------------------------------------------------------------------------
# to_numpy


@pytest.mark.parametrize("dtype", _TORCH_DTYPES, ids=lambda d: str(d).removeprefix("torch."))
@settings(max_examples=_PER_DTYPE_EXAMPLES)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
       seed=st.integers(0, 2**31 - 1))
def test_to_numpy_dtype_shape_values(impl, dtype, shape, seed):
    t = _random_tensor(dtype, shape, seed)
    _check_to_numpy(impl, t, f"to_numpy({dtype} tensor of shape {tuple(shape)})")


_TENSOR_VIEWS = {
    "transposed": lambda t: t.T,
    "stepped": lambda t: t[:, ::2],
    "narrowed": lambda t: t[1:3, 2:],
    "expanded": lambda t: t[:1].expand(3, 6),
    "permuted-3d": lambda t: t.reshape(2, 2, 6).permute(2, 0, 1),
    "diagonal": lambda t: t.diagonal(),
    "unsqueezed": lambda t: t[:, None, ::3],
}


@pytest.mark.parametrize("view", sorted(_TENSOR_VIEWS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16],
                         ids=["float32", "int64", "bfloat16"])
def test_to_numpy_non_contiguous_views(impl, view, dtype):
    t = _TENSOR_VIEWS[view](_random_tensor(dtype, (4, 6), seed=3))
    _check_to_numpy(impl, t, f"to_numpy({view} {dtype} view, stride {t.stride()})")


@pytest.mark.points(2)
def test_to_numpy_of_tensors_with_autograd(impl):
    leaf = torch.randn(3, 4, requires_grad=True)
    _check_to_numpy(impl, leaf, "to_numpy(leaf tensor with requires_grad=True)")
    assert leaf.requires_grad and leaf.grad is None, (
        "to_numpy(leaf) changed the tensor's autograd state (requires_grad or .grad); it must "
        "leave its argument as it was")
    hidden = leaf * 2 + 1
    grad_fn = hidden.grad_fn
    _check_to_numpy(impl, hidden, "to_numpy(leaf * 2 + 1), a tensor with autograd history")
    assert hidden.grad_fn is grad_fn and hidden.requires_grad, (
        "to_numpy(leaf * 2 + 1) changed the tensor's grad_fn/requires_grad; it must leave its "
        "argument as it was")
    hidden.sum().backward()
    assert leaf.grad is not None and bool((leaf.grad == 2).all()), (
        "after to_numpy(leaf * 2 + 1), backpropagating through that tensor no longer gives "
        "leaf.grad == 2: to_numpy disturbed the graph")
    layer = torch.nn.Linear(4, 3)
    _check_to_numpy(impl, layer.weight, "to_numpy(nn.Linear(4, 3).weight), a Parameter")
    _check_to_numpy(impl, leaf.grad, "to_numpy(leaf.grad)")
    low = torch.randn(5, requires_grad=True).to(torch.bfloat16)
    _check_to_numpy(impl, low, "to_numpy(bfloat16 tensor with autograd history)")


def test_to_numpy_bfloat16_becomes_exact_float32(impl):
    t = torch.tensor([1.0, -2.5, 3.140625, 1e-3, 65280.0, 2.0**-100], dtype=torch.bfloat16)
    out = _check_to_numpy(impl, t, "to_numpy(bfloat16 tensor)")
    assert np.array_equal(out, t.float().numpy()), "to_numpy(bfloat16): values are not exact"


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool],
                         ids=["float32", "int64", "bool"])
def test_to_numpy_of_0d_tensor_is_an_array(impl, dtype):
    _check_to_numpy(impl, _random_tensor(dtype, (), seed=5), f"to_numpy(0-d {dtype} tensor)")


@pytest.mark.parametrize("device", device_params())
def test_to_numpy_from_device(impl, device):
    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        t = _random_tensor(dtype, (3, 5), seed=7).to(device)
        if t.is_floating_point():
            t.requires_grad_(True)
        _check_to_numpy(impl, t, f"to_numpy({dtype} tensor on {device})")
        _check_to_numpy(impl, t.T, f"to_numpy(transposed {dtype} tensor on {device})")


def test_to_numpy_meta_tensor_raises_value_error(impl):
    impl.to_numpy(torch.zeros(2))  # a stub's NotImplementedError surfaces here, as "not started"
    call = "to_numpy(tensor on the meta device)"
    try:
        impl.to_numpy(torch.empty(2, 3, device="meta"))
    except ValueError as exc:
        assert "meta" in str(exc).lower(), (f"{call} raised ValueError as expected, but its "
                                            f"message should mention 'meta': {exc!s:.200}")
        return
    except Exception as exc:  # noqa: BLE001 - includes torch's NotImplementedError for meta copies
        raise AssertionError(f"{call} should raise ValueError mentioning 'meta', but raised "
                             f"{type(exc).__name__}: {exc!s:.200}") from None
    raise AssertionError(f"{call} should raise ValueError mentioning 'meta' (a meta tensor has no "
                         "data), but it returned normally")


def test_to_numpy_rejects_non_tensors(impl):
    impl.to_numpy(torch.zeros(2))  # a stub's NotImplementedError surfaces here, as "not started"
    for value in ([1.0, 2.0], np.zeros(2), 3.0):
        _raises(impl.to_numpy, value, TypeError, "Tensor", f"to_numpy({value!r})")


# ---------------------------------------------------------------------------------------------
# from_numpy


_NUMPY_IDS = {"ids": lambda d: np.dtype(d).name}


@pytest.mark.parametrize("dtype", _NUMPY_DTYPES, **_NUMPY_IDS)
@settings(max_examples=_PER_DTYPE_EXAMPLES)
@given(data=st.data())
def test_from_numpy_shares_memory_when_possible(impl, dtype, data):
    name, a = data.draw(shareable_arrays(dtype), label="(name, array)")
    original = a.copy()
    t = impl.from_numpy(a)
    assert isinstance(t, torch.Tensor), f"{name}: returned {type(t).__name__}, expected a Tensor"
    want = torch.from_numpy(original).dtype
    assert t.dtype == want, f"{name}: dtype {t.dtype}, expected {want}"
    assert tuple(t.shape) == a.shape, f"{name}: shape {tuple(t.shape)}, expected {a.shape}"
    assert t.device.type == "cpu", f"{name}: on {t.device}, expected cpu"
    assert np.array_equal(_values(t), original), f"{name}: values differ from the array's"
    a[...] = _changed(original)
    assert np.array_equal(_values(t), a), (
        f"{name}: a write to the array was not seen by the tensor, so it is a copy; with "
        "share_memory=True a writeable array with no negative strides must be shared")
    t.copy_(torch.from_numpy(original.copy()))
    assert np.array_equal(a, original), (
        f"{name}: a write to the tensor was not seen by the array, so they do not share memory")


@pytest.mark.parametrize("view", ["a.T", "a[:, ::2]", "a[1:, 1::2]", "a[None, :, 2]"])
def test_from_numpy_shares_non_contiguous_views(impl, view):
    base = np.arange(20.0).reshape(4, 5)
    a = {"a.T": base.T, "a[:, ::2]": base[:, ::2], "a[1:, 1::2]": base[1:, 1::2],
         "a[None, :, 2]": base[None, :, 2]}[view]
    name = f"from_numpy({view}), strides {a.strides}"
    t = impl.from_numpy(a)
    assert np.array_equal(_values(t), a), f"{name}: values differ from the array's"
    base *= -1
    assert np.array_equal(_values(t), a), (
        f"{name}: a write to the array was not seen by the tensor, so it is a copy; torch can "
        "share any writeable array without negative strides, contiguous or not")


@pytest.mark.parametrize("dtype", _NUMPY_DTYPES, **_NUMPY_IDS)
@settings(max_examples=_PER_DTYPE_EXAMPLES)
@given(data=st.data())
def test_from_numpy_share_memory_false_copies(impl, dtype, data):
    name, a = data.draw(shareable_arrays(dtype), label="(name, array)")
    name = name.replace("from_numpy(", "from_numpy(share_memory=False, ", 1)
    original = a.copy()
    t = impl.from_numpy(a, share_memory=False)
    assert isinstance(t, torch.Tensor), f"{name}: returned {type(t).__name__}, expected a Tensor"
    want = torch.from_numpy(original).dtype
    assert t.dtype == want, f"{name}: dtype {t.dtype}, expected {want}"
    assert np.array_equal(_values(t), original), f"{name}: values differ from the array's"
    a[...] = _changed(original)
    assert np.array_equal(_values(t), original), (
        f"{name}: a write to the array changed the tensor; share_memory=False asks for a copy")
    changed = a.copy()
    t.copy_(torch.from_numpy(original.copy()))
    assert np.array_equal(a, changed), (
        f"{name}: a write to the tensor changed the array; share_memory=False asks for a copy")


@pytest.mark.parametrize("share_memory", [True, False], ids=["share", "copy"])
@pytest.mark.parametrize("view", [*sorted(_SHAREABLE_VIEWS), "0-d"])
def test_from_numpy_each_layout(impl, view, share_memory):
    if view == "0-d":
        a = _random_array(np.float64, (), seed=17)
    else:
        a = _SHAREABLE_VIEWS[view](_random_array(np.float64, (4, 6), seed=17))
    name = f"from_numpy({view} float64 array of shape {a.shape}, share_memory={share_memory})"
    original = a.copy()
    t = impl.from_numpy(a, share_memory=share_memory)
    assert isinstance(t, torch.Tensor), f"{name}: returned {type(t).__name__}, expected a Tensor"
    assert tuple(t.shape) == a.shape, f"{name}: shape {tuple(t.shape)}, expected {a.shape}"
    assert t.dtype == torch.float64, f"{name}: dtype {t.dtype}, expected torch.float64"
    assert np.array_equal(_values(t), original), f"{name}: values differ from the array's"
    a[...] = original + 1
    if share_memory:
        assert np.array_equal(_values(t), original + 1), (
            f"{name}: a write to the array was not seen by the tensor; it must be shared")
    else:
        assert np.array_equal(_values(t), original), (
            f"{name}: a write to the array changed the tensor; share_memory=False asks for a copy")


_NEGATIVE_VIEWS = {
    "a[::-1]": lambda a: a[::-1],
    "a[:, ::-1]": lambda a: a[:, ::-1],
    "a[::-2, 1:]": lambda a: a[::-2, 1:],
    "np.flip(a)": np.flip,
    "a.T[::-1]": lambda a: a.T[::-1],
}


# A negative stride is minus a multiple of the item size: -1 byte exists only for one-byte dtypes.
_NEGATIVE_STRIDE_DTYPES = [np.float32, np.uint8, np.bool_]


@pytest.mark.parametrize("share_memory", [True, False], ids=["share", "copy"])
@pytest.mark.parametrize("view", sorted(_NEGATIVE_VIEWS))
@pytest.mark.parametrize("dtype", _NEGATIVE_STRIDE_DTYPES, **_NUMPY_IDS)
def test_from_numpy_negative_strides_are_copied(impl, dtype, view, share_memory):
    base = _random_array(dtype, (4, 5), seed=11)
    a = _NEGATIVE_VIEWS[view](base)
    expected = a.copy()
    name = (f"from_numpy({view} of a (4, 5) {base.dtype} array, strides {a.strides}, "
            f"share_memory={share_memory})")
    try:
        t = impl.from_numpy(a, share_memory=share_memory)
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported to the learner
        raise AssertionError(f"{name} raised {type(exc).__name__}: {exc!s:.200}; arrays with "
                             "negative strides must be copied, not rejected") from None
    want = torch.from_numpy(expected).dtype
    assert t.dtype == want, f"{name}: dtype {t.dtype}, expected {want}"
    assert np.array_equal(_values(t), expected), f"{name}: values differ from the array's"
    base[...] = _changed(base)
    assert np.array_equal(_values(t), expected), f"{name}: a write to the array changed the tensor"
    written = base.copy()
    t.copy_(torch.from_numpy(_changed(expected)))
    assert np.array_equal(base, written), f"{name}: a write to the tensor changed the array"


@pytest.mark.parametrize("share_memory", [True, False], ids=["share", "copy"])
def test_from_numpy_read_only_arrays_are_copied(impl, share_memory):
    base = _random_array(np.int64, (3, 4), seed=13)
    read_only = base.view()
    read_only.flags.writeable = False
    name = f"from_numpy(read-only array, share_memory={share_memory})"
    t = impl.from_numpy(read_only, share_memory=share_memory)
    expected = base.copy()
    assert t.dtype == torch.int64, f"{name}: dtype {t.dtype}, expected torch.int64"
    assert np.array_equal(_values(t), expected), f"{name}: values differ from the array's"
    t.add_(1)
    assert np.array_equal(base, expected), (
        f"{name}: a write to the tensor changed the read-only array's memory; read-only arrays "
        "must be copied")
    base[...] = 0
    assert np.array_equal(_values(t), expected + 1), (
        f"{name}: a write to the array's memory changed the tensor; read-only arrays must be "
        "copied")


def test_from_numpy_broadcast_array_is_copied(impl):
    row = np.arange(3.0)
    a = np.broadcast_to(row, (4, 3))  # read-only, stride 0 along the first axis
    name = "from_numpy(np.broadcast_to(np.arange(3.0), (4, 3)))"
    t = impl.from_numpy(a)
    assert np.array_equal(_values(t), np.tile(row, (4, 1))), f"{name}: values differ"
    t[0, 0] = 100.0
    assert float(t[1, 0]) == 0.0 and row[0] == 0.0, (
        f"{name}: writing t[0, 0] also changed other rows or the source row; the read-only "
        "broadcast array must be copied into a tensor of its own")


@pytest.mark.parametrize("share", [True, False], ids=["share", "copy"])
@pytest.mark.parametrize("dtype", _NUMPY_DTYPES, **_NUMPY_IDS)
@settings(max_examples=_PER_DTYPE_EXAMPLES)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
       seed=st.integers(0, 2**32 - 1))
def test_round_trips(impl, dtype, share, shape, seed):
    a = _random_array(dtype, shape, seed)
    name = f"to_numpy(from_numpy({a.dtype} array of shape {a.shape}, share_memory={share}))"
    back = impl.to_numpy(impl.from_numpy(a.copy(), share_memory=share))
    assert isinstance(back, np.ndarray), f"{name}: returned {type(back).__name__}"
    assert back.dtype == a.dtype and back.shape == a.shape, (
        f"{name}: got dtype {back.dtype} shape {back.shape}, expected {a.dtype} {a.shape}")
    assert np.array_equal(back, a), f"{name}: values changed on the round trip"
    t = torch.from_numpy(a.copy())
    again = impl.from_numpy(impl.to_numpy(t), share_memory=share)
    assert again.dtype == t.dtype and torch.equal(again, t), (
        f"from_numpy(to_numpy({t.dtype} tensor of shape {tuple(t.shape)})): got dtype "
        f"{again.dtype} or values that differ from the tensor's")


def test_from_numpy_rejects_non_arrays(impl):
    impl.from_numpy(np.zeros(2))  # a stub's NotImplementedError surfaces here, as "not started"
    for value in ([1.0, 2.0], torch.zeros(2), 3.0):
        _raises(impl.from_numpy, value, TypeError, "ndarray", f"from_numpy({value!r})")
