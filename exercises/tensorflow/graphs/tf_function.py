"""tf.function: graphs, tracing, retracing and side effects.

The question
------------
TensorFlow 2 runs eagerly, but ``@tf.function`` traces a Python function into a graph that
TensorFlow can optimise, export and run without Python. Interviewers ask what a graph is, how
AutoGraph turns Python control flow into graph ops, when a function is traced again ("retracing"),
why a Python ``print`` or ``+= 1`` inside it runs only once, and how the same graph was written
in TensorFlow 1 with placeholders and a ``Session``.

Your task
---------
1. ``ema_scan(x, decay)``: an exponential moving average along a 1-D series, as a ``tf.function``
   with an ``input_signature``: ``y[0] = x[0]`` and ``y[t] = decay * y[t-1] + (1 - decay) * x[t]``.
2. ``op_types(fn, *specs)``: the set of op types (``op.type``) in the graph of the ``tf.function``
   ``fn`` traced for the given ``tf.TensorSpec`` s.
3. ``run_in_session(x, decay)``: the same moving average, built TF1 style in a ``tf.Graph`` with
   placeholders and run in a ``tf.compat.v1.Session``.
4. ``RunningMean``: a ``tf.Module`` whose ``update(values)`` is a ``tf.function`` returning the mean
   of every value passed to it so far, optionally logging each mean to a file.

Contract
--------
- ``ema_scan`` is a ``tf.function`` whose signature is a float32 vector of any length (including
  0) and a float32 scalar ``decay``; ``x`` may be a tensor or a NumPy array, ``decay`` a tensor or a
  Python float. It returns a float32 tensor of ``x``'s length.
- It traces once: calls with new lengths or new Python-float decays reuse the same graph.
- The loop is a graph loop: the traced graph holds a ``While`` (or ``StatelessWhile``) op; the
  length is not known at trace time.
- Gradients flow from the result to ``x`` and to ``decay``.
- ``decay`` outside ``[0, 1]`` (NaN and infinities included) makes the call raise
  ``tf.errors.InvalidArgumentError`` whose message names ``decay`` (inside a graph the check must
  itself be an op).
- ``op_types(fn, *specs)`` returns a ``set[str]`` of the op types of the top-level graph (ops inside
  loop bodies not included); ``fn`` that is not a ``tf.function`` raises ``TypeError`` naming ``fn``.
- ``run_in_session(x, decay)`` takes a 1-D array-like and a Python float, builds its own
  ``tf.Graph`` (placeholders with a ``None`` length), runs it with ``tf.compat.v1.Session.run``
  and returns a NumPy float32 array equal to ``ema_scan``'s result.
- ``RunningMean(log_path=None)``: ``update(values)`` takes a float32 vector of any length (also
  empty), is a ``tf.function`` with an ``input_signature``, and returns the float32 mean of all
  values passed so far (0.0 while none). Its state is not trainable. When ``log_path`` is given,
  every call to ``update`` appends one line ending with the current mean to that file.

Hints
-----
- ``tf.function(input_signature=[tf.TensorSpec([None], tf.float32), ...])``.
- ``x.shape[0]`` is ``None`` under that signature; ``tf.shape(x)[0]`` is a tensor. Loop over
  ``tf.range(...)`` and collect results in a ``tf.TensorArray``.
- In a TF1 graph, ``tf.while_loop`` is the loop, and ``==`` between graph tensors is not what
  you think: use ``tf.equal``.
- Python side effects (``print``, ``list.append``, ``self.n += 1``) happen when tracing, not when
  the graph runs. ``tf.Variable.assign_add`` and ``tf.print(..., output_stream="file://" + path)``
  are ops.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def ema_scan(x: tf.Tensor, decay: tf.Tensor) -> tf.Tensor:
    """Exponential moving average along ``x`` (make this a tf.function with an input_signature)."""
    raise NotImplementedError


def op_types(fn, *specs: tf.TensorSpec) -> set[str]:
    """Op types in the top-level graph of the tf.function ``fn`` traced for ``specs``."""
    raise NotImplementedError


def run_in_session(x, decay: float) -> np.ndarray:
    """``ema_scan`` built in a TF1-style graph and run in a ``tf.compat.v1.Session``."""
    raise NotImplementedError


class RunningMean(tf.Module):
    """Mean of every value passed to ``update`` so far."""

    def __init__(self, log_path: str | None = None) -> None:
        super().__init__()
        raise NotImplementedError

    def update(self, values: tf.Tensor) -> tf.Tensor:
        """Add ``values`` (float32 vector); return the mean of all values so far (make this a tf.function)."""
        raise NotImplementedError
