"""Wrong: a constant submission -- hooks registered and removed as the contract says, but every
captured activation and every clamped gradient is zero."""

import contextlib
from collections.abc import Iterable, Iterator

import torch
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle


@contextlib.contextmanager
def capture_activations(model: nn.Module, names: Iterable[str]) -> Iterator[dict[str, Tensor]]:
    wanted = list(dict.fromkeys(names))
    modules = dict(model.named_modules())
    missing = [name for name in wanted if name not in modules]
    if missing:
        raise ValueError(f"model has no submodule named {missing[0]!r}")
    acts: dict[str, Tensor] = {}
    handles: list[RemovableHandle] = []

    def recorder(name):
        def hook(module, args, output):
            acts[name] = torch.zeros_like(output).detach()
        return hook

    try:
        for name in wanted:
            handles.append(modules[name].register_forward_hook(recorder(name)))
        yield acts
    finally:
        for handle in handles:
            handle.remove()


def clamp_grads(model: nn.Module, max_abs: float) -> list[RemovableHandle]:
    if isinstance(max_abs, bool) or not isinstance(max_abs, (int, float)) or not max_abs > 0:
        raise ValueError(f"max_abs must be a positive number, got {max_abs!r}")
    return [p.register_hook(torch.zeros_like) for p in model.parameters() if p.requires_grad]
