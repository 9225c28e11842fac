"""Public tests for pytorch.optim.grad_accumulation: a few quick examples. Run with
``pytest exercises/pytorch/optim/test_grad_accumulation.py``."""

import copy

import torch
import torch.nn.functional as F

from grader.checks import assert_close


def test_two_micro_batches_equal_one_big_batch(impl):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1).double()
    big = copy.deepcopy(model)
    x, y = torch.randn(4, 3, dtype=torch.float64), torch.randn(4, 1, dtype=torch.float64)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = impl.train_accumulated(model, opt, F.mse_loss, [(x[:2], y[:2]), (x[2:], y[2:])], 2)
    big_opt = torch.optim.SGD(big.parameters(), lr=0.1)
    big_loss = F.mse_loss(big(x), y)
    big_loss.backward()
    big_opt.step()
    assert len(losses) == 1, f"2 micro-batches with accum_steps=2 make 1 step, got {len(losses)} losses"
    assert abs(losses[0] - big_loss.item()) < 1e-9, f"loss {losses[0]}, expected {big_loss.item()}"
    assert_close(model.weight.detach(), big.weight.detach(), name="weight")
    assert_close(model.bias.detach(), big.bias.detach(), name="bias")


def test_one_loss_per_step(impl):
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = [(torch.randn(3, 2), torch.randn(3, 1)) for _ in range(7)]
    losses = impl.train_accumulated(model, opt, F.mse_loss, batches, 3)
    assert len(losses) == 3, f"7 micro-batches in groups of 3 make 3 steps, got {len(losses)} losses"
    assert all(type(v) is float for v in losses), "losses must be Python floats"
