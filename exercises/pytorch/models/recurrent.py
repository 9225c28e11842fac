"""Recurrent cells by hand: an LSTM cell, a GRU cell, and an LSTM over padded sequences.

The question
------------
An LSTM keeps a cell state ``c`` and a hidden state ``h``. At each step four gates come out of one
affine map of the input and the previous hidden state, ``x @ W_ih^T + b_ih + h @ W_hh^T + b_hh``,
split into four equal chunks. PyTorch stores them in the order input ``i``, forget ``f``, cell
candidate ``g``, output ``o``::

    i, f, o = sigmoid(.), sigmoid(.), sigmoid(.);  g = tanh(.)
    c' = f * c + i * g;   h' = o * tanh(c')

A GRU has three chunks in PyTorch's order reset ``r``, update ``z``, new ``n``, and PyTorch applies
the reset gate *after* the hidden-state matmul::

    r = sigmoid(x W_ir^T + b_ir + h W_hr^T + b_hr);  z = sigmoid(x W_iz^T + b_iz + h W_hz^T + b_hz)
    n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn));  h' = (1 - z) * n + z * h

Batches of sequences of different lengths are padded to the longest; a correct RNN must report
each sequence's final state at *its own* last step, not at the padded end (what
``pack_padded_sequence`` gives ``nn.LSTM``).

Your task
---------
Write ``lstm_cell``, ``gru_cell`` and the module ``LSTM``.

Contract
--------
- ``lstm_cell(x, h, c, w_ih, w_hh, b_ih=None, b_hh=None)`` with ``x`` ``(B, F)``, ``h`` and ``c``
  ``(B, H)``, ``w_ih`` ``(4H, F)``, ``w_hh`` ``(4H, H)``, biases ``(4H,)`` or ``None`` (no bias),
  returns ``(h', c')``, each ``(B, H)``, with the gates in PyTorch's order ``i, f, g, o``: equal
  to ``nn.LSTMCell`` holding the same weights.
- ``gru_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None)`` with ``w_ih`` ``(3H, F)``, ``w_hh``
  ``(3H, H)``, biases ``(3H,)`` or ``None``, returns ``h'`` ``(B, H)``, gates in PyTorch's order
  ``r, z, n`` with the reset gate applied to ``h W_hn^T + b_hn``: equal to ``nn.GRUCell`` holding
  the same weights.
- Both cells work for any batch size (1 included), in float32 and float64, on the inputs' device,
  and are differentiable with respect to every tensor argument (gradients equal those of PyTorch's
  cells).
- ``LSTM(input_size, hidden_size)`` is an ``nn.Module`` with parameters ``weight_ih``
  ``(4H, F)``, ``weight_hh`` ``(4H, H)``, ``bias_ih`` and ``bias_hh`` ``(4H,)`` (the names of
  ``nn.LSTM``'s layer-0 parameters without the ``_l0`` suffix).
- ``LSTM.forward(x, lengths=None)`` takes ``x`` of shape ``(T, B, F)`` (time first), starts from
  zero states and returns ``(output, (h_n, c_n))`` on ``x``'s device: ``output`` ``(T, B, H)``
  holds ``h`` after every step, ``h_n`` and ``c_n`` ``(B, H)`` the final states. Equal to
  ``nn.LSTM`` (one layer, same weights), gradients included.
- With ``lengths`` (a 1-D int64 tensor or a list of ``B`` ints, each in ``[1, T]``), sequence
  ``b`` only has ``lengths[b]`` real steps: ``h_n[b]`` and ``c_n[b]`` are its states after step
  ``lengths[b] - 1`` and ``output[t, b]`` is zero for ``t >= lengths[b]``, exactly what
  ``nn.LSTM`` gives on ``pack_padded_sequence(x, lengths, enforce_sorted=False)`` (outputs
  unpacked with ``pad_packed_sequence(total_length=T)``).
- Errors: in the cells, a ``w_ih`` whose shape is not ``(k*H, F)`` (``k`` = 4 for the LSTM, 3 for
  the GRU, ``H`` taken from ``h``) raises ``ValueError`` naming ``w_ih``. In ``LSTM.forward``,
  ``x`` that is not 3-D or whose last dimension is not ``input_size`` raises ``ValueError`` naming
  ``x``; ``lengths`` with a value outside ``[1, T]`` or not ``B`` entries raises ``ValueError``
  naming ``lengths``.

Hints
-----
- ``gates.chunk(4, dim=-1)`` splits the pre-activations in order.
- For ``lengths``, keep the old state where a sequence has already ended:
  ``torch.where(t < lengths, new, old)`` (per batch row), and zero the outputs there.
- ``nn.Parameter(torch.empty(...))`` and ``nn.init.uniform_(p, -1/sqrt(H), 1/sqrt(H))`` is how
  ``nn.LSTM`` initialises.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor, nn


def lstm_cell(x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor,
              b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """One LSTM step; returns ``(h', c')``."""
    raise NotImplementedError


def gru_cell(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor,
             b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One GRU step; returns ``h'``."""
    raise NotImplementedError


class LSTM(nn.Module):
    """A one-layer LSTM over time-first ``(T, B, F)`` input, with optional per-sequence lengths."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        raise NotImplementedError

    def forward(self, x: Tensor, lengths: Tensor | Sequence[int] | None = None
                ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """``(output (T, B, H), (h_n (B, H), c_n (B, H)))``."""
        raise NotImplementedError
