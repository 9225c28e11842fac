"""Wrong: iterates over trainable twice; a generator is empty the second time, so its submodules
stay frozen (breaks 'an iterable of dotted submodule names')."""


from __future__ import annotations

import types
from collections.abc import Iterable

from torch import nn

_BATCH_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)


def _has_submodule(model: nn.Module, name: str) -> bool:
    try:
        model.get_submodule(name)
    except AttributeError:
        return False
    return True


def _frozen_train(self: nn.Module, mode: bool = True) -> nn.Module:
    """``train`` for a frozen batch norm: eval mode always (``eval()`` still works)."""
    return nn.Module.train(self, False)


def prepare_for_finetuning(model: nn.Module, head: str, num_classes: int,
                           trainable: Iterable[str] = ()) -> nn.Module:
    """Replace ``model.<head>``, freeze everything but it and ``trainable``; returns ``model``."""
    if not isinstance(head, str) or not head or not _has_submodule(model, head):
        raise ValueError(f"head {head!r} names no submodule of the model")
    old = model.get_submodule(head)
    if not isinstance(old, nn.Linear):
        raise TypeError(f"head {head!r} is a {type(old).__name__}, expected nn.Linear")
    missing = [name for name in trainable if not _has_submodule(model, name)]
    if missing:
        raise ValueError(f"trainable names no submodule: {missing}")
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(f"num_classes must be an int >= 1, got {num_classes!r}")
    parent_name, _, attr = head.rpartition(".")
    new_head = nn.Linear(old.in_features, num_classes, device=old.weight.device, dtype=old.weight.dtype)
    setattr(model.get_submodule(parent_name) if parent_name else model, attr, new_head)

    model.requires_grad_(False)
    kept = [new_head, *(model.get_submodule(name) for name in trainable)]
    for module in kept:
        module.requires_grad_(True)
    kept_modules = {id(m) for k in kept for m in k.modules()}
    for module in model.modules():
        if isinstance(module, _BATCH_NORMS) and id(module) not in kept_modules:
            module.train = types.MethodType(_frozen_train, module)
            module.train(False)
    return model


def trainable_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The parameters of ``model`` that require grad, in ``model.parameters()`` order."""
    return [p for p in model.parameters() if p.requires_grad]
