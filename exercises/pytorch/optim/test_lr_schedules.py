"""Public tests for pytorch.optim.lr_schedules: a few quick examples. Run with
``pytest exercises/pytorch/optim/test_lr_schedules.py``."""

import math

import torch


def test_lr_at_warmup_peak_and_floor(impl):
    kw = dict(base_lr=1.0, warmup_steps=10, total_steps=110, min_lr_ratio=0.0)
    assert impl.lr_at(0, **kw) == 0.0, "warmup starts from 0"
    assert math.isclose(impl.lr_at(5, **kw), 0.5), "half way through warmup: half the base lr"
    assert math.isclose(impl.lr_at(10, **kw), 1.0), "end of warmup: the base lr"
    assert math.isclose(impl.lr_at(60, **kw), 0.5), "half way through the cosine: the midpoint"
    assert math.isclose(impl.lr_at(110, **kw), 0.0, abs_tol=1e-12), "end of the cosine: the floor"


def test_scheduler_drives_the_optimizer(impl):
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.2)
    sched = impl.warmup_cosine(opt, warmup_steps=4, total_steps=20)
    assert isinstance(sched, torch.optim.lr_scheduler.LambdaLR), "return a LambdaLR"
    seen = [opt.param_groups[0]["lr"]]
    for _ in range(4):
        opt.step()
        sched.step()
        seen.append(opt.param_groups[0]["lr"])
    assert all(math.isclose(a, b, abs_tol=1e-12) for a, b in zip(seen, [0.0, 0.05, 0.1, 0.15, 0.2])), (
        f"lrs during warmup were {seen}, expected [0, 0.05, 0.1, 0.15, 0.2]")
