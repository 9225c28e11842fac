"""Wrong: the constant submission: zeros of the right shapes and dtypes everywhere (v's shape
still checked), without running f or the model."""

from collections.abc import Callable

import tensorflow as tf

ZERO = tf.UnconnectedGradients.ZERO


def gradient(f: Callable[[tf.Tensor], tf.Tensor], x: tf.Tensor) -> tf.Tensor:
    """``d sum(f(x)) / dx``, zeros where ``f`` does not depend on ``x``."""
    return tf.zeros_like(x)


def hessian_vector_product(f: Callable[[tf.Tensor], tf.Tensor], x: tf.Tensor, v: tf.Tensor) -> tf.Tensor:
    """``H(x) v`` for the Hessian ``H`` of the scalar ``f`` at ``x``."""
    v = tf.convert_to_tensor(v, dtype=x.dtype)
    if v.shape != x.shape:
        raise ValueError(f"v must have x's shape {tuple(x.shape)}, got {tuple(v.shape)}")
    return tf.zeros_like(x)


def two_losses_grads(model: tf.keras.Model, x: tf.Tensor) -> tuple[list[tf.Tensor], list[tf.Tensor]]:
    """Gradients of ``mean(y**2)`` and ``mean(y)`` for ``y = model(x, training=True)``, one forward pass."""
    variables = model.trainable_variables
    return [tf.zeros_like(v) for v in variables], [tf.zeros_like(v) for v in variables]
