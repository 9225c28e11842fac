"""Wrong: differentiates with respect to model.variables, non-trainable ones included, so the
lists are not aligned with model.trainable_variables."""

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
    with tf.GradientTape(persistent=True) as tape:  # persistent: two gradient() calls
        y = model(x, training=True)
        loss_a = tf.reduce_mean(tf.square(y))
        loss_b = tf.reduce_mean(y)
    variables = model.variables
    grads_a = tape.gradient(loss_a, variables)
    grads_b = tape.gradient(loss_b, variables)
    del tape  # a persistent tape holds its recorded tensors until released
    # Not unconnected_gradients=ZERO: with Keras 3 variables (whose dtype is a string) it raises.
    return ([tf.zeros_like(v) if g is None else g for g, v in zip(grads_a, variables)],
            [tf.zeros_like(v) if g is None else g for g, v in zip(grads_b, variables)])
