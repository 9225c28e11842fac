"""Parameter groups: which weights to decay.

The question
------------
Weight decay (L2 regularisation) is a standard defence against over-fitting: it pulls weights
towards zero. But not every parameter should be pulled. Decaying a bias or a normalisation
layer's scale and shift does not reduce the model's capacity in a useful way and can hurt;
decaying embedding rows pushes rarely-seen tokens to zero. The usual recipe (GPT-style training,
Keras' ``exclude_from_weight_decay``) is to pass the optimizer two *parameter groups*: one with
``weight_decay`` for the weight matrices and kernels, one with ``weight_decay=0`` for the rest.

Your task
---------
Write ``param_groups(model, weight_decay)`` returning parameter groups for any ``torch.optim``
optimizer, e.g. ``torch.optim.AdamW(param_groups(model, 0.1), lr=3e-4)``.

Contract
--------
- Returns a list of dicts. Each dict has exactly two keys: ``"params"``, a ``list`` of the
  model's own ``nn.Parameter`` objects (not copies), and ``"weight_decay"``: ``weight_decay`` for
  a group of decayed parameters, ``0.0`` for the others. Everything else (lr, betas, ...) comes
  from the optimizer's defaults. How many groups and in what order is up to you (two is usual);
  an empty group may be left out.
- Decayed: the ``weight`` of every ``nn.Linear`` and every convolution (``nn.Conv1d/2d/3d`` and
  ``nn.ConvTranspose1d/2d/3d``), subclasses included.
- Not decayed: everything else. That is every bias, every parameter of normalisation layers
  (``BatchNorm*``, ``LayerNorm``, ``GroupNorm``, ``InstanceNorm*``, ``RMSNorm``, ...), embeddings
  (``nn.Embedding``, ``nn.EmbeddingBag``) and any other parameter, such as an ``nn.Parameter``
  registered directly on a custom module (a learned position table, a scale).
- Frozen parameters (``requires_grad=False``) are left out entirely.
- Every trainable parameter appears exactly once, also when it is shared by several modules
  (tied weights, e.g. an output ``Linear`` reusing an ``Embedding``'s weight). A shared parameter
  is decayed only if *every* module holding it holds it as a Linear/convolution ``weight``.
- Only looks at the model's structure: works for a model on any device, ``meta`` included.
- ``weight_decay < 0`` raises ``ValueError`` naming ``weight_decay``, and so does a NaN
  ``weight_decay``; ``weight_decay = 0`` is allowed (the groups are built the same way). A
  ``model`` that is not an ``nn.Module`` raises ``TypeError`` naming ``model``.

Hints
-----
- ``model.named_modules()`` with ``module.named_parameters(recurse=False)`` tells you which
  module owns each parameter; a tied parameter shows up once per owner.
- ``model.parameters()`` never repeats a shared parameter; an optimizer refuses a parameter
  that is in two groups.
"""

from __future__ import annotations

from typing import Any

import torch


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """Parameter groups for ``model``: Linear/conv weights decayed, everything else not."""
    raise NotImplementedError
