"""Public tests for pytorch.models.transfer_learning: a few quick examples. Run with
``pytest exercises/pytorch/models/test_transfer_learning.py``."""

import torch
from torch import nn


def make():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(4, 10))


def test_only_the_head_trains(impl):
    model = impl.prepare_for_finetuning(make(), "5", 3)
    assert model[5].out_features == 3
    assert [n for n, p in model.named_parameters() if p.requires_grad] == ["5.weight", "5.bias"]


def test_frozen_batchnorm_keeps_its_statistics(impl):
    model = impl.prepare_for_finetuning(make(), "5", 3)
    before = model[1].running_mean.clone()
    model.train()
    model(torch.randn(8, 3, 6, 6))
    assert torch.equal(model[1].running_mean, before)
