"""Count the ATen operators a call dispatches: proves code is vectorised, not a Python loop."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode


class _Counter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func.overloadpacket.__name__)] += 1
        return func(*args, **(kwargs or {}))


def count_aten_ops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, Counter[str]]:
    """Run ``fn(*args, **kwargs)``; return its result and a Counter of ATen op names dispatched.

    A vectorised implementation dispatches the same number of ops whatever the size of the data;
    a Python loop over rows dispatches more as the data grows. A function of a submission graded
    in a process of its own (``grader.remote``) is counted there.
    """
    counted_remotely = getattr(type(fn), "call_counting_ops", None)
    if counted_remotely is not None:
        return counted_remotely(fn, *args, **kwargs)
    with _Counter() as counter:
        result = fn(*args, **kwargs)
    return result, counter.ops
