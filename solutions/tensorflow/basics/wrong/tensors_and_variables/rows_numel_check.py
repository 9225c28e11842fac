"""Wrong: checks only that rows hold as many numbers as the replaced rows and reshapes them
(breaks: a wrong shape raises ValueError naming rows, also one that holds the right number of values)."""

import tensorflow as tf


def _checked(shape: tf.TensorShape, dtype: tf.DType, indices, rows) -> tuple[tf.Tensor, tf.Tensor]:
    """Validate against a target of ``shape``/``dtype``; return (indices as (K, 1), rows)."""
    indices = tf.convert_to_tensor(indices)
    if not indices.dtype.is_integer or indices.shape.rank != 1 or indices.shape[0] == 0:
        raise ValueError(f"indices must be a non-empty 1-D list of integers, got shape "
                         f"{indices.shape} and dtype {indices.dtype.name}")
    n = shape[0]
    # Checked here because TensorFlow's own out-of-range error is an InvalidArgumentError and
    # negative indices would not count from the end anyway.
    if bool(tf.reduce_any((indices < 0) | (indices >= n))):
        raise ValueError(f"indices must lie in [0, {n}), got {indices.numpy().tolist()}")
    rows = tf.convert_to_tensor(rows, dtype=dtype)
    expected = [indices.shape[0], *shape[1:]]
    if rows.shape.num_elements() != tf.TensorShape(expected).num_elements():
        raise ValueError(f"rows must have shape {tuple(expected)} (one row per index), "
                         f"got {tuple(rows.shape)}")
    return indices[:, None], tf.reshape(rows, expected)


def scatter_rows(t: tf.Tensor, indices, rows) -> tf.Tensor:
    """A new tensor: ``t`` with row ``indices[k]`` replaced by ``rows[k]``."""
    index, rows = _checked(t.shape, t.dtype, indices, rows)
    # An op, not an in-place write: tensors are immutable, and the op has a gradient for both
    # the untouched rows of t and the new rows.
    return tf.tensor_scatter_nd_update(t, index, rows)


def scatter_rows_(var: tf.Variable, indices, rows) -> tf.Variable:
    """Replace rows of ``var`` in place; return ``var`` itself."""
    if not isinstance(var, tf.Variable):
        raise TypeError(f"var must be a tf.Variable, got {type(var).__name__}")
    index, rows = _checked(var.shape, var.dtype, indices, rows)
    # Mutates the Variable's buffer: every holder of this object (a model, a tf.function that
    # captured it) sees the new values.
    var.scatter_nd_update(index, rows)
    return var
