"""GradientTape: gradients of constants, Hessian-vector products, two losses from one tape.

The question
------------
"How does TensorFlow do automatic differentiation?" With ``tf.GradientTape``: while the tape is
open it records the operations on *watched* tensors (trainable Variables are watched
automatically, constants are not), and ``tape.gradient(target, sources)`` replays them backwards.
PyTorch's autograd records on tensors with ``requires_grad`` instead; the interview usually asks
you to compare the two, and then to show the tape's corners: watching a constant, nesting tapes
for second derivatives, and reusing one tape for several gradients.

Your task
---------
1. ``gradient(f, x)``: ``df/dx`` for a tensor ``x`` that may be a plain constant.
2. ``hessian_vector_product(f, x, v)``: ``H(x) v`` where ``H`` is the Hessian of ``f`` at ``x``,
   with nested tapes.
3. ``two_losses_grads(model, x)``: the gradients of two losses of one forward pass, from one tape.

Contract
--------
- ``f`` takes one tensor and returns a tensor; when that is not a scalar, the gradient is the one
  of its sum (what ``tape.gradient`` computes). ``x`` is a floating ``tf.Tensor`` (usually a
  constant) or a ``tf.Variable``; tests use float64.
- ``gradient`` returns a tensor of ``x``'s shape and dtype, zeros (never ``None``) where ``f``
  does not depend on ``x``.
- ``hessian_vector_product``: ``f`` returns a scalar; ``v`` has ``x``'s shape; the result, of
  ``x``'s shape and dtype, is ``sum_j d^2 f / (dx_i dx_j) * v_j`` for every element ``i`` (``x``
  and ``v`` taken as flat vectors). Zeros where the Hessian is zero, e.g. for a linear ``f``. A
  ``v`` of another shape raises ``ValueError`` naming ``v``.
- ``two_losses_grads`` calls ``model(x, training=True)`` exactly once, then takes
  ``y = model(x, training=True)``, ``loss_a = reduce_mean(y ** 2)`` and ``loss_b = reduce_mean(y)``,
  and returns ``(grads_a, grads_b)``: two lists aligned with ``model.trainable_variables``, with
  zeros (not ``None``) for a variable a loss does not depend on.

Hints
-----
- ``tape.watch``; ``tape.gradient(..., unconnected_gradients=tf.UnconnectedGradients.ZERO)`` for
  tensors. Keras 3 variables trip that option up (their ``dtype`` is a string): there, replace a
  ``None`` gradient with ``tf.zeros_like(variable)`` yourself.
- For ``H v`` you need not build ``H``: differentiate ``<grad f, v>`` once more, with the outer
  tape still recording while the inner gradient is computed. Is ``d(grad f)/dx * v`` the same
  thing?
- A tape frees its resources after the first ``gradient`` call unless it is ``persistent=True``.
"""

from collections.abc import Callable

import tensorflow as tf


def gradient(f: Callable[[tf.Tensor], tf.Tensor], x: tf.Tensor) -> tf.Tensor:
    """``d sum(f(x)) / dx``, zeros where ``f`` does not depend on ``x``."""
    raise NotImplementedError


def hessian_vector_product(f: Callable[[tf.Tensor], tf.Tensor], x: tf.Tensor, v: tf.Tensor) -> tf.Tensor:
    """``H(x) v`` for the Hessian ``H`` of the scalar ``f`` at ``x``."""
    raise NotImplementedError


def two_losses_grads(model: tf.keras.Model, x: tf.Tensor) -> tuple[list[tf.Tensor], list[tf.Tensor]]:
    """Gradients of ``mean(y**2)`` and ``mean(y)`` for ``y = model(x, training=True)``, one forward pass."""
    raise NotImplementedError
