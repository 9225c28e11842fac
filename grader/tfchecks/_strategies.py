"""Hypothesis strategies for TensorFlow tensors."""

from __future__ import annotations

from hypothesis import strategies as st

from grader.tfchecks._env import np, tf


def tf_tensors(shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]], dtype: tf.DType = tf.float64,
               *, scale: float = 1.0) -> st.SearchStrategy[tf.Tensor]:
    """Eager tensors of ``shape`` (a shape or a strategy of shapes) with standard-normal values
    times ``scale`` (integer dtypes: rounded). Values come from a drawn seed, so examples are fast
    and reproducible."""
    shape_st = shape if isinstance(shape, st.SearchStrategy) else st.just(tuple(shape))
    dtype = tf.as_dtype(dtype)

    def build(args: tuple[tuple[int, ...], int]) -> tf.Tensor:
        size, seed = args
        values = np.random.default_rng(seed).standard_normal(size) * scale
        if dtype.is_integer:
            values = np.round(values)
        return tf.constant(values.astype(dtype.as_numpy_dtype))

    return st.tuples(shape_st, st.integers(0, 2**31 - 1)).map(build)
