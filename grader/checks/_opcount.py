"""Record the ATen operators a call dispatches: proves code is vectorised, not a Python loop, and
which dtypes its matrix multiplies ran in."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class AtenCall(NamedTuple):
    """One ATen operator dispatched: its name (``"addmm"``) and the dtypes of the tensors among
    its positional arguments, in order."""

    name: str
    dtypes: tuple[torch.dtype, ...]


class _Recorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[AtenCall] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls.append(AtenCall(str(func.overloadpacket.__name__),
                                   tuple(a.dtype for a in args if isinstance(a, torch.Tensor))))
        return func(*args, **(kwargs or {}))


def record_aten_ops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, list[AtenCall]]:
    """Run ``fn(*args, **kwargs)``; return its result and the ATen ops it dispatched, in order.

    A function of a submission graded in a process of its own (``grader.remote``) is recorded
    there, and the test that asks is marked as checked in that process.
    """
    probed = getattr(type(fn), "call_probed", None)
    if probed is not None:
        return probed(fn, "aten_ops", *args, **kwargs)
    with _Recorder() as recorder:
        result = fn(*args, **kwargs)
    return result, recorder.calls


def count_aten_ops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, Counter[str]]:
    """Run ``fn(*args, **kwargs)``; return its result and a Counter of ATen op names dispatched.

    A vectorised implementation dispatches the same number of ops whatever the size of the data;
    a Python loop over rows dispatches more as the data grows. Recorded as ``record_aten_ops``
    records.
    """
    result, calls = record_aten_ops(fn, *args, **kwargs)
    return result, Counter(call.name for call in calls)
