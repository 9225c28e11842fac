"""Public tests for pytorch.nn.functional_vs_module: a few quick examples. Run with
``pytest exercises/pytorch/nn/test_functional_vs_module.py``."""

import torch
import torch.nn.functional as F

from grader.checks import assert_close


def test_layer_norm_matches_torch(impl):
    x = torch.randn(2, 3, 5)
    w, b = torch.randn(5), torch.randn(5)
    assert_close(impl.layer_norm(x, 5, w, b), F.layer_norm(x, (5,), w, b), rtol=1e-5, atol=1e-5,
                 name="layer_norm(x(2, 3, 5), 5, weight, bias)")


def test_module_starts_as_identity_affine(impl):
    ln = impl.LayerNorm(4)
    assert_close(ln.weight.detach(), torch.ones(4), name="LayerNorm(4).weight")
    assert_close(ln.bias.detach(), torch.zeros(4), name="LayerNorm(4).bias")


def test_sequential_keys(impl):
    model = impl.sequential_mlp([4, 8, 2])
    keys = list(model.state_dict())
    expected = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert keys == expected, f"sequential_mlp([4, 8, 2]).state_dict() keys are {keys}, expected {expected}"
