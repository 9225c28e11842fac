"""Public tests for pytorch.training.early_stopping: a few quick examples. Run with
``pytest exercises/pytorch/training/test_early_stopping.py``."""

import torch
from torch import nn


def test_stops_after_patience_epochs_without_improvement(impl):
    model = nn.Linear(2, 1)
    stopper = impl.EarlyStopping(patience=2)
    flags = [stopper.step(loss, model) for loss in [1.0, 0.8, 0.9, 0.85]]
    assert flags == [False, False, False, True], f"validation losses 1.0, 0.8, 0.9, 0.85: step returned {flags}"
    assert stopper.best == 0.8, f"best is {stopper.best}, expected 0.8"


def test_restore_brings_back_the_best_weights(impl):
    model = nn.Linear(2, 1)
    stopper = impl.EarlyStopping(patience=3, mode="max")
    best = None
    for epoch, accuracy in enumerate([0.5, 0.7, 0.6]):
        with torch.no_grad():
            model.weight.fill_(epoch)
        if epoch == 1:
            best = model.weight.detach().clone()
        stopper.step(accuracy, model)
    stopper.restore(model)
    assert torch.equal(model.weight, best), (
        f"after restore the weight is {model.weight.tolist()}, expected the best epoch's {best.tolist()}")
