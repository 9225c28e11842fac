"""Public tests for tensorflow.performance.xla: a few quick examples. Run with
``pytest exercises/tensorflow/performance/test_xla.py``."""

import math

import numpy as np
import tensorflow as tf


def gelu(z):
    return 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))


def test_dense_gelu_small_example(impl):
    x = np.array([[1.0, -2.0], [0.5, 0.0], [3.0, 1.0]], np.float32)
    w = np.array([[0.5, -1.0, 2.0], [1.0, 0.25, -0.5]], np.float32)
    b = np.array([0.1, 0.0, -0.2], np.float32)
    out = impl.dense_gelu(tf.constant(x), tf.constant(w), tf.constant(b))
    assert out.shape == (3, 3) and out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), gelu(x.astype(np.float64) @ w + b), rtol=1e-5, atol=1e-6)


def test_dense_gelu_has_compiler_ir(impl):
    args = tf.ones((2, 3)), tf.ones((3, 4)), tf.zeros((4,))
    impl.dense_gelu(*args)
    hlo = impl.dense_gelu.experimental_get_compiler_ir(*args)(stage="hlo")
    assert "HloModule" in hlo


def test_compiles_with_xla_yes_and_no(impl):
    x = tf.constant([1.0, -2.0, 3.0])
    assert impl.compiles_with_xla(lambda t: tf.nn.relu(t) * 2.0, x) is True
    assert impl.compiles_with_xla(lambda t: tf.numpy_function(np.sort, [t], tf.float32), x) is False
