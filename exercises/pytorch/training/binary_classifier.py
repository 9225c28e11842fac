"""A single-layer binary classifier trained with mini-batch gradient descent.

The question
------------
Implement a single-layer neural network for binary classification, and train it with mini-batch
gradient descent. The model is one ``nn.Linear`` whose output is a *logit*: a real number, not a
probability. The loss that goes with it is ``BCEWithLogitsLoss`` (``binary_cross_entropy_with_logits``),
which applies the sigmoid inside, in a numerically stable way; putting a sigmoid in the model *and*
using the with-logits loss squashes twice. Mini-batch gradient descent shuffles the examples every
epoch, cuts them into batches and takes one optimizer step per batch, clearing the gradients before
each one (``backward`` adds into ``.grad``). A training run should be reproducible: the same seed
must give the same model, whatever else used the random number generators before.

Your task
---------
Write ``fit_binary_classifier(X, y, *, epochs, lr, batch_size, seed)`` and return the trained model.

Contract
--------
- ``X`` is a float32 or float64 tensor of shape ``(N, D)`` with ``N >= 1``, ``D >= 1`` and finite
  values; ``y`` is a tensor of shape ``(N,)`` on the same device holding only 0s and 1s, of any
  dtype: bool, integer or floating.
- Returns a ``torch.nn.Linear(D, 1)`` in ``X``'s dtype and on ``X``'s device, in evaluation mode:
  ``model(x)`` gives the logits, shape ``(M, 1)`` for ``M`` examples (no sigmoid;
  ``torch.sigmoid(model(x))`` is the probability of class 1).
- Training minimises the mean binary cross-entropy of each mini-batch, computed from the logits,
  with plain SGD at learning rate ``lr`` (no momentum, no weight decay): one step per batch, using
  that batch's gradient alone. With ``batch_size >= N`` every epoch is exactly one full-batch
  gradient descent step.
- Each epoch visits every example exactly once, in a fresh random order, in consecutive batches of
  ``batch_size`` (the last batch is smaller when ``batch_size`` does not divide ``N``; none is
  dropped).
- ``seed`` (an int) seeds the initial weights and every shuffle, and nothing else does: the same
  arguments give bitwise identical weights whatever the global random state, different seeds
  give different initial weights, and ``epochs=0`` returns the initialised, untrained model.
- Called inside ``torch.autocast``, it trains exactly as outside it, in ``X``'s dtype (autocast is
  off for the training), and the parameters keep ``X``'s dtype.
- ``X`` that is not 2-D, has no rows or columns, or holds NaN or inf raises ``ValueError`` naming
  ``X``; ``X`` of another dtype raises ``TypeError`` naming ``X``; ``y`` of the wrong shape or with
  a value other than 0 and 1 raises ``ValueError`` naming ``y``; ``epochs < 0``, ``lr`` that is not
  a finite number ``> 0`` and ``batch_size < 1`` raise ``ValueError`` naming that argument.

Hints
-----
- A ``torch.Generator`` seeded with ``seed`` can drive ``torch.randperm``; for the initial weights,
  ``torch.manual_seed`` or ``torch.random.fork_rng`` before building the layer.
- ``F.binary_cross_entropy_with_logits`` wants floating targets of the logits' shape and dtype.
- After training, ``model.eval()``: predictions are ``model(x) > 0``.
- Inside one autocast region, every forward reuses autocast's cached low-precision copy of the
  weights, made at the first step: a whole training loop run under a caller's autocast would keep
  computing with the initial weights. ``torch.autocast(device_type, enabled=False)`` turns it off.
"""

from __future__ import annotations

import torch
from torch import nn


def fit_binary_classifier(X: torch.Tensor, y: torch.Tensor, *, epochs: int, lr: float, batch_size: int,
                          seed: int) -> nn.Linear:
    """Train a logistic-regression ``nn.Linear(D, 1)`` on ``(X, y)`` with shuffled mini-batch SGD."""
    raise NotImplementedError
