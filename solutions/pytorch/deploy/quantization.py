"""Affine int8 quantization by hand, and a Linear layer that stores int8 weights.

The question
------------
How does post-training quantization shrink a model? A float tensor is mapped onto a small grid of
integers, ``q = round(x / scale) + zero_point``, and read back as ``(q - zero_point) * scale``.
Symmetric quantization keeps ``zero_point = 0``; asymmetric quantization shifts the grid to cover
a range that is not centred on zero; per-channel quantization gives every output channel of a
weight its own scale. The classic follow-ups: what happens to an all-zero tensor (a scale of 0
divides by zero), why values must be clamped to the integer range, and why the round trip error
is at most half a step.

Your task
---------
Write ``quantize(x, num_bits=8, symmetric=True, axis=None)`` returning ``(q, scale, zero_point)``,
``dequantize(q, scale, zero_point, axis=None)``, and ``QuantLinear.from_float(linear)``: a module
that holds the weight of an ``nn.Linear`` as int8 and computes the layer with it.

Contract
--------
- ``x`` is a floating-point tensor (float32 or float64); any other ``x`` raises ``TypeError``
  naming ``x``. ``num_bits`` is an int from 2 to 8 inclusive; anything else raises ``ValueError``
  naming ``num_bits``.
- The integer range is ``qmax = 2**(num_bits - 1) - 1`` and ``qmin = -qmax`` when ``symmetric``,
  ``qmin = -2**(num_bits - 1)`` otherwise.
- Symmetric: ``scale = max|x| / qmax`` and ``zero_point = 0``. Asymmetric: with
  ``lo = min(min(x), 0)`` and ``hi = max(max(x), 0)``, ``scale = (hi - lo) / (qmax - qmin)`` and
  ``zero_point = qmin - round(lo / scale)``, clamped to ``[qmin, qmax]``.
- Where that range is all zero (for example an all-zero ``x``), the scale is ``1.0`` and
  ``zero_point`` as above; the scale is never 0, NaN or inf.
- ``q`` is an int8 tensor of ``x``'s shape and device: ``round(x / scale) + zero_point`` (ties
  either way), clamped to ``[qmin, qmax]``. So ``dequantize(q, scale, zero_point)`` is within
  ``scale / 2`` of ``x`` everywhere.
- ``axis=None`` quantizes per tensor: ``scale`` is a 0-dim float32 tensor and ``zero_point`` a
  0-dim int64 tensor. An int ``axis`` (negative counts from the end) quantizes per channel: one
  scale and zero point per index along ``axis``, computed from that slice alone, as 1-D tensors of
  length ``x.shape[axis]``. An ``axis`` outside ``[-x.dim(), x.dim())`` raises ``ValueError``
  naming ``axis``.
- ``dequantize(q, scale, zero_point, axis=None)`` returns ``(q - zero_point) * scale`` as float32
  on ``q``'s device, with ``axis`` as given to ``quantize``.
- ``QuantLinear.from_float(linear)`` takes an ``nn.Linear`` (anything else raises ``TypeError``
  naming ``linear``) of any floating-point dtype and quantizes its weight, as float32,
  symmetrically to 8 bits per output feature (``axis=0``). Its forward equals
  ``F.linear(x, dequantized weight, bias)`` for float32 ``x``, with the bias as float32.
- ``QuantLinear`` keeps no floating-point copy of the weight: its ``state_dict`` holds the weight
  as one int8 tensor of the weight's shape, and no floating-point tensor in it has more elements
  than ``out_features``.

Hints
-----
- ``torch.amax(x.abs(), dim=...)`` over every dim except ``axis`` gives per-channel maxima;
  reshape the scale so that it broadcasts along ``axis``.
- ``torch.where(scale > 0, scale, 1.0)`` guards the all-zero case without a Python branch.
- Register int8 tensors with ``register_buffer``: they are not parameters (no gradients).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def _int_range(num_bits: int, symmetric: bool) -> tuple[int, int]:
    if not isinstance(num_bits, int) or isinstance(num_bits, bool) or not 2 <= num_bits <= 8:
        raise ValueError(f"num_bits must be an int from 2 to 8, got {num_bits!r}")
    qmax = 2 ** (num_bits - 1) - 1
    return (-qmax if symmetric else -qmax - 1), qmax


def _channel_shape(x: Tensor, axis: int | None) -> tuple[int, ...]:
    """The shape scale and zero point take to broadcast against ``x``."""
    if axis is None:
        return ()
    return tuple(n if d == axis else 1 for d, n in enumerate(x.shape))


def _normalise_axis(axis: int | None, ndim: int) -> int | None:
    if axis is None:
        return None
    if not isinstance(axis, int) or isinstance(axis, bool) or not -ndim <= axis < ndim:
        raise ValueError(f"axis must be None or an int in [{-ndim}, {ndim}), got {axis!r}")
    return axis % ndim


def quantize(x: Tensor, num_bits: int = 8, symmetric: bool = True,
             axis: int | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """Quantize ``x`` to ``num_bits``-bit integers stored as int8; returns ``(q, scale, zero_point)``."""
    if not isinstance(x, Tensor) or x.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"x must be a float32 or float64 tensor, got {getattr(x, 'dtype', type(x).__name__)}")
    qmin, qmax = _int_range(num_bits, symmetric)
    axis = _normalise_axis(axis, x.dim())
    dims = [d for d in range(x.dim()) if d != axis]
    xf = x.double()
    if symmetric:
        scale = torch.amax(xf.abs(), dim=dims, keepdim=True) / qmax if dims else xf.abs() / qmax
        zero_point = torch.zeros_like(scale, dtype=torch.int64)
    else:
        lo = (torch.amin(xf, dim=dims, keepdim=True) if dims else xf).clamp(max=0)
        hi = (torch.amax(xf, dim=dims, keepdim=True) if dims else xf).clamp(min=0)
        scale = (hi - lo) / (qmax - qmin)
    scale = scale.float()  # first: a range below float32's smallest scale rounds to 0 here
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    if not symmetric:
        zero_point = (qmin - torch.round(lo / scale.double())).clamp(qmin, qmax).long()
    q = (torch.round(xf / scale.double()) + zero_point).clamp(qmin, qmax).to(torch.int8)
    if axis is None:
        return q, scale.reshape(()), zero_point.reshape(())
    return q, scale.reshape(-1), zero_point.reshape(-1)


def dequantize(q: Tensor, scale: Tensor, zero_point: Tensor, axis: int | None = None) -> Tensor:
    """``(q - zero_point) * scale`` as float32, per channel along ``axis`` when given."""
    axis = _normalise_axis(axis, q.dim())
    shape = _channel_shape(q, axis)
    return ((q.to(torch.float32) - zero_point.reshape(shape).to(torch.float32))
            * scale.reshape(shape).to(torch.float32))


class QuantLinear(nn.Module):
    """A Linear layer whose weight is stored as int8 with one scale per output feature."""

    def __init__(self, weight_int8: Tensor, weight_scale: Tensor, bias: Tensor | None) -> None:
        super().__init__()
        self.register_buffer("weight_int8", weight_int8)
        self.register_buffer("weight_scale", weight_scale)
        self.register_buffer("bias", bias)

    @classmethod
    def from_float(cls, linear: nn.Linear) -> QuantLinear:
        """A ``QuantLinear`` computing ``linear`` with its weight quantized to int8 (axis 0)."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"linear must be an nn.Linear, got {type(linear).__name__}")
        with torch.no_grad():
            q, scale, _ = quantize(linear.weight.detach().float(), 8, symmetric=True, axis=0)
            bias = None if linear.bias is None else linear.bias.detach().float().clone()
        return cls(q, scale, bias)

    def forward(self, x: Tensor) -> Tensor:
        weight = self.weight_int8.to(torch.float32) * self.weight_scale[:, None]
        return F.linear(x, weight, self.bias)
