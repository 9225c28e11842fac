"""Input pipelines with tf.data: shuffle, augment, batch, prefetch; sliding windows over a series.

The question
------------
"How does ``tf.data.Dataset`` work, and how does TensorFlow handle data loading?" A
``tf.data.Dataset`` is a lazy stream of elements built by chaining transformations:
``from_tensor_slices`` cuts arrays into examples, ``shuffle`` draws them through a buffer,
``map`` transforms each one (in parallel, in TensorFlow code), ``batch`` groups them and
``prefetch`` prepares the next batch while the model trains on this one. Iterating the dataset
again is a new epoch. The follow-ups are where the pipeline goes wrong: shuffling batches
instead of examples, an order that never changes between epochs (or cannot be reproduced), an
augmentation applied to the labels, windows that come out with an unknown shape or half empty.

Your task
---------
1. ``make_pipeline(x, y, *, batch_size, shuffle_buffer, seed, augment=None, drop_remainder=False)``:
   a training pipeline of ``(x_batch, y_batch)`` pairs.
2. ``windowed(series, window, shift)``: the sliding windows of a series, one window per element
   (the first step of a forecasting pipeline).

Contract
--------
- ``x`` and ``y`` are NumPy arrays or tensors with the same first dimension ``N`` (one example
  per row), of any dtypes and trailing shapes. Different first dimensions: ``ValueError`` naming
  ``x`` and ``y``.
- ``make_pipeline`` returns a ``tf.data.Dataset`` of ``(x_batch, y_batch)`` pairs whose
  ``element_spec`` is ``(tf.TensorSpec((B, *x.shape[1:]), x.dtype), tf.TensorSpec((B,
  *y.shape[1:]), y.dtype))``, with ``B = batch_size`` when ``drop_remainder`` is true and ``None``
  otherwise. With ``augment`` the x part is the spec of what ``augment`` returns (it may change
  the dtype, e.g. ``uint8`` images to ``float32``).
- Each iteration over the dataset is one epoch: every one of the ``N`` examples appears exactly
  once, together with its own label, in batches of ``batch_size``; only the last batch may be
  shorter (``N % batch_size`` examples). With ``drop_remainder=True`` that short batch is left
  out, so every batch has exactly ``batch_size`` examples and no example appears twice.
- Examples, not batches, are shuffled, through a buffer of ``shuffle_buffer`` examples: the
  ``k``-th example of an epoch (counting from 0) is one of the first ``k + shuffle_buffer`` rows
  of ``x``. ``shuffle_buffer=1`` keeps the original order; ``shuffle_buffer >= N`` shuffles
  uniformly, so any example can land in any batch.
- The order is drawn afresh every epoch, and it is reproducible: two pipelines made with the same
  arguments yield the same batches, epoch after epoch; another ``seed`` gives another order.
- ``augment``, when given, is applied to each example's ``x`` alone (a tensor of shape
  ``x.shape[1:]``) inside the pipeline with ``Dataset.map``, so it must be TensorFlow code.
  ``y`` is never passed to it and reaches the batch unchanged. It runs anew every epoch, so a
  random augmentation differs from epoch to epoch.
- The pipeline prefetches after batching (``prefetch``), so the next batch is prepared while
  the model trains on the current one.
- ``batch_size`` or ``shuffle_buffer`` that is not a positive ``int`` (a ``bool`` is not one):
  ``ValueError`` naming it.
- ``series`` is a NumPy array or tensor of shape ``(L, ...)``; windows run along its first axis.
  ``windowed`` yields ``series[i * shift : i * shift + window]`` for ``i = 0, 1, ...`` in that
  order, full windows only: ``max(0, (L - window) // shift + 1)`` of them (none when
  ``window > L``).
- Each element of ``windowed`` is one window, a tensor of shape ``(window, *series.shape[1:])``
  in the dtype of ``series``, and its ``element_spec`` says so with a fully known shape (no
  ``None``).
- ``window`` or ``shift`` that is not a positive ``int`` (a ``bool`` is not one): ``ValueError``
  naming it.

Hints
-----
- The order of the transformations matters: ``from_tensor_slices`` -> ``shuffle`` -> ``map`` ->
  ``batch`` -> ``prefetch(tf.data.AUTOTUNE)``. ``map(..., num_parallel_calls=tf.data.AUTOTUNE)``
  runs the augmentation in parallel.
- ``shuffle(buffer_size, seed=..., reshuffle_each_iteration=True)``. A ``cache()`` placed after a
  random ``map`` replays the first epoch's augmentations forever.
- ``Dataset.window`` yields datasets, not tensors: ``flat_map`` each one into a single batch of
  ``window`` elements, and mind ``drop_remainder`` in both places (the window's and the batch's).
  ``shift`` is the step between window starts; ``stride`` is something else.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tensorflow as tf


def make_pipeline(x: np.ndarray | tf.Tensor, y: np.ndarray | tf.Tensor, *, batch_size: int,
                  shuffle_buffer: int, seed: int, augment: Callable[[tf.Tensor], tf.Tensor] | None = None,
                  drop_remainder: bool = False) -> tf.data.Dataset:
    """A shuffled, optionally augmented, batched and prefetched dataset of ``(x_batch, y_batch)``."""
    raise NotImplementedError


def windowed(series: np.ndarray | tf.Tensor, window: int, shift: int) -> tf.data.Dataset:
    """The full windows ``series[i * shift : i * shift + window]``, one per element, in order."""
    raise NotImplementedError
