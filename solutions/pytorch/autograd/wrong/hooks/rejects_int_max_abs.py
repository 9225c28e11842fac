"""Wrong: max_abs must be a float: an int such as 1 or 3, which the contract allows, raises ValueError."""

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle


def _recorder(acts: dict[str, Tensor], name: str) -> Callable[..., None]:
    def hook(module: nn.Module, args: Any, output: Tensor) -> None:
        # A copy, not just detach(): a later in-place op (ReLU(inplace=True)) would change a view.
        # Returning None keeps the module's real output flowing through the model.
        acts[name] = output.detach().clone()
    return hook


@contextlib.contextmanager
def capture_activations(model: nn.Module, names: Iterable[str]) -> Iterator[dict[str, Tensor]]:
    wanted = list(dict.fromkeys(names))
    modules = dict(model.named_modules())
    missing = [name for name in wanted if name not in modules]
    if missing:  # checked before registering anything, so nothing needs cleaning up
        raise ValueError(f"model has no submodule named {missing[0]!r} "
                         f"(known names: {sorted(modules)[:10]}...)")
    acts: dict[str, Tensor] = {}
    handles: list[RemovableHandle] = []
    try:
        for name in wanted:
            handles.append(modules[name].register_forward_hook(_recorder(acts, name)))
        yield acts
    finally:  # runs on normal exit and when the with body raises
        for handle in handles:
            handle.remove()


def clamp_grads(model: nn.Module, max_abs: float) -> list[RemovableHandle]:
    if not isinstance(max_abs, float) or not max_abs > 0:
        raise ValueError(f"max_abs must be a positive number, got {max_abs!r}")
    bound = float(max_abs)

    def hook(grad: Tensor) -> Tensor:
        return grad.clamp(-bound, bound)  # a new tensor replaces this backward's gradient

    # Tensor hooks cannot be registered on tensors that do not require grad.
    return [p.register_hook(hook) for p in model.parameters() if p.requires_grad]
