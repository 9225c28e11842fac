"""Public tests for pytorch.deploy.pruning: a few quick examples. Run with
``pytest exercises/pytorch/deploy/test_pruning.py``."""

import torch
from torch import nn


def test_prunes_the_smallest_weights_globally(impl):
    model = nn.Sequential(nn.Linear(2, 2, bias=False), nn.Linear(2, 1, bias=False))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([[0.1, -0.5], [0.3, 2.0]]))
        model[1].weight.copy_(torch.tensor([[-0.2, 1.0]]))
    impl.global_magnitude_prune(model, 0.5)   # 3 of 6 weights: 0.1, -0.2, 0.3
    assert model[0].weight.tolist() == [[0.0, -0.5], [0.0, 2.0]], f"layer 0 weight: {model[0].weight.tolist()}"
    assert model[1].weight.tolist() == [[0.0, 1.0]], f"layer 1 weight: {model[1].weight.tolist()}"
    assert impl.sparsity(model) == 0.5, f"sparsity is {impl.sparsity(model)}, expected 0.5"


def test_make_permanent_removes_the_masks(impl):
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    impl.global_magnitude_prune(model, 0.3)
    assert hasattr(model[0], "weight_mask"), "after pruning, layer 0 should have a weight_mask buffer"
    impl.make_permanent(model)
    keys = sorted(model.state_dict())
    assert keys == ["0.bias", "0.weight", "2.bias", "2.weight"], f"state_dict keys after make_permanent: {keys}"
