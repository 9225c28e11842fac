"""Public tests for pytorch.models.recurrent: a few quick examples. Run with
``pytest exercises/pytorch/models/test_recurrent.py``."""

import torch
from torch import nn

from grader.checks import assert_close


def test_lstm_cell_matches_pytorch(impl):
    cell = nn.LSTMCell(3, 2)
    x, h, c = torch.randn(4, 3), torch.randn(4, 2), torch.randn(4, 2)
    got = impl.lstm_cell(x, h, c, cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
    want = cell(x, (h, c))
    assert_close(got[0], want[0], rtol=1e-5, atol=1e-5, name="h'")
    assert_close(got[1], want[1], rtol=1e-5, atol=1e-5, name="c'")


def test_gru_cell_matches_pytorch(impl):
    cell = nn.GRUCell(3, 2)
    x, h = torch.randn(4, 3), torch.randn(4, 2)
    got = impl.gru_cell(x, h, cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
    assert_close(got, cell(x, h), rtol=1e-5, atol=1e-5, name="h'")


def test_lstm_final_state_at_each_length(impl):
    lstm = impl.LSTM(3, 2)
    x = torch.randn(5, 2, 3)
    out, (h_n, _) = lstm(x, [5, 2])
    assert out.shape == (5, 2, 2) and h_n.shape == (2, 2)
    assert_close(h_n[1], out[1, 1], name="h_n of the sequence of length 2")
    assert bool((out[2:, 1] == 0).all()), "outputs after a sequence's end must be zero"
