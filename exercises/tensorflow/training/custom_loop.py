"""A custom training loop: GradientTape inside a tf.function, with per-epoch metrics.

The question
------------
"Write a custom training loop using GradientTape" is a favourite live-coding task: it shows you
know what ``model.fit`` does for you. One step runs the model in training mode under a tape,
reduces the per-example losses to one number, takes the gradients and hands them to the
optimizer; wrapping that step in ``tf.function`` compiles it to a graph. The follow-ups are the
classic mistakes: a step that retraces every epoch, ``training=False`` (or no flag) while
training, ``reduce_sum`` instead of ``reduce_mean``, a loss metric that is never reset, an update
that never reaches the optimizer.

Your task
---------
``train(model, dataset, *, epochs, optimizer, loss_fn)``: train ``model`` for ``epochs`` passes
over ``dataset`` and return the loss history.

Contract
--------
- ``model`` is a built Keras model; ``optimizer`` a Keras optimizer; ``dataset`` a finite
  ``tf.data.Dataset`` of ``(x, y)`` batches, in a fixed order, whose last batch may be shorter.
  One pass over ``dataset`` is one epoch.
- ``loss_fn(y_true, y_pred)`` returns the *per-example* losses, shape ``(batch,)``; the loss of a
  batch is their mean. Call ``loss_fn`` exactly once per batch, inside the train step.
- The train step is a ``tf.function`` that runs ``model(x, training=True)`` under a
  ``tf.GradientTape``, takes the gradient of the batch loss with respect to
  ``model.trainable_variables`` and applies it with ``optimizer.apply_gradients`` (one update per
  batch, batches in the dataset's order).
- A whole call of ``train`` traces the step at most twice (one shape for full batches, one for
  the short last batch), whatever ``epochs`` is.
- Returns ``{"loss": [...]}`` with one Python float per epoch: the mean of that epoch's batch
  losses (each batch counts once, whatever its size), computed afresh for every epoch.
- It also works under the Keras mixed precision policy ``"mixed_bfloat16"``: the model then
  computes (and ``loss_fn`` receives predictions) in bfloat16 while its variables, and so the
  gradients applied, stay float32.
- ``epochs`` that is not a positive ``int`` raises ``ValueError`` naming ``epochs``.

Hints
-----
- ``keras.metrics.Mean`` and its ``reset_state()``.
- Where you *define* the ``tf.function`` decides how often it traces: each new ``tf.function``
  object starts with no graphs.
- ``apply_gradients`` takes ``(gradient, variable)`` pairs.
"""

import tensorflow as tf


def train(model: tf.keras.Model, dataset: tf.data.Dataset, *, epochs: int,
          optimizer: tf.keras.optimizers.Optimizer, loss_fn) -> dict[str, list[float]]:
    """Train ``model`` with a tf.function train step; return ``{"loss": [mean batch loss per epoch]}``."""
    raise NotImplementedError
