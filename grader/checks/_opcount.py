"""Record the ATen operators a call dispatches: proves code is vectorised, not a Python loop, and
which dtypes its matrix multiplies ran in."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class AtenCall(NamedTuple):
    """One ATen operator dispatched: its name (``"addmm"``), the dtypes of the tensors among
    its positional arguments, in order, and whether it was asked to copy without blocking (the
    ``non_blocking`` of ``_to_copy``, which ``Tensor.to`` dispatches, and of ``copy_``)."""

    name: str
    dtypes: tuple[torch.dtype, ...]
    non_blocking: bool = False


def _non_blocking(name: str, args: tuple, kwargs: dict) -> bool:
    if name == "copy_" and len(args) > 2:
        return args[2] is True
    return kwargs.get("non_blocking") is True


class _Recorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[AtenCall] = []
        self.paused = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self.paused:
            name = str(func.overloadpacket.__name__)
            self.calls.append(AtenCall(name, tuple(a.dtype for a in args if isinstance(a, torch.Tensor)),
                                       _non_blocking(name, args, kwargs)))
        return func(*args, **kwargs)


_RECORDING: list[_Recorder] = []  # the recorders of the record_aten_ops calls under way, outermost first


def record_aten_ops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, list[AtenCall]]:
    """Run ``fn(*args, **kwargs)``; return its result and the ATen ops it dispatched, in order.

    A function of a submission graded in a process of its own (``grader.remote``) is recorded
    there, and the test that asks is marked as checked in that process; so is each call into
    that process, and each backward through such a call, that a function of the test's makes
    while it is recorded (``recorded_elsewhere``).
    """
    probed = getattr(type(fn), "call_probed", None)
    if probed is not None:
        return probed(fn, "aten_ops", *args, **kwargs)
    with _Recorder() as recorder:
        _RECORDING.append(recorder)
        try:
            result = fn(*args, **kwargs)
        finally:
            _RECORDING.remove(recorder)
    return result, recorder.calls


@contextlib.contextmanager
def recorded_elsewhere() -> Iterator[Callable[[list[AtenCall]], None] | None]:
    """While ``record_aten_ops`` records a function of this process, what it runs in another
    one (a call into the submission's process, ``grader.remote``) is recorded there: inside this
    block the recorders under way record nothing of this process's own work (sending and
    rebuilding values), and the block yields the function that adds the other process's ops to
    each of them; None when nothing is being recorded."""
    recorders = list(_RECORDING)
    if not recorders:
        yield None
        return

    def add(calls: list[AtenCall]) -> None:
        for recorder in recorders:
            recorder.calls.extend(calls)

    for recorder in recorders:
        recorder.paused += 1
    try:
        yield add
    finally:
        for recorder in recorders:
            recorder.paused -= 1


def count_aten_ops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, Counter[str]]:
    """Run ``fn(*args, **kwargs)``; return its result and a Counter of ATen op names dispatched.

    A vectorised implementation dispatches the same number of ops whatever the size of the data;
    a Python loop over rows dispatches more as the data grows. Recorded as ``record_aten_ops``
    records.
    """
    result, calls = record_aten_ops(fn, *args, **kwargs)
    return result, Counter(call.name for call in calls)
