"""Public tests for pytorch.training.binary_classifier: a few quick examples. Run with
``pytest exercises/pytorch/training/test_binary_classifier.py``."""

import torch
from torch import nn


def test_learns_an_easy_rule(impl):
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(100, 2, generator=gen)
    y = (X[:, 0] > 0).long()
    model = impl.fit_binary_classifier(X, y, epochs=30, lr=0.5, batch_size=10, seed=0)
    assert isinstance(model, nn.Linear), f"expected a torch.nn.Linear, got {type(model).__name__}"
    with torch.no_grad():
        predictions = (model(X).squeeze(1) > 0).long()
    acc = (predictions == y).float().mean().item()
    assert acc > 0.9, f"training accuracy {acc:.2f} on the rule y = (x0 > 0), expected > 0.9"


def test_same_seed_same_model(impl):
    X = torch.randn(20, 3)
    y = (X.sum(1) > 0).float()
    a = impl.fit_binary_classifier(X, y, epochs=2, lr=0.1, batch_size=4, seed=7)
    torch.rand(10)  # the global RNG moves on; the result must not change
    b = impl.fit_binary_classifier(X, y, epochs=2, lr=0.1, batch_size=4, seed=7)
    assert torch.equal(a.weight, b.weight) and torch.equal(a.bias, b.bias), (
        "two calls with the same seed gave different weights")
