"""Distributed training with tf.distribute: one training loop for any strategy.

The question
------------
"How does TensorFlow handle distributed training?" With ``tf.distribute.Strategy``: the same
training code runs on one device, on several GPUs of one machine (``MirroredStrategy``), on
several machines (``MultiWorkerMirroredStrategy``) or on a TPU (``TPUStrategy``; deploying a model
trained on TPUs starts with a loop that is strategy-agnostic). ``MirroredStrategy`` keeps one copy
of every variable per device (a *mirrored variable*), splits each global batch between the
replicas, runs the step on every replica, sums the replicas' gradients (an all-reduce) and applies
the same update to every copy. The follow-up that separates the candidates who did it from those
who read about it: the gradients are *summed*, so each replica's loss must be divided by the
*global* batch size, not averaged over its own share, or every update is ``num_replicas`` times
too big (and wrong whenever the shares differ).

Here the machine has no GPU: the kit presents the CPU as two logical devices (importing
``grader.tfchecks`` does that, before TensorFlow runs its first op), so
``tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])`` has two replicas. The kit's tests pass it
``cross_device_ops=tf.distribute.ReductionToOneDevice()``: every ``MirroredStrategy`` of a process
numbers its collective all-reduces from the same key, so a second one that all-reduces another
dtype aborts; do the same when you try several in one process.

Your task
---------
``train_distributed(strategy, build_model, dataset, epochs)``: build the model under ``strategy``
and train it for ``epochs`` passes over ``dataset`` with a custom loop that gives the same
updates whatever the strategy, the same as training on one device with the whole global batch.

Contract
--------
- ``strategy`` is a ``tf.distribute.Strategy``: a ``MirroredStrategy``, a ``OneDeviceStrategy``,
  or the default strategy (``tf.distribute.get_strategy()`` outside any scope); the same code
  serves each.
- ``build_model()`` takes no arguments and returns a new Keras model compiled with an optimizer
  and a loss: train with ``model.optimizer``; ``model.loss(y_true, y_pred)`` returns the
  *per-example* losses, shape ``(batch,)``.
- Call ``build_model`` exactly once, inside ``strategy.scope()``, so that the strategy creates the
  model's and the optimizer's variables: under ``MirroredStrategy`` mirrored variables, one copy
  on each of its devices, equal after training; under ``OneDeviceStrategy`` variables on its
  device.
- ``dataset`` is a finite ``tf.data.Dataset`` of ``(x, y)`` global batches in a fixed order, whose
  last batch may be shorter; one pass over it is one epoch. The strategy splits every global batch
  between its replicas, in shares that may be unequal or empty (5 examples over 2 replicas: 3 and
  2; 1 example: 1 and 0).
- Each global batch makes one optimizer update equal to single-device training on the mean of its
  per-example losses: each replica's loss is the sum of its per-example losses divided by the size
  of the whole global batch, and the strategy sums the replicas' gradients.
- Returns ``{"loss": [...]}`` with one Python float per epoch: the mean over that epoch's global
  batches of each global batch's loss (the mean of its per-example losses over the whole global
  batch).
- ``strategy`` that is not a ``tf.distribute.Strategy`` raises ``TypeError`` naming ``strategy``;
  ``epochs`` that is not a positive ``int`` raises ``ValueError`` naming ``epochs``.

Hints
-----
- ``strategy.scope()``, ``strategy.experimental_distribute_dataset``, ``strategy.run``,
  ``strategy.reduce`` and ``strategy.experimental_local_results`` work for every strategy, the
  default one included.
- ``tf.nn.compute_average_loss(per_example_loss, global_batch_size=...)`` divides by the global
  batch size you give it; without it, it assumes every replica holds the same share.
- Inside ``strategy.run`` the step sees only its replica's share: work the global batch size out
  where all the shares are visible (``experimental_local_results`` of a distributed batch, in the
  step that calls ``strategy.run``), or with the replica context's ``all_reduce``.
- Keras' own loss reduction (``model.compute_loss``) under a strategy divides each replica's mean
  by the number of replicas: look at what that gives for shares of 3 and 2.
"""

from collections.abc import Callable

import tensorflow as tf


def train_distributed(strategy: tf.distribute.Strategy, build_model: Callable[[], tf.keras.Model],
                      dataset: tf.data.Dataset, epochs: int) -> dict[str, list[float]]:
    """Build the model with ``build_model`` under ``strategy`` and train it for ``epochs`` passes
    over ``dataset``; return ``{"loss": [mean global-batch loss per epoch]}``."""
    raise NotImplementedError
