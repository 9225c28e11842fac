"""Public tests for pytorch.optim.train_step: a few quick examples. Run with
``pytest exercises/pytorch/optim/test_train_step.py``."""

import torch

from grader.checks import assert_close


def test_one_sgd_step_on_a_linear_model(impl):
    model = torch.nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, -1.0]]))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.tensor([[1.0, 2.0]]), torch.tensor([[0.0]])
    loss = impl.train_step(model, opt, torch.nn.functional.mse_loss, (x, y))
    # prediction -1, loss 1, d loss / d w = 2 * (-1) * x = [-2, -4]
    assert isinstance(loss, float), f"train_step should return a Python float, got {type(loss).__name__}"
    assert abs(loss - 1.0) < 1e-6, f"train_step returned loss {loss}, expected 1.0"
    assert_close(model.weight.detach(), torch.tensor([[1.2, -0.6]]), name="weight after one step")


def test_loss_goes_down(impl):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    x = torch.randn(16, 3)
    y = x.sum(1, keepdim=True)
    losses = [impl.train_step(model, opt, torch.nn.functional.mse_loss, (x, y)) for _ in range(30)]
    assert losses[-1] < losses[0] / 2, f"loss did not go down: first {losses[0]:.4f}, last {losses[-1]:.4f}"
