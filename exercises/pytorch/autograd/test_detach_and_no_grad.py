"""Public tests for pytorch.autograd.detach_and_no_grad: a few quick examples. Run with
``pytest exercises/pytorch/autograd/test_detach_and_no_grad.py``."""

import torch
from torch import nn

from grader.checks import assert_close


def test_straight_through_round_value_and_gradient(impl):
    x = torch.tensor([0.2, 1.7, -1.4], requires_grad=True)
    out = impl.straight_through_round(x)
    assert_close(out.detach(), torch.tensor([0.0, 2.0, -1.0]), name="straight_through_round(x)")
    out.sum().backward()
    assert_close(x.grad, torch.ones(3),
                 name="x.grad after straight_through_round(x).sum().backward()")


def test_mse_to_fixed_target_gives_target_no_gradient(impl):
    pred = torch.tensor([1.0, 2.0], requires_grad=True)
    target = torch.tensor([0.0, 4.0], requires_grad=True)
    loss = impl.mse_to_fixed_target(pred, target)
    assert_close(loss.detach(), torch.tensor(2.5), name="mse_to_fixed_target(pred, target)")
    loss.backward()
    assert target.grad is None, "target received a gradient"
    assert_close(pred.grad, torch.tensor([1.0, -2.0]), name="pred.grad")


def test_predict_turns_dropout_off_and_restores_train_mode(impl):
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    model.train()
    x = torch.randn(8, 4)
    out = impl.predict(model, x)
    with torch.no_grad():
        expected = model[0](x)
    assert_close(out, expected, name="predict(model, x) with a Dropout layer")
    assert model.training and model[1].training, (
        "predict must leave the model in train mode, as it found it")
