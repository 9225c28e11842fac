"""Public tests for pytorch.models.transformer: a few quick examples. Run with
``pytest exercises/pytorch/models/test_transformer.py``."""

import torch
from torch import nn

from grader.checks import assert_close


def test_mha_equals_pytorch(impl):
    mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    mine = impl.MultiHeadAttention(8, 2)
    mine.load_from_torch(mha)
    x = torch.randn(3, 5, 8)
    want = mha(x, x, x, need_weights=False)[0]
    assert_close(mine.eval()(x, x, x), want, rtol=1e-5, atol=1e-5, name="self-attention")


def test_layer_equals_pytorch(impl):
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True).eval()
    mine = impl.TransformerEncoderLayer(8, 2, 16, dropout=0.1)
    mine.load_from_torch(layer)
    x = torch.randn(3, 5, 8)
    with torch.enable_grad():
        want = layer(x)
    assert_close(mine.eval()(x), want, rtol=1e-5, atol=1e-5, name="encoder layer (post-norm, eval)")
