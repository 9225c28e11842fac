"""Keras callbacks: a per-batch learning-rate warmup, early stopping and best-model checkpoints.

The question
------------
"How do callbacks like EarlyStopping and ModelCheckpoint work?" and "How do you manage
overfitting in TensorFlow?" A callback is an object whose hooks ``model.fit`` calls at the
start and end of training, of every epoch and of every batch. ``EarlyStopping`` watches a
validation metric and stops training once it has stopped improving for ``patience`` epochs
(the classic remedy for overfitting, with dropout and L2); ``ModelCheckpoint`` saves the model
whenever that metric improves, so the best model survives the epochs after it. Your own
callback can do anything at those hooks: here, warm the learning rate up batch by batch. The
follow-ups are the classic mistakes: watching the training loss, keeping the last weights
instead of the best ones, a warmup that restarts every epoch.

Your task
---------
1. ``WarmupScheduler(peak_lr, warmup_steps)``: a callback that sets the optimizer's learning
   rate before every training batch, rising linearly to ``peak_lr`` over ``warmup_steps``
   batches and staying there.
2. ``training_callbacks(checkpoint_path, patience)``: the callbacks that stop training when the
   validation loss stops improving and keep the best model on disk.

Contract
--------
- ``WarmupScheduler(peak_lr, warmup_steps)`` is a ``keras.callbacks.Callback``. Before every
  training batch it sets the learning rate of ``model.optimizer`` (one with a float learning
  rate, not a schedule) to ``peak_lr * min(1, (t + 1) / warmup_steps)``, where ``t`` is the
  number of updates the optimizer has applied so far (``model.optimizer.iterations``): the first
  batch trains with ``peak_lr / warmup_steps``, and batch number ``warmup_steps`` (counting from
  1) and every later one with ``peak_lr``.
- ``t`` counts across epochs and across ``fit`` calls (it is the optimizer's count, not the
  batch index within an epoch), so the warmup neither restarts every epoch nor when training
  resumes, with the same scheduler or a new one.
- At the end of every epoch it adds the learning rate in use to that epoch's logs as
  ``"learning_rate"``, so the ``History`` that ``fit`` returns records it.
- ``peak_lr`` that is not a positive finite number (a ``bool``, NaN and infinities are not), or
  ``warmup_steps`` that is not a positive ``int`` (a ``bool`` is not one): ``ValueError`` naming it.
- ``training_callbacks(checkpoint_path, patience)`` returns a list of Keras callbacks for
  ``model.fit(..., validation_data=...)`` that watch ``val_loss``, lower being better: an epoch
  improves only if its ``val_loss`` is strictly below the best so far.
- Training stops after ``patience`` consecutive epochs without improvement: if the best epoch is
  ``b`` (counting from 0), ``fit`` runs ``b + patience + 1`` epochs, unless its ``epochs`` ends
  it sooner.
- When ``fit`` returns, whether it stopped early or ran all its epochs, the model holds the
  weights of its best epoch.
- The checkpoint at ``checkpoint_path`` is written at the end of every epoch that improves, so
  after ``fit`` it holds the best epoch's weights. A path ending in ``.keras`` saves the whole
  model (``keras.saving.load_model`` reads it back); one ending in ``.weights.h5`` saves the
  weights only (``model.load_weights`` reads them back).
- ``checkpoint_path`` is a ``str`` or an ``os.PathLike``. One that ends in neither ``.keras`` nor
  ``.weights.h5`` (a plain ``.h5`` included), or ``patience`` that is not a positive ``int`` (a
  ``bool`` is not one): ``ValueError`` naming it.

Hints
-----
- Hooks: ``on_train_batch_begin(self, batch, logs=None)``, ``on_epoch_end(self, epoch, logs=None)``;
  inside them ``self.model`` is the model being trained. ``batch`` restarts at 0 every epoch.
- ``optimizer.learning_rate = value`` assigns the optimizer's learning-rate variable;
  ``float(optimizer.learning_rate)`` and ``int(optimizer.iterations)`` read the current values.
- ``keras.callbacks.EarlyStopping`` and ``keras.callbacks.ModelCheckpoint``: read what
  ``monitor``, ``mode``, ``restore_best_weights``, ``save_best_only`` and ``save_weights_only``
  do. Keras 3 still accepts the legacy ``.h5`` format for whole models; this kit does not.
"""

from __future__ import annotations

import os

import keras


class WarmupScheduler(keras.callbacks.Callback):
    """Sets the learning rate before every training batch: a linear warmup to ``peak_lr``."""

    def __init__(self, peak_lr: float, warmup_steps: int) -> None:
        super().__init__()
        raise NotImplementedError

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Set ``model.optimizer``'s learning rate for the batch about to run."""
        raise NotImplementedError

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        """Record the learning rate in use in the epoch's logs as ``"learning_rate"``."""
        raise NotImplementedError


def training_callbacks(checkpoint_path: str | os.PathLike, patience: int) -> list[keras.callbacks.Callback]:
    """Early stopping on ``val_loss`` with the best weights restored, and a best-only checkpoint."""
    raise NotImplementedError
