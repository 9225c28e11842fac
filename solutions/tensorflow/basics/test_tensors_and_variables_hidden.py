"""Hidden tests for tensorflow.basics.tensors_and_variables (the catalog's contract checks)."""

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.tfchecks import (
    assert_close,
    assert_dtype,
    assert_raises_naming,
    assert_shape,
    shapes,
)

# "any numeric dtype": every kind of number TensorFlow has, each named explicitly.
DTYPES = [tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int8, tf.int16, tf.int32, tf.int64,
          tf.uint8, tf.complex64, tf.complex128]
# How indices and rows may arrive.
INDEX_KINDS = ["list", "int32", "int64"]
ROW_KINDS = ["tensor", "numpy", "nested"]


def _values(rng: np.random.Generator, shape, dtype: tf.DType) -> np.ndarray:
    """Small whole numbers (exact in every dtype, unsigned ones included) of ``dtype``."""
    values = rng.integers(0 if dtype.is_unsigned else -9, 10, size=shape)
    return values.astype(dtype.as_numpy_dtype)


def _indices(idx: list[int], kind: str):
    return idx if kind == "list" else tf.constant(idx, getattr(tf, kind))


def _rows(new: np.ndarray, kind: str, dtype: tf.DType):
    if kind == "tensor":
        return tf.constant(new, dtype)
    return new if kind == "numpy" else new.tolist()


def _expected(base: np.ndarray, idx: list[int], new: np.ndarray) -> np.ndarray:
    expected = base.copy()
    expected[idx] = new
    return expected


def _name(fn: str, t, indices) -> str:
    idx = indices if isinstance(indices, list) else indices.numpy().tolist()
    return f"{fn}(t of shape {tuple(t.shape)} {t.dtype.name}, indices={idx}, rows)"


def _check_scatter(impl, base: np.ndarray, dtype: tf.DType, indices, rows, expected) -> None:
    t = tf.constant(base, dtype)
    out = impl.scatter_rows(t, indices, rows)
    name = _name("scatter_rows", t, indices)
    assert isinstance(out, tf.Tensor), f"{name}: expected a tf.Tensor, got {type(out).__name__}"
    assert_shape(out, expected.shape, name=name)
    assert_dtype(out, dtype, name=name)
    assert_close(out, expected, rtol=0, atol=0, name=name)
    assert_close(t, base, rtol=0, atol=0, name=f"{name}: the input t afterwards (must be unchanged)")


def _check_scatter_in_place(impl, base: np.ndarray, dtype: tf.DType, indices, rows, expected) -> None:
    var = tf.Variable(tf.constant(base, dtype))
    reads = tf.function(lambda: var.read_value())  # a holder of the Variable, like a model's step
    reads()
    out = impl.scatter_rows_(var, indices, rows)
    name = _name("scatter_rows_", var, indices)
    assert out is var, (f"{name}: must return the Variable it was given (the same object), got "
                        f"{type(out).__name__}; was the name rebound to a new tf.Variable?")
    assert_shape(var, expected.shape, name=f"{name}: var")
    assert_dtype(var, dtype, name=f"{name}: var")
    assert_close(var, expected, rtol=0, atol=0, name=f"{name}: var afterwards")
    assert_close(reads(), expected, rtol=0, atol=0, name=f"{name}: a tf.function reading var afterwards")


@st.composite
def scatter_cases(draw):
    """(base, dtype, indices, rows, expected) over hypothesis shapes, with every dtype and kind."""
    shape = draw(shapes(min_dims=1, max_dims=3, max_side=4))
    dtype = draw(st.sampled_from(DTYPES))
    n = shape[0]
    idx = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    base, new = _values(rng, shape, dtype), _values(rng, (len(idx), *shape[1:]), dtype)
    indices = _indices(idx, draw(st.sampled_from(INDEX_KINDS)))
    rows = _rows(new, draw(st.sampled_from(ROW_KINDS)), dtype)
    return base, dtype, indices, rows, _expected(base, idx, new)


@pytest.mark.points(2)
@settings(max_examples=15)
@given(case=scatter_cases())
def test_scatter_rows_matches_numpy_and_keeps_t(impl, case):
    _check_scatter(impl, *case)


@pytest.mark.points(2)
@settings(max_examples=15)
@given(case=scatter_cases())
def test_scatter_rows_in_place_updates_the_same_variable(impl, case):
    _check_scatter_in_place(impl, *case)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_every_numeric_dtype(impl, dtype):
    rng = np.random.default_rng(len(dtype.name))
    base, new = _values(rng, (4, 3), dtype), _values(rng, (2, 3), dtype)
    expected = _expected(base, [3, 1], new)
    _check_scatter(impl, base, dtype, [3, 1], tf.constant(new, dtype), expected)
    _check_scatter_in_place(impl, base, dtype, [3, 1], tf.constant(new, dtype), expected)


@pytest.mark.parametrize("index_kind", INDEX_KINDS)
@pytest.mark.parametrize("row_kind", ROW_KINDS)
def test_every_kind_of_indices_and_rows(impl, index_kind, row_kind):
    # float64, where nested Python numbers would otherwise become float32 tensors.
    rng = np.random.default_rng(7)
    base, new = rng.standard_normal((5, 2)), rng.standard_normal((2, 2))
    expected = _expected(base, [4, 0], new)
    _check_scatter(impl, base, tf.float64, _indices([4, 0], index_kind), _rows(new, row_kind, tf.float64),
                   expected)
    _check_scatter_in_place(impl, base, tf.float64, _indices([4, 0], index_kind),
                            _rows(new, row_kind, tf.float64), expected)


def test_numpy_rows_of_another_dtype_take_t_dtype(impl):
    # A NumPy array of float64 (NumPy's default) for a float32 tensor and Variable.
    base = np.arange(6, dtype=np.float32).reshape(3, 2)
    new = np.array([[0.5, -1.25]])
    expected = _expected(base, [1], new.astype(np.float32))
    _check_scatter(impl, base, tf.float32, [1], new, expected)
    _check_scatter_in_place(impl, base, tf.float32, [1], new, expected)


@pytest.mark.parametrize("shape", [(4,), (4, 3), (4, 2, 3)], ids=["no_feature_dims", "one", "two"])
def test_any_number_of_feature_dims(impl, shape):
    rng = np.random.default_rng(len(shape))
    base, new = rng.standard_normal(shape), rng.standard_normal((2, *shape[1:]))
    expected = _expected(base, [0, 2], new)
    _check_scatter(impl, base, tf.float64, [0, 2], tf.constant(new), expected)
    _check_scatter_in_place(impl, base, tf.float64, [0, 2], tf.constant(new), expected)


def test_first_and_last_rows_are_in_range(impl):
    rng = np.random.default_rng(3)
    base, new = rng.standard_normal((3, 2)), rng.standard_normal((2, 2))
    expected = _expected(base, [2, 0], new)
    for kind in INDEX_KINDS:
        _check_scatter(impl, base, tf.float64, _indices([2, 0], kind), tf.constant(new), expected)
        _check_scatter_in_place(impl, base, tf.float64, _indices([2, 0], kind), tf.constant(new), expected)


@pytest.mark.points(2)
@settings(max_examples=6)
@given(shape=shapes(min_dims=1, max_dims=3, max_side=3), data=st.data())
def test_scatter_rows_gradient_reaches_t_and_rows(impl, shape, data):
    n = shape[0]
    idx = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True), label="indices")
    rng = np.random.default_rng(len(idx) + n)
    t = tf.constant(rng.standard_normal(shape))
    rows = tf.constant(rng.standard_normal((len(idx), *shape[1:])))
    weight = rng.standard_normal(shape)
    with tf.GradientTape() as tape:
        tape.watch([t, rows])
        out = impl.scatter_rows(t, idx, rows)
        total = tf.reduce_sum(tf.constant(weight) * out)
    grad_t, grad_rows = tape.gradient(total, [t, rows])
    name = f"scatter_rows(t of shape {shape}, indices={idx}, rows) in float64"
    # d sum(w * out) / dt is w except on the replaced rows (0 there); / d rows[k] is w[indices[k]].
    want_t = weight.copy()
    want_t[idx] = 0.0
    assert grad_t is not None, f"{name}: no gradient reaches t (does the result leave TensorFlow?)"
    assert grad_rows is not None, f"{name}: no gradient reaches rows (does the result leave TensorFlow?)"
    assert_close(tf.convert_to_tensor(grad_t), want_t, rtol=1e-12, atol=1e-12, name=f"{name}: gradient for t")
    assert_close(tf.convert_to_tensor(grad_rows), weight[idx], rtol=1e-12, atol=1e-12,
                 name=f"{name}: gradient for rows")


BAD_INDICES = {"too_big": [3], "negative": [-1], "2d": [[0]], "one_out": [0, 5], "one_negative": [1, -3]}


@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("bad", list(BAD_INDICES), ids=str)
def test_bad_indices_raise_value_error(impl, bad, kind):
    bad = BAD_INDICES[bad]
    t, var = tf.zeros((3, 2)), tf.Variable(tf.zeros((3, 2)))
    rows = np.ones((1 if bad == [[0]] else len(bad), 2), np.float32)
    indices = _indices(bad, kind)
    assert_raises_naming(ValueError, "indices", impl.scatter_rows, t, indices, rows)
    assert_raises_naming(ValueError, "indices", impl.scatter_rows_, var, indices, rows)
    assert_close(var, np.zeros((3, 2)), name="var after a rejected scatter_rows_ (must be unchanged)")


@pytest.mark.parametrize("shape", [(2, 3), (1, 2), (2, 2, 1), (1, 4), (4,)],
                         ids=["wider", "fewer_rows", "extra_dim", "same_size_wrong_shape", "flat"])
def test_bad_rows_shape_raises_value_error(impl, shape):
    # t is (3, 2) and two rows are replaced: rows must be (2, 2); (1, 4) and (4,) hold as many numbers.
    t, var = tf.zeros((3, 2)), tf.Variable(tf.zeros((3, 2)))
    assert_raises_naming(ValueError, "rows", impl.scatter_rows, t, [0, 1], tf.ones(shape))
    assert_raises_naming(ValueError, "rows", impl.scatter_rows_, var, [0, 1], tf.ones(shape))
    assert_close(var, np.zeros((3, 2)), name="var after a rejected scatter_rows_ (must be unchanged)")


@pytest.mark.parametrize("var", ["tensor", "numpy"])
def test_var_that_is_not_a_variable_raises_type_error(impl, var):
    value = tf.zeros((3, 2)) if var == "tensor" else np.zeros((3, 2), np.float32)
    assert_raises_naming(TypeError, "var", impl.scatter_rows_, value, [0], tf.ones((1, 2)))
