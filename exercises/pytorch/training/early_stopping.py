"""Early stopping that keeps the best weights.

The question
------------
How do you implement early stopping in PyTorch, and how does it fight overfitting? Training loss
keeps falling while the validation loss turns back up: the model starts to memorise. Early
stopping watches a validation metric after every epoch, stops when it has not improved for
``patience`` epochs in a row, and gives back the weights of the best epoch. Two details trip people
up: "improved" must mean better than the best so far by *more* than ``min_delta`` (and "better" is
higher for accuracy, lower for a loss), and the best weights must be a *copy*:
``model.state_dict()`` returns references to the live tensors, which the next optimizer step
overwrites.

Your task
---------
Write the class ``EarlyStopping(patience, min_delta=0.0, mode="min", restore_best=True)`` with
``step(metric, model) -> bool``, called once per epoch, and ``restore(model)``.

Contract
--------
- ``patience`` is an int ``>= 1``; ``min_delta`` is a finite number ``>= 0``; ``mode`` is
  ``"min"`` (lower is better, a loss) or ``"max"`` (higher is better, an accuracy). Anything else
  raises ``ValueError`` naming that argument.
- ``step`` takes the epoch's ``metric`` as a Python ``int`` or ``float`` or a one-element tensor
  (with or without a gradient); anything else raises ``TypeError`` naming ``metric``. It keeps no
  reference to a tensor it is given (nor to its autograd graph): ``best`` is a Python ``float``.
- ``best`` starts at ``inf`` (mode ``"min"``) or ``-inf`` (mode ``"max"``). A step *improves* when
  ``metric < best - min_delta`` (mode ``"min"``) or ``metric > best + min_delta`` (mode ``"max"``),
  strictly; then ``best`` becomes ``metric``. A NaN metric never improves.
- ``step`` returns ``True`` (stop) when the last ``patience`` steps, this one included, all failed
  to improve, and ``False`` otherwise; an improvement starts the count again. It never changes
  the model.
- With ``restore_best=True``, each improving step keeps a copy of the whole ``model.state_dict()``
  (parameters and buffers), unaffected by later changes to the model; ``restore(model)`` loads it
  into ``model`` so that its state equals, bitwise, the state it had at the best step, and can be
  called again later with the same result. ``restore`` returns ``None``.
- ``restore`` raises ``RuntimeError`` when there is nothing to restore: with ``restore_best=False``
  (which keeps no copy at all; the message names ``restore_best``), or when no step has improved
  yet.

Hints
-----
- ``copy.deepcopy(model.state_dict())`` or ``{k: v.detach().clone() for k, v in ...}``.
- ``float(metric)`` turns a one-element tensor into a Python number (and lets go of the tensor).
"""

from __future__ import annotations

import torch


class EarlyStopping:
    """Stop training when a metric stops improving, and keep the best model state."""

    def __init__(self, patience: int, min_delta: float = 0.0, mode: str = "min", restore_best: bool = True):
        raise NotImplementedError

    def step(self, metric: float | torch.Tensor, model: torch.nn.Module) -> bool:
        """Record one epoch's ``metric``; return ``True`` when training should stop."""
        raise NotImplementedError

    def restore(self, model: torch.nn.Module) -> None:
        """Load the best state seen into ``model``."""
        raise NotImplementedError
