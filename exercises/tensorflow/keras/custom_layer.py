"""Custom Keras layers and models: build, add_weight, get_config, the training flag.

The question
------------
"How do you implement custom layers or models in TensorFlow?" You subclass
``keras.layers.Layer`` (or ``keras.Model``), create weights in ``build`` once the input shape is
known, compute in ``call``, and return your constructor arguments from ``get_config`` so the
layer can be saved to a ``.keras`` file and recreated. Behaviour that differs between training
and inference (dropout, batch statistics) follows the ``training`` argument of ``call``.

Your task
---------
1. ``RBF(units, gamma=1.0)``: a layer of Gaussian radial basis features. For an input ``x`` of
   shape ``(..., D)`` and trainable centers ``c`` of shape ``(units, D)``,
   ``out[..., j] = exp(-gamma * sum_d (x[..., d] - c[j, d]) ** 2)``.
2. ``ResidualDense(units, dropout=0.0)``: a ``keras.Model`` computing
   ``x + Dropout(dropout)(relu(Dense(units)(x)))``.

Contract
--------
- ``RBF`` has no weights until it is built; building (the first call) creates exactly one
  trainable weight, ``layer.centers``, of shape ``(units, D)``, with ``add_weight``. Later calls
  reuse it.
- The output has shape ``(..., units)`` for any number of leading dimensions, in the layer's
  dtype (``RBF(..., dtype="float64")`` computes in float64). Gradients flow to the input and to
  the centers.
- ``RBF.from_config(layer.get_config())`` recreates the layer with the same ``units``, ``gamma``,
  ``name`` and ``dtype``.
- ``ResidualDense`` has no weights until built; then two trainable weights, the Dense kernel
  ``(units, units)`` and bias ``(units,)``. Its input's last dimension must equal ``units``
  (otherwise ``ValueError`` naming ``units`` when it is built).
- ``call(inputs, training=False)``: with ``training=False`` (or no argument) the output is exactly
  ``x + relu(x @ kernel + bias)``; with ``training=True`` dropout (inverted: kept units scaled by
  ``1 / (1 - dropout)``) applies to the relu output.
- ``ResidualDense.get_config()`` holds ``units`` and ``dropout``.
- A model built from both layers saves to a ``.keras`` file and loads back with
  ``keras.saving.load_model(path, custom_objects={"RBF": RBF, "ResidualDense": ResidualDense})``
  with the same configs and outputs.
- ``units`` not a positive int, ``gamma`` not a positive finite number, or ``dropout`` outside
  ``[0, 1)`` (NaN included): ``ValueError`` naming the argument.

Hints
-----
- ``build(self, input_shape)``: ``self.add_weight(name=..., shape=..., initializer=..., trainable=True)``.
- ``get_config``: start from ``super().get_config()`` (it carries name, dtype, trainable) and add
  your constructor arguments.
- Broadcast ``(..., 1, D)`` against ``(units, D)``.
- ``keras.layers.Dropout(rate)(h, training=training)``.
"""

from __future__ import annotations

import keras


class RBF(keras.layers.Layer):
    """Gaussian radial basis features: ``exp(-gamma * |x - c_j|^2)`` for ``units`` centers ``c_j``."""

    def __init__(self, units: int, gamma: float = 1.0, **kwargs) -> None:
        super().__init__(**kwargs)
        raise NotImplementedError

    def build(self, input_shape) -> None:
        """Create ``self.centers`` of shape ``(units, input_shape[-1])``."""
        raise NotImplementedError

    def call(self, inputs):
        """``(..., D) -> (..., units)``."""
        raise NotImplementedError

    def get_config(self) -> dict:
        """Everything ``from_config`` needs to recreate this layer."""
        raise NotImplementedError


class ResidualDense(keras.Model):
    """``x + Dropout(relu(Dense(units)(x)))``; the input's last dimension must equal ``units``."""

    def __init__(self, units: int, dropout: float = 0.0, **kwargs) -> None:
        super().__init__(**kwargs)
        raise NotImplementedError

    def call(self, inputs, training=False):
        """Residual output of the input's shape; dropout only when ``training`` is True."""
        raise NotImplementedError

    def get_config(self) -> dict:
        """Everything ``from_config`` needs to recreate this model."""
        raise NotImplementedError
