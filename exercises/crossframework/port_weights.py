"""Port weights between a PyTorch model and a Keras model, in both directions.

The question
------------
"PyTorch or TensorFlow?" often turns into "here is a model trained in one, make it run in the
other". Both frameworks compute the same layers, but they store the parameters differently:
``nn.Linear`` keeps its weight as ``(out, in)`` while ``Dense`` keeps a kernel ``(in, out)``;
``nn.Conv2d`` keeps ``(out, in, kh, kw)`` (OIHW) and works on channels-first images ``(N, C, H, W)``,
while ``Conv2D`` keeps ``(kh, kw, in, out)`` (HWIO) and works on channels-last ``(N, H, W, C)``;
and after a ``Flatten`` the features come out in a different order. Porting means getting every
one of these right; the proof is that both models agree, on outputs and on gradients.

Your task
---------
1. ``torch_to_keras(model)``: a Keras model computing the same function as the PyTorch
   ``nn.Sequential`` ``model``, in channels-last layout.
2. ``keras_to_torch(model)``: an ``nn.Sequential`` computing the same function as the Keras
   ``keras.Sequential`` ``model``, in channels-first layout.

Contract
--------
- Supported PyTorch modules: ``nn.Linear``, ``nn.Conv2d`` (``groups=1``, ``dilation=1``,
  ``padding`` 0/``"valid"`` or ``"same"``, any stride and kernel size, with or without bias),
  ``nn.ReLU`` and ``nn.Flatten()``. Supported Keras layers: ``Dense`` and ``Conv2D``
  (``channels_last``, ``padding`` ``"valid"`` or ``"same"``, ``"same"`` only with stride 1,
  ``activation`` None/``"linear"`` or ``"relu"``, with or without bias), ``ReLU()``,
  ``Activation("relu")`` and ``Flatten``. A ``Flatten`` follows at least one convolution.
- Keras's ``Dense(..., activation="relu")`` is one layer; in PyTorch it is a Linear then an
  ``nn.ReLU``.
- Where the PyTorch model takes (or returns) ``(N, C, H, W)``, the Keras model takes (or returns)
  ``(N, H, W, C)`` with the same values; 2-D tensors ``(N, features)`` are the same in both. That
  holds for a model that ends in ``Flatten`` too: its output features come out in the same order
  in both models.
- For any input, the two models' outputs agree within 1e-5, and so do the gradients of a
  scalar function of the output with respect to the input (``torch.autograd`` vs
  ``tf.GradientTape``). Checked over random layer sizes, kernel sizes, strides and paddings.
- The result is a copy: changing the source model afterwards does not change it, and its
  parameters are trainable. Both work in float32.
- Any other layer type raises ``TypeError``, any other setting (activation, padding, ...)
  ``ValueError``; the message names ``model`` and the unsupported layer type or activation.

Hints
-----
- ``Dense.set_weights([kernel, bias])`` after ``layer.build(input_shape)``; ``layer.get_weights()``
  gives NumPy arrays back. Copy into PyTorch with ``param.copy_(...)`` under ``torch.no_grad()``.
- A reshape keeps the memory order; a transpose changes it. Which one turns OIHW into HWIO?
- PyTorch's Flatten orders features ``c * H * W + h * W + w``; Keras's ``(h * W + w) * C + c``. The
  Linear/Dense after it must see its inputs in the order its own framework produces.
- Keras layers built from known shapes keep their weights when a ``keras.Sequential`` of them is
  called later.
"""

from __future__ import annotations

import keras
from torch import nn


def torch_to_keras(model: nn.Sequential) -> keras.Model:
    """A Keras copy of ``model`` (channels-last where ``model`` is channels-first)."""
    raise NotImplementedError


def keras_to_torch(model: keras.Sequential) -> nn.Sequential:
    """A PyTorch copy of ``model`` (channels-first where ``model`` is channels-last)."""
    raise NotImplementedError
