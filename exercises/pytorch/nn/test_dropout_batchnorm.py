"""Public tests for pytorch.nn.dropout_batchnorm: a few quick examples. Run with
``pytest exercises/pytorch/nn/test_dropout_batchnorm.py``."""

import torch

from grader.checks import assert_close


def test_dropout_is_identity_in_eval_mode(impl):
    layer = impl.Dropout(0.5).eval()
    x = torch.randn(4, 6)
    assert_close(layer(x), x, name="Dropout(0.5).eval()(x)")


def test_dropout_zeroes_or_rescales_in_training(impl):
    torch.manual_seed(0)
    x = torch.randn(8, 16)
    out = impl.Dropout(0.25).train()(x)
    expected = torch.where(out == 0, torch.zeros_like(x), x / 0.75)
    assert_close(out, expected, name="Dropout(0.25)(x): each element is 0 or x / (1 - p)")


def test_batchnorm_matches_torch_on_one_batch(impl):
    x = torch.randn(5, 3) * 2 + 1
    ours, ref = impl.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    assert_close(ours(x), ref(x), name="BatchNorm1d(3)(x) output")
    assert_close(ours.running_mean, ref.running_mean, name="running_mean after one batch")
    assert_close(ours.running_var, ref.running_var, name="running_var after one batch")


def test_batchnorm_eval_uses_running_stats(impl):
    layer = impl.BatchNorm1d(2).eval()
    x = torch.tensor([[1.0, -2.0]])
    # Fresh running stats are mean 0, var 1: eval mode is then (almost) the identity.
    assert_close(layer(x), x / (1 + 1e-5) ** 0.5, name="BatchNorm1d(2).eval()(x)")
