"""Wrong: symmetric scale max|x| / 2**(num_bits - 1) (128 for int8) instead of / qmax."""

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
        scale = (torch.amax(xf.abs(), dim=dims, keepdim=True) if dims else xf.abs()) / 2 ** (num_bits - 1)
        zero_point = torch.zeros_like(scale, dtype=torch.int64)
    else:
        lo = (torch.amin(xf, dim=dims, keepdim=True) if dims else xf).clamp(max=0)
        hi = (torch.amax(xf, dim=dims, keepdim=True) if dims else xf).clamp(min=0)
        scale = (hi - lo) / (qmax - qmin)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale)).float()
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
