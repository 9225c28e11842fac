"""Fine-tuning a pretrained model: a new head, frozen layers, frozen batch norm.

The question
------------
Transfer learning reuses a network trained on a large dataset: replace its classification head
with a fresh one for the new classes, freeze the pretrained layers (``requires_grad=False``, so
no gradient is computed or applied) and train the head, perhaps unfreezing the last block or two.
The trap is batch norm: freezing its weight and bias does not freeze its *running statistics*,
which ``model.train()`` updates on every forward pass. A "frozen" backbone then drifts towards
the small fine-tuning batches, and normalises with per-batch statistics. Frozen batch-norm layers
must stay in eval mode even while the rest of the model trains.

Your task
---------
Write ``prepare_for_finetuning(model, head, num_classes, trainable=())`` and
``trainable_parameters(model)``.

Contract
--------
- ``head`` is the dotted name of an ``nn.Linear`` submodule of ``model`` (``"fc"``,
  ``"classifier.1"``). It is replaced by a new ``nn.Linear(old.in_features, num_classes)`` (with
  a bias) with the old layer's dtype and device. The model is modified in place and returned.
- Afterwards exactly these parameters require grad: those of the new head and those of the
  submodules named in ``trainable`` (an iterable of dotted submodule names). Every other parameter
  is frozen (``requires_grad=False``) and receives no gradient.
- Batch-norm layers (``nn.BatchNorm1d/2d/3d``) outside the head and the ``trainable`` submodules
  are frozen batch norm: even after ``model.train()`` and during training they normalise with
  their running statistics and never update them (``running_mean``, ``running_var`` and
  ``num_batches_tracked`` stay as they were). Batch norm inside a ``trainable`` submodule trains
  normally, and ``model.eval()`` still puts the whole model in eval mode.
- ``trainable_parameters(model)`` returns the list of parameters that require grad, in
  ``model.parameters()`` order: what to give the optimizer.
- Errors: ``head`` that names no submodule raises ``ValueError`` naming ``head``; one that is not
  an ``nn.Linear`` raises ``TypeError`` naming ``head``; a name in ``trainable`` that names no
  submodule raises ``ValueError`` naming ``trainable``; ``num_classes < 1`` raises ``ValueError``
  naming ``num_classes``. They are raised before the model is changed.

Hints
-----
- ``model.get_submodule(name)`` finds a dotted name (and raises ``AttributeError`` otherwise);
  ``setattr`` on its parent replaces it.
- ``bn.eval()`` once is not enough: the next ``model.train()`` switches it back. Make the layer
  ignore ``train(True)``, e.g. by overriding its ``train`` method on the instance.
"""

from __future__ import annotations

from collections.abc import Iterable

from torch import nn


def prepare_for_finetuning(model: nn.Module, head: str, num_classes: int,
                           trainable: Iterable[str] = ()) -> nn.Module:
    """Replace ``model.<head>``, freeze everything but it and ``trainable``; returns ``model``."""
    raise NotImplementedError


def trainable_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The parameters of ``model`` that require grad, in ``model.parameters()`` order."""
    raise NotImplementedError
