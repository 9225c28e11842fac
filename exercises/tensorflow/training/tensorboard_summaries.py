"""TensorBoard from TensorFlow: scalars with ``tf.summary`` and the Keras TensorBoard callback.

The question
------------
"How do you visualise a model's performance in TensorFlow?" With TensorBoard: the run writes
*event files* into a log directory and ``tensorboard --logdir logs`` draws a curve per tag. In
TensorFlow 2 you write them yourself with a file writer (``tf.summary.create_file_writer``) and
``tf.summary.scalar(tag, value, step=...)`` inside ``writer.as_default()``; each summary is stored
as a float32 *tensor* event with metadata naming the dashboard that draws it. ``model.fit``
writes them for you through ``keras.callbacks.TensorBoard``, whose arguments decide what it logs
besides the per-epoch metrics (per-batch values, weight histograms...). Events are buffered: only
``flush()`` or ``close()`` guarantees that they are on disk.

Your task
---------
Write ``log_scalars(log_dir, metrics, step)`` and ``tensorboard_callback(log_dir)``. Both need
the ``tensorboard`` package (``pip install tensorboard``, or the kit's ``tensorboard`` extra):
TensorFlow's ``tf.summary`` writes through it.

Contract
--------
- ``log_scalars(log_dir, metrics, step)`` writes each entry of ``metrics`` (a mapping, tag ->
  value) as a TensorBoard scalar (``tf.summary.scalar``) at ``step`` into a file writer for
  ``log_dir`` (a ``str`` or an ``os.PathLike``; created when missing), and returns ``None``.
- Every event is on disk when ``log_scalars`` returns. Each call adds to the run: the events of
  earlier calls for the same ``log_dir`` stay readable.
- A value is a Python ``int`` or ``float``, a NumPy number, or a NumPy array, ``tf.Tensor`` or
  ``tf.Variable`` of an integer or floating dtype (bfloat16 included) holding exactly one
  element (shape ``()``, ``(1,)``, ``(1, 1)``...). It is logged as a float32, what a scalar event
  stores; NaN and infinities are logged as they are.
- ``step`` is an ``int`` or a NumPy integer, 0 or more; a negative one raises ``ValueError``
  naming ``step``, and one that is not an integer (a ``float``, a ``bool``, a ``str``) raises
  ``TypeError`` naming ``step``.
- A tag is a non-empty ``str``: an empty one raises ``ValueError`` naming ``tag``, one that is
  not a ``str`` raises ``TypeError`` naming ``tag``. A value of more than one element raises
  ``ValueError`` naming its tag; a value of another kind (a ``bool``, a ``str``, ``None``, a
  complex number) raises ``TypeError`` naming its tag. Nothing is logged when any entry is bad.
- ``tensorboard_callback(log_dir)`` (a ``str`` or an ``os.PathLike``) returns a
  ``keras.callbacks.TensorBoard``. Passed to ``model.fit(..., callbacks=[...])``, it writes the
  run under ``log_dir``: in ``log_dir/train`` the scalar ``epoch_<name>`` for every training
  value of the fit's history (``epoch_loss``...) and in ``log_dir/validation`` ``epoch_<name>``
  for every validation value (``val_loss`` as ``epoch_loss``...), each at steps 0, 1, ... (the
  epoch's index), equal to the history's values.
- It also writes, in ``log_dir/train``: ``batch_<name>`` for every training value after every
  training batch, at steps 1, 2, ... counting batches over all epochs (Keras reports the epoch's
  running value, so the last batch of an epoch equals that epoch's value); and after every
  epoch, at the epoch's index, a histogram of every weight of the model.

Hints
-----
- ``writer = tf.summary.create_file_writer(...)``; ``with writer.as_default(): ...``;
  ``writer.close()`` flushes. The writer wants a ``str``: ``os.fspath``.
- ``tf.summary.scalar`` takes a scalar of shape ``()`` only: ``tf.reshape(value, [])``.
- Check every entry before you write the first.
- ``keras.callbacks.TensorBoard``'s ``histogram_freq`` and ``update_freq``.
- Check your files: ``EventAccumulator(log_dir).Reload().Tensors("loss")`` from
  ``tensorboard.backend.event_processing.plugin_event_accumulator``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import keras
import tensorflow as tf  # noqa: F401 - tf.summary is what you write with


def log_scalars(log_dir: str | os.PathLike, metrics: Mapping[str, Any], step: int) -> None:
    """Write every ``tag -> value`` of ``metrics`` as a TensorBoard scalar at ``step`` into ``log_dir``."""
    raise NotImplementedError


def tensorboard_callback(log_dir: str | os.PathLike) -> keras.callbacks.TensorBoard:
    """A Keras TensorBoard callback logging per epoch, per batch and weight histograms into ``log_dir``."""
    raise NotImplementedError
