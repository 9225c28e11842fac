"""Wrong: batches first, then shuffles: whole batches move, the examples inside a batch never mix."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tensorflow as tf


def make_pipeline(x: np.ndarray | tf.Tensor, y: np.ndarray | tf.Tensor, *, batch_size: int,
                  shuffle_buffer: int, seed: int, augment: Callable[[tf.Tensor], tf.Tensor] | None = None,
                  drop_remainder: bool = False) -> tf.data.Dataset:
    """A shuffled, optionally augmented, batched and prefetched dataset of ``(x_batch, y_batch)``."""
    _check_positive_int(batch_size, "batch_size")
    _check_positive_int(shuffle_buffer, "shuffle_buffer")
    if len(x) != len(y):
        raise ValueError(f"x and y must have the same number of rows (examples), got {len(x)} and {len(y)}")
    dataset = tf.data.Dataset.from_tensor_slices((x, y))
    if augment is not None:
        # No cache() after this map: a random augmentation must be drawn again every epoch.
        dataset = dataset.map(lambda xi, yi: (augment(xi), yi), num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    dataset = dataset.shuffle(max(1, shuffle_buffer // batch_size), seed=seed, reshuffle_each_iteration=True)
    return dataset.prefetch(tf.data.AUTOTUNE)


def windowed(series: np.ndarray | tf.Tensor, window: int, shift: int) -> tf.data.Dataset:
    """The full windows ``series[i * shift : i * shift + window]``, one per element, in order."""
    _check_positive_int(window, "window")
    _check_positive_int(shift, "shift")
    windows = tf.data.Dataset.from_tensor_slices(series).window(window, shift=shift, drop_remainder=True)
    # Each window is itself a small dataset; batching it whole with drop_remainder=True gives a
    # tensor whose static shape is (window, ...), not (None, ...).
    return windows.flat_map(lambda w: w.batch(window, drop_remainder=True))


def _check_positive_int(value, name: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
