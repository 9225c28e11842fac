"""Public tests for pytorch.autograd.hooks: a few quick examples. Run with
``pytest exercises/pytorch/autograd/test_hooks.py``."""

import torch
from torch import nn

from grader.checks import assert_close


def test_capture_one_layer(impl):
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    x = torch.randn(5, 3)
    with impl.capture_activations(model, ["1"]) as acts:
        model(x)
    assert set(acts) == {"1"}, f"captured keys {sorted(acts)}, expected ['1']"
    with torch.no_grad():
        expected = torch.tanh(model[0](x))
    assert_close(acts["1"], expected, name="acts['1'] (output of the Tanh)")
    assert not acts["1"].requires_grad, "captured activations must be detached"


def test_capture_removes_its_hook(impl):
    model = nn.Sequential(nn.Linear(3, 2))
    with impl.capture_activations(model, ["0"]):
        model(torch.randn(1, 3))
    assert len(model[0]._forward_hooks) == 0, "a forward hook is still registered after the block"


def test_clamp_grads_clamps(impl):
    model = nn.Linear(2, 1)
    handles = impl.clamp_grads(model, 0.5)
    model(torch.tensor([[10.0, -10.0]])).sum().backward()
    assert_close(model.weight.grad, torch.tensor([[0.5, -0.5]]), name="clamped weight.grad")
    assert_close(model.bias.grad, torch.tensor([0.5]), name="clamped bias.grad")
    assert len(handles) == 2, f"expected 2 handles (weight, bias), got {len(handles)}"
