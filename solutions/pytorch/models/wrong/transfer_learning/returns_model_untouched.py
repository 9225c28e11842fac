"""Wrong: validates its arguments, then returns the model unchanged, and trainable_parameters
returns every parameter (the constant submission)."""


from __future__ import annotations

from collections.abc import Iterable

from torch import nn

def _has_submodule(model: nn.Module, name: str) -> bool:
    try:
        model.get_submodule(name)
    except AttributeError:
        return False
    return True


def prepare_for_finetuning(model: nn.Module, head: str, num_classes: int,
                           trainable: Iterable[str] = ()) -> nn.Module:
    """Replace ``model.<head>``, freeze everything but it and ``trainable``; returns ``model``."""
    trainable = list(trainable)
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
    return model


def trainable_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The parameters of ``model`` that require grad, in ``model.parameters()`` order."""
    return list(model.parameters())
