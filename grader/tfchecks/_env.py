"""Import TensorFlow quietly: its C++ start-up logs would bury the learner's test output."""

from __future__ import annotations

from grader.defaults import quiet_tensorflow

# Before the first TensorFlow import: level 2 drops INFO and WARNING from the C++ runtime, and
# without oneDNN's custom ops TensorFlow neither prints its round-off notice nor gives results
# that vary with the machine's CPU.
quiet_tensorflow()

import numpy as np  # noqa: E402 - after quiet_tensorflow()
import tensorflow as tf  # noqa: E402

__all__ = ["VARIABLES", "as_numpy", "dtype_of", "np", "tf"]

# Keras 3 layers hold keras.Variable objects, which are not tf.Variable instances.
VARIABLES = (tf.Variable, tf.keras.Variable)


def dtype_of(value) -> tf.DType:
    """The ``tf.DType`` of a tensor or a (TensorFlow or Keras) Variable."""
    return tf.as_dtype(value.dtype)


def as_numpy(value, *, name: str) -> np.ndarray:
    """An eager tensor, a Variable, a NumPy array or a Python number as a NumPy array.

    Symbolic tensors (inside a ``tf.function`` or a Keras functional model) have no value: the
    message says so rather than TensorFlow's own about ``.numpy()``.
    """
    if isinstance(value, tf.keras.Variable):
        value = value.value  # the backing tf.Variable
    if isinstance(value, (tf.Tensor, tf.Variable)):
        if not hasattr(value, "numpy") or not tf.executing_eagerly():
            raise AssertionError(f"{name}: got a symbolic tensor without a value ({value!r}); "
                                 "return an eager tensor")
        try:
            return np.asarray(value.numpy())
        except (AttributeError, NotImplementedError, ValueError) as exc:
            raise AssertionError(f"{name}: got a symbolic tensor without a value ({exc!s:.150})") from None
    if isinstance(value, (np.ndarray, np.generic, int, float, complex, bool, list, tuple)):
        try:
            return np.asarray(value)
        except ValueError as exc:
            raise AssertionError(f"{name}: cannot be read as an array: {exc!s:.150}") from None
    raise AssertionError(f"{name}: expected a tf.Tensor, a Variable, a NumPy array or a number, "
                         f"got {type(value).__name__}")
