"""Wrong: finds out by calling the jit-compiled fn, so fn runs (its assign_add and all)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf


@tf.function(jit_compile=True)
def dense_gelu(x: tf.Tensor, w: tf.Tensor, b: tf.Tensor) -> tf.Tensor:
    """``gelu(x @ w + b)`` with the exact GELU (make this a ``tf.function(jit_compile=True)``)."""
    # Traced per input shape, so the static shapes are known here and a mismatch is a Python error.
    if x.shape[-1] != w.shape[0]:
        raise ValueError(f"w must have shape (in_features, out_features) with in_features = x's last "
                         f"dimension {x.shape[-1]}, got w of shape {tuple(w.shape)}")
    if tuple(b.shape) != (w.shape[1],):
        raise ValueError(f"b must have shape (out_features,) = ({w.shape[1]},), got {tuple(b.shape)}")
    z = tf.matmul(x, w) + b  # matmul broadcasts w over x's leading batch dimensions
    return 0.5 * z * (1.0 + tf.math.erf(z / tf.cast(tf.sqrt(2.0), z.dtype)))


def compiles_with_xla(fn: Callable[..., Any], *args: Any) -> bool:
    """Whether XLA can compile ``fn`` for ``args``, found without running ``fn``."""
    compiled = tf.function(fn, jit_compile=True)
    # Tracing first, outside the try: an error of fn's own is a bug to report, not an answer.
    compiled.get_concrete_function(*args)
    try:
        compiled(*args)
    except tf.errors.InvalidArgumentError:
        return False
    return True
