"""Public tests for tensorflow.autodiff.gradient_tape: a few quick examples. Run with
``pytest exercises/tensorflow/autodiff/test_gradient_tape.py``."""

import tensorflow as tf

from grader.tfchecks import assert_close


def test_gradient_of_a_constant(impl):
    x = tf.constant([1.0, -2.0, 3.0], tf.float64)
    g = impl.gradient(lambda t: tf.reduce_sum(t ** 2), x)
    assert g is not None, "gradient returned None: is the tape watching x?"
    assert_close(g, 2 * x, name="gradient(sum(x**2), x)")


def test_hessian_vector_product_of_a_quadratic(impl):
    # f(x) = x0^2 + 3 x0 x1 has the Hessian [[2, 3], [3, 0]].
    x = tf.constant([0.5, 2.0], tf.float64)
    v = tf.constant([1.0, 1.0], tf.float64)
    hv = impl.hessian_vector_product(lambda t: t[0] ** 2 + 3 * t[0] * t[1], x, v)
    assert_close(hv, [5.0, 3.0], name="hessian_vector_product(x0^2 + 3 x0 x1, x, [1, 1])")


def test_two_losses_grads_shapes(impl):
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
    grads_a, grads_b = impl.two_losses_grads(model, tf.ones((3, 4)))
    for grads in (grads_a, grads_b):
        assert [tuple(g.shape) for g in grads] == [(4, 2), (2,)]
