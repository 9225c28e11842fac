"""Wrong: opens one tape per loss and runs the model twice (double the compute; with dropout the two losses would see different networks)."""

from collections.abc import Callable

import tensorflow as tf

ZERO = tf.UnconnectedGradients.ZERO


def gradient(f: Callable[[tf.Tensor], tf.Tensor], x: tf.Tensor) -> tf.Tensor:
    """``d sum(f(x)) / dx``, zeros where ``f`` does not depend on ``x``."""
    with tf.GradientTape() as tape:
        tape.watch(x)  # constants are not recorded unless watched (Variables are, anyway)
        y = f(x)
    return tape.gradient(y, x, unconnected_gradients=ZERO)


def hessian_vector_product(f: Callable[[tf.Tensor], tf.Tensor], x: tf.Tensor, v: tf.Tensor) -> tf.Tensor:
    """``H(x) v`` for the Hessian ``H`` of the scalar ``f`` at ``x``."""
    v = tf.convert_to_tensor(v, dtype=x.dtype)
    if v.shape != x.shape:
        raise ValueError(f"v must have x's shape {tuple(x.shape)}, got {tuple(v.shape)}")
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        # Computed while the outer tape records, so the gradient is itself differentiable.
        g = inner.gradient(y, x, unconnected_gradients=ZERO)
        # d/dx <g, v> = H v (H is symmetric): one more backward pass, never the full Hessian.
        gv = tf.reduce_sum(g * v)
    return outer.gradient(gv, x, unconnected_gradients=ZERO)


def two_losses_grads(model: tf.keras.Model, x: tf.Tensor) -> tuple[list[tf.Tensor], list[tf.Tensor]]:
    """Gradients of ``mean(y**2)`` and ``mean(y)`` for ``y = model(x, training=True)``, one forward pass."""
    variables = model.trainable_variables
    with tf.GradientTape() as tape_a:
        loss_a = tf.reduce_mean(tf.square(model(x, training=True)))
    grads_a = tape_a.gradient(loss_a, variables)
    with tf.GradientTape() as tape_b:
        loss_b = tf.reduce_mean(model(x, training=True))
    grads_b = tape_b.gradient(loss_b, variables)
    # Not unconnected_gradients=ZERO: with Keras 3 variables (whose dtype is a string) it raises.
    return ([tf.zeros_like(v) if g is None else g for g, v in zip(grads_a, variables)],
            [tf.zeros_like(v) if g is None else g for g, v in zip(grads_b, variables)])
