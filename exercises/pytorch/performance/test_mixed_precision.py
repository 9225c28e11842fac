"""Public tests for pytorch.performance.mixed_precision: a few quick examples. Run with
``pytest exercises/pytorch/performance/test_mixed_precision.py``."""

import math

import torch
from torch import nn


def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def test_returns_float_and_keeps_float32_parameters(impl):
    model, opt = make()
    before = [p.detach().clone() for p in model.parameters()]
    batch = torch.randn(6, 4), torch.randn(6, 2)
    loss = impl.amp_train_step(model, opt, torch.amp.GradScaler("cpu"), nn.functional.mse_loss, batch,
                               device_type="cpu", dtype=torch.bfloat16)
    assert isinstance(loss, float) and math.isfinite(loss)
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert any(not torch.equal(p, b) for p, b in zip(model.parameters(), before, strict=True)), "no step was taken"


def test_inf_batch_is_skipped(impl):
    model, opt = make()
    before = [p.detach().clone() for p in model.parameters()]
    x = torch.randn(6, 4)
    x[0, 0] = float("inf")
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    impl.amp_train_step(model, opt, scaler, nn.functional.mse_loss, (x, torch.randn(6, 2)),
                        device_type="cpu", dtype=torch.bfloat16)
    assert all(torch.equal(p, b) for p, b in zip(model.parameters(), before, strict=True))
    assert scaler.get_scale() == 512.0
