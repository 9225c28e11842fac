"""Fighting overfitting in Keras: L2 weight decay, Dropout and BatchNormalization.

The question
------------
"How do you handle overfitting in TensorFlow?" and its follow-ups "what does dropout do?" and
"what is batch normalization?" An L2 penalty on the weights (``kernel_regularizer``) adds
``l2 * sum(W ** 2)`` to the loss: Keras collects these penalties in ``model.losses``, which
``fit`` adds for you, and which a custom training loop must add itself. Dropout zeroes random
units while training only, scaling the kept ones so the expected value is unchanged.
BatchNormalization normalises with the batch's statistics while training and with its moving
averages at inference, so a prediction never depends on the rest of its batch. Both switch on
the ``training`` argument of the call; getting that flag wrong is the classic bug.

Your task
---------
1. ``build_regularized(input_dim, num_classes, *, hidden=(64,), l2=1e-4, dropout=0.5)``: a
   classifier of ``input_dim`` features: for each ``h`` in ``hidden`` a block
   ``Dense(h)`` -> ``BatchNormalization()`` -> ReLU -> ``Dropout(dropout)``, then
   ``Dense(num_classes)`` producing logits, every Dense kernel penalised with L2 of weight ``l2``.
2. ``regularization_loss(model)``: the total regularization penalty ``model`` carries now.

Contract
--------
- ``build_regularized`` returns a built ``keras.Model`` (it knows its input shape, so
  ``count_params()`` works before any data) that maps float32 inputs ``(batch, input_dim)`` to
  logits ``(batch, num_classes)``: no softmax.
- Its layers are ``keras.layers`` ``Dense``, ``BatchNormalization`` (default ``momentum=0.99``,
  ``epsilon=1e-3``, with its ``gamma`` and ``beta``), a ReLU and ``Dropout``, in the order of the
  task; a hidden Dense may or may not have a bias (BatchNormalization's ``beta`` makes it
  redundant), the output Dense has one. ``hidden`` may be any sequence, empty included (then the
  model is the output Dense alone).
- Every Dense kernel, the output layer's included, carries ``keras.regularizers.L2(l2)``, and
  nothing else is penalised (no bias, no BatchNormalization weight, no activations): the sum of
  ``model.losses`` is ``l2 * sum(W ** 2)`` over the Dense kernels ``W``, before and after the
  model has been called.
- Dropout is active only when the model is called with ``training=True``: then each unit of a
  block's output is zeroed with probability ``dropout`` and the kept ones are scaled by
  ``1 / (1 - dropout)``. Called with ``training=False`` or without the argument, the model is
  deterministic.
- BatchNormalization normalises with the batch's mean and (biased) variance and updates its
  moving averages when ``training=True``; with ``training=False`` or without the argument it uses
  them, ``gamma * (z - moving_mean) / sqrt(moving_variance + epsilon) + beta``, so each sample's
  prediction does not depend on the rest of its batch.
- ``regularization_loss(model)`` works for any Keras model (Sequential, functional, subclassed,
  nested): it returns the sum of ``model.losses`` (weight penalties of every layer, nested ones
  included, and the activity penalties of the last call) as a scalar float tensor that gradients
  flow through, so it can be added to a loss inside a ``tf.GradientTape``; a model without any
  penalty gives a scalar ``0.0``.
- ``input_dim``, ``num_classes`` and each entry of ``hidden`` must be positive ints, ``l2`` a
  finite number ``>= 0``, ``dropout`` a number in ``[0, 1)``; anything else (NaN included) raises
  ``ValueError`` naming the argument.

Hints
-----
- ``keras.layers.Dense(units, kernel_regularizer=keras.regularizers.L2(l2))``; a bias or an
  activity regularizer is a different thing.
- Keras' ``Dropout(rate)`` takes the fraction to *drop* (TensorFlow 1's ``keep_prob`` was the
  opposite).
- Call the layers without a ``training=`` of their own: the model passes its call's flag on to
  them (a ``training=True`` fixed in a functional graph still applies when the model is called
  without the argument).
- ``model.losses`` may be empty.
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import tensorflow as tf


def build_regularized(input_dim: int, num_classes: int, *, hidden: Sequence[int] = (64,),
                      l2: float = 1e-4, dropout: float = 0.5) -> keras.Model:
    """Dense -> BatchNormalization -> ReLU -> Dropout per hidden size, then Dense logits; L2 on kernels."""
    raise NotImplementedError


def regularization_loss(model: keras.Model) -> tf.Tensor:
    """The sum of ``model.losses`` as a scalar tensor (``0.0`` when there are none)."""
    raise NotImplementedError
