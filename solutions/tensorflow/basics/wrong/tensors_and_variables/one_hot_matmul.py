"""Wrong: replaces rows with one-hot matrix products, t - P^T P t + P^T rows: differentiable and
right for float32/float64, but tf.matmul has no CPU kernel for the small integer and unsigned
dtypes (breaks: any numeric dtype)."""

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
    if rows.shape != expected:
        raise ValueError(f"rows must have shape {tuple(expected)} (one row per index), "
                         f"got {tuple(rows.shape)}")
    return indices[:, None], rows


def scatter_rows(t: tf.Tensor, indices, rows) -> tf.Tensor:
    """A new tensor: ``t`` with row ``indices[k]`` replaced by ``rows[k]``."""
    index, rows = _checked(t.shape, t.dtype, indices, rows)
    # An op, not an in-place write: tensors are immutable, and the op has a gradient for both
    # the untouched rows of t and the new rows.
    n = t.shape[0]
    pick = tf.one_hot(index[:, 0], n, dtype=t.dtype)  # (K, N)
    flat_t = tf.reshape(t, [n, -1])
    flat_rows = tf.reshape(rows, [tf.shape(rows)[0], -1])
    kept = flat_t - tf.matmul(pick, tf.matmul(pick, flat_t), transpose_a=True)
    return tf.reshape(kept + tf.matmul(pick, flat_rows, transpose_a=True), tf.shape(t))


def scatter_rows_(var: tf.Variable, indices, rows) -> tf.Variable:
    """Replace rows of ``var`` in place; return ``var`` itself."""
    if not isinstance(var, tf.Variable):
        raise TypeError(f"var must be a tf.Variable, got {type(var).__name__}")
    index, rows = _checked(var.shape, var.dtype, indices, rows)
    # Mutates the Variable's buffer: every holder of this object (a model, a tf.function that
    # captured it) sees the new values.
    var.scatter_nd_update(index, rows)
    return var
