"""Wrong: hands log_dir to tf.summary.create_file_writer as it is, which rejects a pathlib.Path."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import keras
import numpy as np
import tensorflow as tf


def _check_step(step: Any) -> None:
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
        raise TypeError(f"step must be an int, got {type(step).__name__}")
    if step < 0:
        raise ValueError(f"step must be 0 or more, got {step}")


def _scalar(tag: Any, value: Any) -> tf.Tensor:
    """``value`` as a tensor of shape ``()``, or the error the contract names for ``tag``."""
    if not isinstance(tag, str):
        raise TypeError(f"tag must be a str, got {type(tag).__name__}")
    if not tag:
        raise ValueError("tag must be a non-empty str")
    if isinstance(value, (tf.Tensor, tf.Variable, keras.Variable)):
        dtype = tf.as_dtype(value.dtype)
        numeric = dtype.is_integer or dtype.is_floating
    else:
        # bool is an int subclass, and NumPy calls it kind "b": neither is a number to plot.
        numeric = not isinstance(value, bool) and np.asarray(value).dtype.kind in "iuf"
    if not numeric:
        raise TypeError(f"{tag}: expected an int or float value, got {type(value).__name__} {value!r:.50}")
    tensor = tf.convert_to_tensor(value)
    if tensor.shape.num_elements() != 1:
        raise ValueError(f"{tag}: expected one value, got shape {tuple(tensor.shape)}")
    return tf.reshape(tensor, [])  # tf.summary.scalar takes shape () only


def log_scalars(log_dir: str | os.PathLike, metrics: Mapping[str, Any], step: int) -> None:
    """Write every ``tag -> value`` of ``metrics`` as a TensorBoard scalar at ``step`` into ``log_dir``."""
    _check_step(step)
    scalars = {tag: _scalar(tag, value) for tag, value in metrics.items()}  # all checked before any write
    writer = tf.summary.create_file_writer(log_dir)
    try:
        with writer.as_default():
            for tag, value in scalars.items():
                tf.summary.scalar(tag, value, step=int(step))
    finally:
        writer.close()  # flushes: the events are on disk when we return


def tensorboard_callback(log_dir: str | os.PathLike) -> keras.callbacks.TensorBoard:
    """A Keras TensorBoard callback logging per epoch, per batch and weight histograms into ``log_dir``."""
    # Per-epoch scalars are the default; update_freq="batch" adds batch_<name> after every batch,
    # histogram_freq=1 a histogram of every weight after every epoch.
    return keras.callbacks.TensorBoard(log_dir=os.fspath(log_dir), update_freq="batch", histogram_freq=1)
