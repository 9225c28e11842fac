"""Tensors and Variables: replacing rows of an immutable tensor, and of a Variable in place.

The question
------------
"What are tensors in TensorFlow?" They are n-dimensional arrays with a dtype and a shape, like
NumPy arrays, but *immutable*: ``t[0] = 1.0`` is a ``TypeError``. State that must change (model
weights, counters) lives in a ``tf.Variable``, which is updated in place with ``assign``,
``assign_add`` or ``scatter_nd_update``. The interview follow-up: "so how do you change row 3 of
a tensor?", then "and of a Variable, so that everyone holding it sees the change?"

Your task
---------
1. ``scatter_rows(t, indices, rows)``: a *new* tensor equal to ``t`` except that row
   ``indices[k]`` is ``rows[k]``.
2. ``scatter_rows_(var, indices, rows)``: the same update applied to the Variable ``var`` in
   place; return ``var`` itself.

Contract
--------
- ``t`` is a ``tf.Tensor`` of shape ``(N, *F)`` (any number of feature dims, possibly none) and
  any numeric dtype; ``var`` is a ``tf.Variable`` of such a shape.
- ``indices``: a 1-D list or tensor (int32 or int64) of ``K >= 1`` distinct row numbers, each in
  ``[0, N)``. Anything else that is not 1-D, or a number outside ``[0, N)`` (negative ones
  included), raises ``ValueError`` naming ``indices``.
- ``rows``: shape ``(K, *F)``, given as a tensor of ``t``'s dtype, a NumPy array or nested Python
  numbers. A NumPy array or Python numbers are converted to ``t``'s dtype (a float64 array for a
  float32 ``t`` included). A wrong shape raises ``ValueError`` naming ``rows``, also one that holds
  the right number of values.
- ``scatter_rows`` returns a ``tf.Tensor`` with ``t``'s shape and dtype and leaves ``t`` as it
  was. It is differentiable: the gradient reaches both ``t`` (except the replaced rows) and
  ``rows``, so stay inside TensorFlow ops (no detour through NumPy).
- ``scatter_rows_`` updates ``var`` in place (same object, same dtype and shape) and returns that
  same object; a ``var`` that is not a ``tf.Variable`` raises ``TypeError`` naming ``var``.
- Work eagerly (the tests call your functions outside ``tf.function``).

Hints
-----
- ``tf.tensor_scatter_nd_update`` wants indices of shape ``(K, 1)`` to address whole rows.
- A Variable has its own ``scatter_nd_update``. What happens to the caller's Variable if you
  write ``var = tf.Variable(...)`` inside your function?
- TensorFlow's own out-of-range error is not a ``ValueError``: check the indices yourself.
"""

import tensorflow as tf


def scatter_rows(t: tf.Tensor, indices, rows) -> tf.Tensor:
    """A new tensor: ``t`` with row ``indices[k]`` replaced by ``rows[k]``."""
    raise NotImplementedError


def scatter_rows_(var: tf.Variable, indices, rows) -> tf.Variable:
    """Replace rows of ``var`` in place; return ``var`` itself."""
    raise NotImplementedError
