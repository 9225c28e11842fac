"""Wrong: adds the penalties up as Python floats: the value is right, but no gradient flows through
it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Real

import keras
import tensorflow as tf


def _check_positive_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


def _check_args(input_dim, num_classes, hidden, l2, dropout) -> None:
    _check_positive_int("input_dim", input_dim)
    _check_positive_int("num_classes", num_classes)
    if isinstance(hidden, (str, bytes)) or not isinstance(hidden, Sequence):
        raise ValueError(f"hidden must be a sequence of positive ints, got {hidden!r}")
    for units in hidden:
        _check_positive_int("hidden", units)
    if isinstance(l2, bool) or not isinstance(l2, Real) or not math.isfinite(l2) or l2 < 0:
        raise ValueError(f"l2 must be a finite number >= 0, got {l2!r}")
    # `not 0 <= dropout < 1` is True for NaN too, which every comparison answers False.
    if isinstance(dropout, bool) or not isinstance(dropout, Real) or not 0 <= dropout < 1:
        raise ValueError(f"dropout must be a number in [0, 1), got {dropout!r}")


def build_regularized(input_dim: int, num_classes: int, *, hidden: Sequence[int] = (64,),
                      l2: float = 1e-4, dropout: float = 0.5) -> keras.Model:
    """Dense -> BatchNormalization -> ReLU -> Dropout per hidden size, then Dense logits; L2 on kernels."""
    _check_args(input_dim, num_classes, hidden, l2, dropout)
    layers: list[keras.layers.Layer] = [keras.Input(shape=(input_dim,))]
    for units in hidden:
        # No bias: BatchNormalization subtracts the mean right after, and its beta is the shift.
        layers += [keras.layers.Dense(units, use_bias=False,
                                      kernel_regularizer=keras.regularizers.L2(float(l2))),
                   keras.layers.BatchNormalization(),
                   keras.layers.ReLU(),
                   keras.layers.Dropout(float(dropout))]
    layers.append(keras.layers.Dense(num_classes, kernel_regularizer=keras.regularizers.L2(float(l2))))
    # No `training=` is fixed on any layer: the model's own call passes its flag on, so Dropout
    # and BatchNormalization switch between training and inference with it.
    return keras.Sequential(layers)


def regularization_loss(model: keras.Model) -> tf.Tensor:
    """The sum of ``model.losses`` as a scalar tensor (``0.0`` when there are none)."""
    return sum(float(loss) for loss in model.losses)
