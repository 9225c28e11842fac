"""Public tests for pytorch.training.debug_not_learning: a few quick examples. Run with
``pytest exercises/pytorch/training/test_debug_not_learning.py``."""

import torch
from torch import nn

from grader.checks import GradientSpy


def three_blobs(n: int = 90) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    y = torch.arange(n) % 3
    X = 3.0 * torch.eye(3, 2)[y] + 0.5 * torch.randn(n, 2, generator=g)
    return X, y


def test_fixed_train_learns_three_blobs(impl):
    X, y = three_blobs()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with GradientSpy(optimizer) as spy:
        history = impl.fixed_train(model, optimizer, X, y, epochs=6, batch_size=10)
    assert len(history) == 6, f"expected one loss per epoch (6), got {len(history)}"
    assert spy.steps == 54, f"90 rows in batches of 10 for 6 epochs make 54 steps, got {spy.steps}"
    assert not spy.stale_steps, f"step {spy.stale_steps[0]} saw gradients of earlier steps: zero them every step"
    assert history[-1] < history[0], f"the loss did not go down: {history}"
    model.eval()
    accuracy = float((model(X).argmax(dim=1) == y).float().mean())
    assert accuracy > 0.9, f"training accuracy {accuracy:.2f} after 6 epochs; a correct loop passes 0.9"


def test_float_labels_are_accepted(impl):
    X, y = three_blobs(30)
    model = nn.Linear(2, 3)
    before = model.weight.detach().clone()
    history = impl.fixed_train(model, torch.optim.SGD(model.parameters(), lr=0.1), X, y.float(), epochs=1,
                               batch_size=8)
    assert len(history) == 1 and isinstance(history[0], float), f"expected [loss], got {history!r}"
    assert not torch.equal(model.weight, before), "fixed_train did not change the model's weights"
