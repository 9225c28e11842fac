"""Wrong: checks gamma with 'gamma < 0', so gamma = 0 (a constant layer) and NaN pass."""

from __future__ import annotations

import numbers

import keras
import tensorflow as tf


def _check_positive_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


class RBF(keras.layers.Layer):
    """Gaussian radial basis features: ``exp(-gamma * |x - c_j|^2)`` for ``units`` centers ``c_j``."""

    def __init__(self, units: int, gamma: float = 1.0, **kwargs) -> None:
        super().__init__(**kwargs)
        _check_positive_int("units", units)
        if gamma < 0:
            raise ValueError(f"gamma must be a positive number, got {gamma!r}")
        self.units = units
        self.gamma = float(gamma)

    def build(self, input_shape) -> None:
        # Only here is the input size known: weights are created from it, once.
        self.centers = self.add_weight(name="centers", shape=(self.units, int(input_shape[-1])),
                                       initializer="random_normal", trainable=True)

    def call(self, inputs):
        # (..., 1, D) - (units, D) -> (..., units, D): exact and never negative, unlike the
        # |x|^2 - 2 x.c + |c|^2 expansion.
        diff = tf.expand_dims(inputs, -2) - self.centers
        return tf.exp(-self.gamma * tf.reduce_sum(tf.square(diff), axis=-1))

    def get_config(self) -> dict:
        # The base config carries name, dtype and trainable; from_config passes it all back to
        # __init__, so every constructor argument must be in it.
        config = super().get_config()
        config.update(units=self.units, gamma=self.gamma)
        return config


class ResidualDense(keras.Model):
    """``x + Dropout(relu(Dense(units)(x)))``; the input's last dimension must equal ``units``."""

    def __init__(self, units: int, dropout: float = 0.0, **kwargs) -> None:
        super().__init__(**kwargs)
        _check_positive_int("units", units)
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real) or not 0 <= dropout < 1:
            raise ValueError(f"dropout must be a rate in [0, 1), got {dropout!r}")
        self.units = units
        self.rate = float(dropout)
        self.dense = keras.layers.Dense(units, activation="relu")
        self.dropout = keras.layers.Dropout(self.rate)

    def build(self, input_shape) -> None:
        if input_shape[-1] != self.units:
            raise ValueError(f"ResidualDense(units={self.units}) adds its input to its output, so the "
                             f"input's last dimension must equal units; got {input_shape[-1]}")
        self.dense.build(input_shape)

    def call(self, inputs, training=False):
        # Dropout is active only when training=True: at inference the layer is deterministic.
        return inputs + self.dropout(self.dense(inputs), training=training)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(units=self.units, dropout=self.rate)
        return config
