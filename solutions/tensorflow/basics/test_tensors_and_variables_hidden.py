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
    check_gradients,
    shapes,
)


@st.composite
def scatter_cases(draw, dtypes=(tf.float64, tf.float32, tf.int32, tf.int64)):
    """(t, indices, rows, expected) with hypothesis shapes; expected built by NumPy."""
    shape = draw(shapes(min_dims=1, max_dims=3, max_side=4))
    dtype = draw(st.sampled_from(dtypes))
    n = shape[0]
    idx = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    base = np.round(rng.standard_normal(shape) * 10).astype(dtype.as_numpy_dtype)
    new = np.round(rng.standard_normal((len(idx), *shape[1:])) * 10).astype(dtype.as_numpy_dtype)
    expected = base.copy()
    expected[idx] = new
    # indices arrive as a Python list or as an int32/int64 tensor; rows as a tensor or a list.
    kind = draw(st.sampled_from(["list", tf.int32, tf.int64]))
    indices = idx if kind == "list" else tf.constant(idx, kind)
    rows = tf.constant(new) if draw(st.booleans()) else new.tolist()
    return tf.constant(base), indices, rows, expected


def _name(fn: str, t, indices) -> str:
    idx = indices if isinstance(indices, list) else indices.numpy().tolist()
    return f"{fn}(t of shape {tuple(t.shape)} {t.dtype.name}, indices={idx}, rows)"


@pytest.mark.points(2)
@settings(max_examples=15)
@given(case=scatter_cases())
def test_scatter_rows_matches_numpy_and_keeps_t(impl, case):
    t, indices, rows, expected = case
    before = t.numpy().copy()
    out = impl.scatter_rows(t, indices, rows)
    name = _name("scatter_rows", t, indices)
    assert isinstance(out, tf.Tensor), f"{name}: expected a tf.Tensor, got {type(out).__name__}"
    assert_shape(out, expected.shape, name=name)
    assert_dtype(out, t.dtype, name=name)
    assert_close(out, expected, rtol=0, atol=0, name=name)
    assert_close(t, before, rtol=0, atol=0, name=f"{name}: the input t afterwards (must be unchanged)")


@pytest.mark.points(2)
@settings(max_examples=15)
@given(case=scatter_cases())
def test_scatter_rows_in_place_updates_the_same_variable(impl, case):
    t, indices, rows, expected = case
    var = tf.Variable(t)
    reads = tf.function(lambda: var.read_value())  # a holder of the Variable, like a model's step
    reads()
    out = impl.scatter_rows_(var, indices, rows)
    name = _name("scatter_rows_", t, indices)
    assert out is var, (f"{name}: must return the Variable it was given (the same object), got "
                        f"{type(out).__name__}; was the name rebound to a new tf.Variable?")
    assert_shape(var, expected.shape, name=f"{name}: var")
    assert_dtype(var, t.dtype, name=f"{name}: var")
    assert_close(var, expected, rtol=0, atol=0, name=f"{name}: var afterwards")
    assert_close(reads(), expected, rtol=0, atol=0,
                 name=f"{name}: a tf.function reading var afterwards")


@pytest.mark.points(2)
@settings(max_examples=6)
@given(shape=shapes(min_dims=1, max_dims=3, max_side=3), data=st.data())
def test_scatter_rows_gradient_matches_finite_differences(impl, shape, data):
    n = shape[0]
    idx = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True), label="indices")
    rng = np.random.default_rng(len(idx) + n)
    t, rows = rng.standard_normal(shape), rng.standard_normal((len(idx), *shape[1:]))
    check_gradients(lambda t, rows: impl.scatter_rows(t, idx, rows), t, rows,
                    name=f"scatter_rows(t of shape {shape}, indices={idx}, rows) in float64")


def test_scatter_rows_float32_from_python_lists(impl):
    t = tf.constant([[0.5, 1.5], [2.5, 3.5]], tf.float32)
    out = impl.scatter_rows(t, [1], [[7.25, -1.0]])
    assert_dtype(out, tf.float32, name="scatter_rows(float32 t, [1], list rows)")
    assert_close(out, [[0.5, 1.5], [7.25, -1.0]], rtol=0, atol=0,
                 name="scatter_rows(float32 t, [1], list rows)")


@pytest.mark.parametrize("bad", [[3], [-1], [[0]], [0, 5]], ids=["too_big", "negative", "2d", "one_out"])
def test_bad_indices_raise_value_error(impl, bad):
    t, var = tf.zeros((3, 2)), tf.Variable(tf.zeros((3, 2)))
    rows = np.ones((len(bad), 2), np.float32) if bad != [[0]] else np.ones((1, 2), np.float32)
    assert_raises_naming(ValueError, "indices", impl.scatter_rows, t, bad, rows)
    assert_raises_naming(ValueError, "indices", impl.scatter_rows_, var, bad, rows)
    assert_close(var, np.zeros((3, 2)), name="var after a rejected scatter_rows_ (must be unchanged)")


def test_bad_rows_and_var_raise(impl):
    t = tf.zeros((3, 2))
    assert_raises_naming(ValueError, "rows", impl.scatter_rows, t, [0, 1], tf.ones((2, 3)))
    assert_raises_naming(ValueError, "rows", impl.scatter_rows, t, [0, 1], tf.ones((1, 2)))
    assert_raises_naming(ValueError, "rows", impl.scatter_rows_, tf.Variable(t), [0], tf.ones((1, 2, 1)))
    assert_raises_naming(TypeError, "var", impl.scatter_rows_, t, [0], tf.ones((1, 2)))
