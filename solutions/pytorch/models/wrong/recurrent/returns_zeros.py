"""Wrong: validates its arguments, then returns zeros of the right shapes (the constant
submission)."""


from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn


def _check_w_ih(w_ih: Tensor, gates: int, x: Tensor, h: Tensor) -> None:
    want = (gates * h.shape[-1], x.shape[-1])
    if tuple(w_ih.shape) != want:
        raise ValueError(f"w_ih has shape {tuple(w_ih.shape)}, expected {want} "
                         f"({gates} gates x hidden size {h.shape[-1]}, input size {x.shape[-1]})")


def lstm_cell(x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor,
              b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """One LSTM step; returns ``(h', c')``."""
    _check_w_ih(w_ih, 4, x, h)
    return torch.zeros_like(h), torch.zeros_like(c)


def gru_cell(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor,
             b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One GRU step; returns ``h'``."""
    _check_w_ih(w_ih, 3, x, h)
    return torch.zeros_like(h)


class LSTM(nn.Module):
    """A one-layer LSTM over time-first ``(T, B, F)`` input, with optional per-sequence lengths."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        self.weight_ih = nn.Parameter(torch.empty(4 * hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.empty(4 * hidden_size, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(4 * hidden_size))
        self.bias_hh = nn.Parameter(torch.empty(4 * hidden_size))
        bound = 1 / math.sqrt(hidden_size)
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def forward(self, x: Tensor, lengths: Tensor | Sequence[int] | None = None
                ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """``(output (T, B, H), (h_n (B, H), c_n (B, H)))``."""
        if x.dim() != 3 or x.shape[-1] != self.input_size:
            raise ValueError(f"x must be (T, B, {self.input_size}), got shape {tuple(x.shape)}")
        steps, batch = x.shape[0], x.shape[1]
        if lengths is not None:
            lengths = torch.as_tensor(lengths, dtype=torch.int64).to(x.device)
            if lengths.shape != (batch,):
                raise ValueError(f"lengths must have {batch} entries, got shape {tuple(lengths.shape)}")
            if x.device.type != "meta" and not bool(((lengths >= 1) & (lengths <= steps)).all()):
                raise ValueError(f"every entry of lengths must be in [1, {steps}], got {lengths.tolist()}")
        h = x.new_zeros(batch, self.hidden_size)
        c = x.new_zeros(batch, self.hidden_size)
        outputs = []
        for t in range(steps):
            h_new, c_new = lstm_cell(x[t], h, c, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
            if lengths is None:
                h, c = h_new, c_new
                outputs.append(h)
                continue
            running = (t < lengths).unsqueeze(-1)
            h = torch.where(running, h_new, h)
            c = torch.where(running, c_new, c)
            outputs.append(torch.where(running, h_new, torch.zeros_like(h_new)))
        return torch.stack(outputs), (h, c)
