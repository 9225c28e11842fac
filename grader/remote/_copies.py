"""How both processes list the tensors of a module the trusted side sent a copy of.

The trusted side and the executor each walk their own object (the original, the copy) and must
number its tensors the same way: a change, a gradient or an identity refers to a tensor by its
place in these lists.
"""

from __future__ import annotations

from typing import Any


def module_tensors(module) -> list:
    """A module's parameters then buffers, each once, in ``parameters()``/``buffers()`` order."""
    return [*module.parameters(), *module.buffers()]


def parameters_requiring_grad(objects: list) -> list:
    """The parameters requiring grad of the modules among ``objects``, each once, in order."""
    import torch

    seen: dict[int, Any] = {}
    for obj in objects:
        if isinstance(obj, torch.nn.Module):
            for p in obj.parameters():
                if p.requires_grad:
                    seen.setdefault(id(p), p)
    return list(seen.values())
