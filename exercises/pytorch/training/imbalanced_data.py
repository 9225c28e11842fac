"""Imbalanced classes: class weights for the loss, and a balanced sampler.

The question
------------
How do you handle an imbalanced dataset in PyTorch? With 95% of the examples in one class, a model
that always predicts that class is 95% accurate and useless. Two standard remedies: weight the loss
so that each class counts as much as the others (``nn.CrossEntropyLoss(weight=...)``, weights
inversely proportional to the class frequencies), or rebalance the data itself by over-sampling
the rare classes (``torch.utils.data.WeightedRandomSampler``, where the weight of each *example*
is the inverse of its class's frequency, and sampling is *with replacement*, or the rare classes
run out). Classic slips: weights proportional to the counts instead of inversely, a class absent
from the data getting an infinite weight, and passing per-class weights where the sampler expects
one weight per example.

Your task
---------
Write ``class_weights(labels, num_classes)`` and ``balanced_sampler(labels, num_samples, generator=None)``.

Contract
--------
- ``labels`` is a non-empty 1-D tensor of an integer dtype (``int64``, ``int32``, ``uint8``...)
  or a non-empty list of Python ints, holding class indices ``>= 0`` (for ``class_weights``, also
  ``< num_classes``); ``num_classes`` and ``num_samples`` are ints ``>= 1``.
- ``class_weights`` returns a float32 tensor of shape ``(num_classes,)`` on the device of
  ``labels`` (the CPU for a list). A class with ``n_c > 0`` examples gets ``N / (P * n_c)``, where
  ``N`` is the number of labels and ``P`` the number of classes present; a class absent from
  ``labels`` gets 0 (never inf or NaN). So every present class carries the same total weight, and
  the weights of all ``N`` labels add up to ``N``.
- The result works as ``torch.nn.CrossEntropyLoss(weight=...)`` for float32 logits of shape
  ``(B, num_classes)`` on the same device.
- ``balanced_sampler`` returns a ``torch.utils.data.Sampler`` for ``DataLoader(dataset,
  sampler=...)``, of length ``num_samples``. Each pass over it yields ``num_samples`` indices into
  ``labels`` (Python ints in ``[0, N)``), drawn independently and with replacement, index ``i``
  with probability ``1 / (P * n_c)`` where ``c = labels[i]``: every present class is equally
  likely, and so are the examples within a class.
- Every pass draws afresh. The draws come from ``generator`` (a ``torch.Generator``) when one is
  given, else from torch's global random state: generators seeded alike give the same indices,
  whatever else used the global random state.
- ``labels`` that is empty, not 1-D, or holds a negative index (or, for ``class_weights``, one
  ``>= num_classes``) raises ``ValueError`` naming ``labels``, and ``labels`` of a floating or bool
  dtype (or a list holding anything but ints) raises ``TypeError`` naming ``labels``;
  ``num_classes < 1`` and ``num_samples < 1`` raise ``ValueError`` naming that argument.

Hints
-----
- ``torch.bincount(labels, minlength=num_classes)`` counts every class, absent ones included.
- ``WeightedRandomSampler(weights, num_samples, replacement=True, generator=generator)`` wants one
  weight per example: ``weights[i]`` is the weight of ``labels[i]``'s class.
"""

from __future__ import annotations

import torch
from torch.utils.data import Sampler


def class_weights(labels: torch.Tensor | list[int], num_classes: int) -> torch.Tensor:
    """Per-class loss weights, inversely proportional to the class counts (0 for absent classes)."""
    raise NotImplementedError


def balanced_sampler(labels: torch.Tensor | list[int], num_samples: int,
                     generator: torch.Generator | None = None) -> Sampler[int]:
    """A sampler drawing ``num_samples`` indices with replacement, every present class equally likely."""
    raise NotImplementedError
