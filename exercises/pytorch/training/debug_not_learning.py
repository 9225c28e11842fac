"""Debugging a classifier that does not learn.

The question
------------
How do you debug a model that is not learning? Start from the training loop itself, not the
model: is the loss at initialisation near ``log(num_classes)``, can the loop overfit one small
batch, do the gradients reach every parameter, and does each step see the gradient of its own
batch only? The classic culprits are a few lines long: probabilities fed to a loss that expects
logits (``nn.CrossEntropyLoss`` applies ``log_softmax`` itself), gradients that pile up because
nobody zeroes them, a model left in eval mode after an evaluation pass, and labels of the wrong
dtype.

Your task
---------
``buggy_train`` below is a small classification loop with four planted bugs. Run it, find them,
and write ``fixed_train`` with the same signature and the behaviour the contract describes
(start from a copy of ``buggy_train``). ``buggy_train`` stays as it is: only ``fixed_train`` is
graded.

Contract
--------
- ``model`` maps a float batch ``(B, F)`` to logits ``(B, C)``; ``optimizer`` updates its
  parameters. ``X`` is ``(N, F)`` float and ``y`` is ``(N,)`` class indices in ``[0, C)``, both on
  the model's device.
- ``y`` may hold any integer dtype or floats with whole values (labels read from a CSV file); the
  loss gets them as int64 class indices.
- ``epochs`` and ``batch_size`` are ints >= 1; 0 raises ``ValueError`` naming the argument. ``X``
  and ``y`` of different lengths raise ``ValueError`` naming ``y``.
- Each epoch visits every row once, in mini-batches of ``batch_size`` rows (the last one smaller
  when ``batch_size`` does not divide ``N``), in a fresh order each epoch drawn with a
  ``torch.Generator`` seeded with ``seed`` (never the global RNG): the same ``seed``, initial
  model and data give the same weights, and another ``seed`` another order.
- Each mini-batch makes one step, and ``optimizer.step()`` sees the gradients of this batch's
  loss alone: zero the gradients every step (``optimizer.zero_grad()``).
- The loss of a step is ``nn.CrossEntropyLoss()`` (the mean over the batch) of the model's raw
  outputs, the logits (no softmax before it), and the labels.
- Every training forward pass runs in training mode (dropout active, BatchNorm on batch
  statistics), including those after an evaluation.
- Returns a list of ``epochs`` Python floats: after each epoch, the mean cross-entropy of the
  model on all of ``X`` and ``y``, computed in eval mode without building a graph.
- The fixed loop learns: on well-separated classes, with a reasonable learning rate, the model's
  training accuracy passes 90% within a few epochs.

Hints
-----
- Make each bug visible on its own: print the loss at the first step (near ``log(C)``?), the
  gradient norm of each step (does it keep growing?), ``model.training`` inside the loop.
- ``nn.CrossEntropyLoss`` wants logits and int64 (or uint8) class indices: ``y.long()``.
- ``model.eval()`` stays on until ``model.train()`` switches back.
"""

from __future__ import annotations

import torch
from torch import nn

# Working code the exercise gives you (``grader reset`` and ``grader release`` count it as part of
# the untouched stub).
GIVEN = ("buggy_train",)


def buggy_train(model: nn.Module, optimizer: torch.optim.Optimizer, X: torch.Tensor, y: torch.Tensor, *,
                epochs: int, batch_size: int, seed: int = 0) -> list[float]:
    """Train ``model`` on ``(X, y)``; return the loss on all of it after each epoch. Has four bugs."""
    if epochs < 1:
        raise ValueError(f"epochs must be an int >= 1, got {epochs}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size}")
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} rows but y has {len(y)} labels")
    loss_fn = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(seed)
    history = []
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(X), generator=generator).to(X.device)
        for start in range(0, len(X), batch_size):
            rows = order[start:start + batch_size]
            probs = torch.softmax(model(X[rows]), dim=1)
            loss = loss_fn(probs, y[rows].float())
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            history.append(loss_fn(model(X), y.long()).item())
    return history


def fixed_train(model: nn.Module, optimizer: torch.optim.Optimizer, X: torch.Tensor, y: torch.Tensor, *,
                epochs: int, batch_size: int, seed: int = 0) -> list[float]:
    """``buggy_train`` with its four bugs fixed (see the contract above)."""
    raise NotImplementedError
