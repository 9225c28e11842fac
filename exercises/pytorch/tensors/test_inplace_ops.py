"""Public tests for pytorch.tensors.inplace_ops: a few quick examples. Run with
``pytest exercises/pytorch/tensors/test_inplace_ops.py``."""

import torch

from grader.checks import assert_close


def test_ema_small_example(impl):
    avg = torch.tensor([0.0, 10.0])
    new = torch.tensor([1.0, 0.0])
    assert_close(impl.ema(avg, new, 0.9), torch.tensor([0.1, 9.0]), name="ema(avg, new, 0.9)")
    assert_close(avg, torch.tensor([0.0, 10.0]), name="avg after ema (must be unchanged)")


def test_ema_update_changes_the_callers_tensors(impl):
    avg = [torch.zeros(2), torch.ones(3)]
    params = [torch.ones(2), torch.zeros(3)]
    first = avg[0]
    assert impl.ema_update_(avg, params, 0.75) is None, "ema_update_ should return None"
    assert avg[0] is first, "ema_update_ must update the tensors in the list, not replace them"
    assert_close(avg[0], torch.full((2,), 0.25), name="avg_params[0] after ema_update_")
    assert_close(avg[1], torch.full((3,), 0.75), name="avg_params[1] after ema_update_")


def test_ema_update_records_no_history(impl):
    model = torch.nn.Linear(3, 2)
    avg = [p.detach().clone() for p in model.parameters()]
    impl.ema_update_(avg, model.parameters(), 0.5)
    assert all(a.grad_fn is None and not a.requires_grad for a in avg), (
        "after ema_update_ the averaged tensors have autograd history (use torch.no_grad())")
