"""Keras models three ways: Sequential, functional, subclassed.

The question
------------
"How do you define and train a model in TensorFlow?" Keras, TensorFlow's high-level API, offers
three ways: a ``Sequential`` stack of layers, the functional API (layers called on symbolic
inputs, which allows several inputs and outputs), and subclassing ``keras.Model`` with your own
``call``. Interviewers then probe the details that break training: an input shape so the model is
built, a loss that matches what the last layer outputs (logits or probabilities), and how a
model with two inputs is fed.

Your task
---------
1. ``build_sequential(input_dim, hidden, num_classes, *, learning_rate=1e-2)``: a compiled
   ``keras.Sequential`` classifier: ``Dense(h, activation="relu")`` for each ``h`` in ``hidden``,
   then ``Dense(num_classes)`` producing logits.
2. ``build_two_input(text_dim, num_dim, num_classes, *, text_units=32, num_units=8, learning_rate=1e-2)``:
   a compiled functional model with two inputs named ``"text"`` (``text_dim`` features) and
   ``"numeric"`` (``num_dim`` features); each goes through its own ``Dense(text_units|num_units,
   activation="relu")``, the two are concatenated and a ``Dense(num_classes)`` gives logits.
3. ``MLPClassifier(hidden, num_classes)``: the same MLP as 1, subclassing ``keras.Model``
   (not compiled; the caller compiles it).

Contract
--------
- Every model outputs logits of shape ``(batch, num_classes)``: no softmax.
- ``build_sequential`` and ``build_two_input`` return models that are already built (they know
  their input shapes, so ``count_params()`` works before any data) and compiled with
  ``keras.optimizers.Adam(learning_rate)``, a sparse categorical cross-entropy loss that matches
  the logits (integer labels), and ``metrics=["accuracy"]``.
- Parameter counts are exactly those of the Dense layers described above, with biases.
- ``build_two_input``'s model accepts a dict ``{"text": ..., "numeric": ...}`` in calls and in
  ``fit``.
- ``MLPClassifier`` has no weights until it is first called; afterwards it has a kernel and a bias
  per Dense layer, and calling it twice on the same input gives the same output.
- On well separated data, each model trains to more than 90% accuracy in a few epochs.
- Sizes that are not positive ints raise ``ValueError`` naming the argument (``input_dim``,
  ``hidden``, ``text_dim``, ``num_dim``, ``text_units``, ``num_units``, ``num_classes``);
  ``num_classes`` must be at least 2. A ``hidden``
  that is not a sequence raises ``TypeError``.

Hints
-----
- ``keras.Input(shape=(input_dim,))`` as the first entry of a Sequential builds it immediately.
- ``keras.losses.SparseCategoricalCrossentropy(from_logits=...)``: which value fits a model without
  a softmax?
- In the functional API, ``keras.Input(..., name="text")`` names an input.
- In a subclassed model, create layers in ``__init__``; ``call`` only uses them.
"""

from __future__ import annotations

from collections.abc import Sequence

import keras


def build_sequential(input_dim: int, hidden: Sequence[int], num_classes: int, *,
                     learning_rate: float = 1e-2) -> keras.Sequential:
    """A compiled Sequential MLP classifier that outputs logits."""
    raise NotImplementedError


def build_two_input(text_dim: int, num_dim: int, num_classes: int, *, text_units: int = 32,
                    num_units: int = 8, learning_rate: float = 1e-2) -> keras.Model:
    """A compiled functional model with inputs named "text" and "numeric" that outputs logits."""
    raise NotImplementedError


class MLPClassifier(keras.Model):
    """Subclassed MLP: Dense+relu per entry of ``hidden``, then Dense logits."""

    def __init__(self, hidden: Sequence[int], num_classes: int, **kwargs) -> None:
        super().__init__(**kwargs)
        raise NotImplementedError

    def call(self, inputs):
        """Logits of shape ``(batch, num_classes)``."""
        raise NotImplementedError
