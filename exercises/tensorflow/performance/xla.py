"""XLA: compile a TensorFlow function with ``jit_compile=True``, and find out whether XLA can.

The question
------------
"Explain XLA and how it speeds up a model" is a classic advanced TensorFlow question. XLA
(Accelerated Linear Algebra) is a compiler: ``tf.function(jit_compile=True)`` hands the traced
graph to XLA, which fuses the matmul, the bias add and the activation into a few kernels instead
of one TensorFlow op (and one round trip through memory) each, on CPU, GPU and TPU alike. The
follow-ups: how do you *see* what XLA made of your function (its compiler IR, the HLO), and what
happens to an op XLA has no kernel for (a ``tf.py_function``, string ops, some linear algebra)?
With ``jit_compile=True`` such a function does not silently fall back: it fails to compile.

Your task
---------
1. ``dense_gelu(x, w, b)``: a dense layer with the exact GELU activation,
   ``gelu(x @ w + b)`` where ``gelu(z) = z * Phi(z) = 0.5 * z * (1 + erf(z / sqrt(2)))``, compiled
   by XLA.
2. ``compiles_with_xla(fn, *args)``: whether XLA can compile ``fn`` for these arguments.

Contract
--------
- ``dense_gelu`` is a ``tf.function`` created with ``jit_compile=True``, defined once at module
  level: its compiler IR (``dense_gelu.experimental_get_compiler_ir(x, w, b)(stage="hlo")``) can be
  obtained, and calling it again with inputs of a shape and dtype it has seen does not trace it again.
- ``x`` has shape ``(*batch, in_features)`` with one or more batch dimensions, ``w`` shape
  ``(in_features, out_features)``, ``b`` shape ``(out_features,)``; sizes may be 1.
- The result has shape ``(*batch, out_features)``: ``gelu(x @ w + b)`` with the exact (erf) GELU,
  not its tanh approximation, equal to the same computation run eagerly within float32 round-off
  (in float64 too: XLA's CPU ``erf`` is accurate to about 1e-8).
- ``x``, ``w`` and ``b`` share one dtype, ``float32`` or ``float64``, and the result has it too.
- Gradients flow to ``x``, ``w`` and ``b``.
- ``w`` whose first dimension is not ``x``'s last raises ``ValueError`` naming ``w``; ``b`` whose
  shape is not ``(out_features,)`` raises ``ValueError`` naming ``b``.
- ``compiles_with_xla(fn, *args)`` returns ``True`` when XLA compiles ``fn`` for ``args`` (tensors,
  NumPy arrays or Python numbers, passed as ``fn(*args)`` would get them) and ``False`` when it
  cannot (an op without an XLA kernel on this device, such as ``tf.py_function``,
  ``tf.numpy_function``, string ops or ``tf.print``). The answer is about ``fn``'s computation,
  whatever form ``fn`` takes: a plain Python function or a ``tf.function`` created with or without
  ``jit_compile``.
- ``compiles_with_xla`` traces ``fn`` but never runs it: ops ``fn`` holds (a Variable's
  ``assign_add``, say) are not executed.
- An error ``fn`` itself raises while being traced (a ``ValueError`` from a shape mismatch, a
  ``TypeError`` from a bug) propagates with its type: it is not an answer of ``False``.

Hints
-----
- ``tf.function(fn, jit_compile=True)`` wraps any callable, a ``tf.function`` included.
- ``experimental_get_compiler_ir(*args)`` returns a function of ``stage``; getting the IR traces
  and compiles without executing. When XLA cannot compile, it raises.
- ``tf.math.erf``; ``tf.nn.gelu`` has an ``approximate`` flag.
- Inside a ``tf.function`` traced for concrete inputs, ``x.shape`` is known in Python.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf


def dense_gelu(x: tf.Tensor, w: tf.Tensor, b: tf.Tensor) -> tf.Tensor:
    """``gelu(x @ w + b)`` with the exact GELU (make this a ``tf.function(jit_compile=True)``)."""
    raise NotImplementedError


def compiles_with_xla(fn: Callable[..., Any], *args: Any) -> bool:
    """Whether XLA can compile ``fn`` for ``args``, found without running ``fn``."""
    raise NotImplementedError
