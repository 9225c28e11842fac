"""Wrong (the constant submission): checks its arguments, then returns zeros (q, zero point,
dequantized values, layer outputs) and scales of one, with the promised shapes and dtypes."""

from __future__ import annotations

import torch
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
    _int_range(num_bits, symmetric)
    axis = _normalise_axis(axis, x.dim())
    n = () if axis is None else (x.shape[axis],)
    return (torch.zeros_like(x, dtype=torch.int8), torch.ones(n, device=x.device),
            torch.zeros(n, dtype=torch.int64, device=x.device))


def dequantize(q: Tensor, scale: Tensor, zero_point: Tensor, axis: int | None = None) -> Tensor:
    """``(q - zero_point) * scale`` as float32, per channel along ``axis`` when given."""
    return torch.zeros_like(q, dtype=torch.float32)


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
        out_features = linear.weight.shape[0]
        return cls(torch.zeros_like(linear.weight, dtype=torch.int8), torch.ones(out_features),
                   torch.zeros(out_features))

    def forward(self, x: Tensor) -> Tensor:
        return torch.zeros(*x.shape[:-1], self.weight_int8.shape[0])
