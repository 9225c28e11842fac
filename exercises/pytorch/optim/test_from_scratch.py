"""Public tests for pytorch.optim.from_scratch: a few quick examples. Run with
``pytest exercises/pytorch/optim/test_from_scratch.py``."""

import torch

from grader.checks import assert_close


def test_sgd_one_step_by_hand(impl):
    p = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    opt = impl.SGD([p], lr=0.1)
    assert isinstance(opt, torch.optim.Optimizer), "SGD must subclass torch.optim.Optimizer"
    p.grad = torch.tensor([0.5, 1.0])
    opt.step()
    assert_close(p.detach(), torch.tensor([0.95, -2.1]), name="p after one SGD step")


def test_sgd_momentum_two_steps(impl):
    p = torch.nn.Parameter(torch.tensor([0.0]))
    opt = impl.SGD([p], lr=1.0, momentum=0.5)
    for _ in range(2):
        p.grad = torch.tensor([1.0])
        opt.step()
    # buf = 1 after step 1, then 0.5 * 1 + 1 = 1.5: p = 0 - 1 - 1.5
    assert_close(p.detach(), torch.tensor([-2.5]), name="p after two momentum steps")


def test_adam_matches_torch_for_a_few_steps(impl):
    torch.manual_seed(0)
    mine = torch.nn.Parameter(torch.randn(3, 2))
    ref = torch.nn.Parameter(mine.detach().clone())
    opt_mine, opt_ref = impl.Adam([mine], lr=0.1), torch.optim.Adam([ref], lr=0.1)
    for step in range(5):
        grad = torch.randn(3, 2)
        mine.grad, ref.grad = grad.clone(), grad.clone()
        opt_mine.step()
        opt_ref.step()
        assert_close(mine.detach(), ref.detach(), name=f"Adam parameter after step {step + 1}")
