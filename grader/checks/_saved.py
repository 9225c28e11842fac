"""Count the tensors autograd saves for backward during a call: proves checkpointing saves less."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def count_saved_tensors(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, int]:
    """Run ``fn(*args, **kwargs)``; return its result and how many tensors autograd saved for
    backward while it ran, as ``torch.autograd.graph.saved_tensors_hooks`` sees them (a call
    that sets saved-tensor hooks of its own, as ``torch.utils.checkpoint`` does, hides what they
    pack: that is what a checkpoint saves instead).

    A function of a submission graded in a process of its own (``grader.remote``) is counted
    there, and the test that asks is marked as checked in that process.
    """
    probed = getattr(type(fn), "call_probed", None)
    if probed is not None:
        return probed(fn, "saved_tensors", *args, **kwargs)
    count = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal count
        count += 1
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        result = fn(*args, **kwargs)
    return result, count
