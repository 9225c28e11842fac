"""Mixed precision in Keras: low-precision compute, float32 variables and output, loss scaling.

The question
------------
"What is mixed precision training?" Most of a network's arithmetic can run in a 16-bit float
(``bfloat16`` on CPUs and TPUs, ``float16`` on GPUs): twice the throughput, half the memory. The
variables stay in float32, because an update smaller than a 16-bit float's resolution would be
lost, and so does the output (a softmax or loss in 16 bits is numerically fragile). ``float16``
has a small exponent range, so small gradients underflow to zero: the loss is multiplied by a
*loss scale* before the backward pass and the gradients divided by it after (PyTorch's
``GradScaler``, Keras's ``LossScaleOptimizer``). ``bfloat16`` has float32's exponent range and
needs no scaling. In Keras all of this is a *dtype policy*: ``"mixed_bfloat16"`` or
``"mixed_float16"`` per layer, or globally with ``keras.mixed_precision.set_global_policy`` (which
then leaks into every model built afterwards).

Your task
---------
``build_mixed_model(input_dim, num_classes, policy="mixed_bfloat16")``: a small classifier that
trains in mixed precision, compiled and ready for ``fit``.

Contract
--------
- ``policy`` is ``"mixed_bfloat16"`` (the default) or ``"mixed_float16"``; any other value
  (another policy name such as ``"float32"`` or ``"float16"``, or not a string) raises
  ``ValueError`` naming ``policy``.
- ``input_dim`` is an ``int`` of at least 1 and ``num_classes`` an ``int`` of at least 2; anything
  else (a ``bool``, a float, a smaller number) raises ``ValueError`` naming the argument.
- Returns a Sequential or functional Keras model taking float32 inputs of shape
  ``(batch, input_dim)``, with two ``Dense`` layers: a hidden ``Dense(64, activation="relu")``, then
  the output layer ``Dense(num_classes)`` without activation (the model outputs logits).
- The hidden layer uses ``policy``: it computes in ``bfloat16`` or ``float16`` while its variables
  are ``float32``.
- The output layer uses the ``"float32"`` policy: it computes the logits in float32 from the
  hidden activations, so the model's output is ``float32``, of shape ``(batch, num_classes)``.
- Every variable of the model is ``float32``, and stays so through training.
- The model is compiled for integer labels: loss ``SparseCategoricalCrossentropy(from_logits=True)``,
  metric ``"accuracy"``, optimizer ``Adam(learning_rate=0.01)``.
- With ``"mixed_float16"`` that Adam is wrapped in ``keras.mixed_precision.LossScaleOptimizer``;
  with ``"mixed_bfloat16"`` the optimizer is the plain Adam (no loss scaling).
- ``model.fit`` learns under either policy: on an easy task (well-separated Gaussian blobs, one
  per class) the loss stays finite and eight epochs in batches of 32 bring the training accuracy
  to 0.9 or more.
- The Keras global policy is the same after the call as before, and the model follows ``policy``
  whatever the global policy is.

Hints
-----
- Every Keras layer takes ``dtype=``: a policy name such as ``"mixed_bfloat16"`` or ``"float32"``.
- ``layer.compute_dtype`` and ``layer.variable_dtype`` show what a policy does.
- ``Model.compile`` wraps the optimizer in a ``LossScaleOptimizer`` by itself only when the
  *model's* own policy is ``"mixed_float16"``.
"""

from __future__ import annotations

import keras


def build_mixed_model(input_dim: int, num_classes: int, policy: str = "mixed_bfloat16") -> keras.Model:
    """A compiled classifier: hidden Dense in ``policy``, float32 output logits."""
    raise NotImplementedError
