"""Public tests for pytorch.optim.weight_decay_groups: a few quick examples. Run with
``pytest exercises/pytorch/optim/test_weight_decay_groups.py``."""

import torch
from torch import nn


def decay_of(groups):
    """{id(param): weight_decay of its group}."""
    return {id(p): g["weight_decay"] for g in groups for p in g["params"]}


def test_small_model(impl):
    model = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 4), nn.LayerNorm(4), nn.Linear(4, 2))
    decays = decay_of(impl.param_groups(model, 0.1))
    expected = {"0.weight": 0.0, "1.weight": 0.1, "1.bias": 0.0, "2.weight": 0.0, "2.bias": 0.0,
                "3.weight": 0.1, "3.bias": 0.0}
    for name, param in model.named_parameters():
        assert id(param) in decays, f"{name} is in no group"
        assert decays[id(param)] == expected[name], (
            f"{name}: weight_decay {decays[id(param)]}, expected {expected[name]}")


def test_usable_by_adamw(impl):
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
    opt = torch.optim.AdamW(impl.param_groups(model, 0.05), lr=1e-3)
    assert sum(len(g["params"]) for g in opt.param_groups) == 4, "all 4 parameters must be optimized"
