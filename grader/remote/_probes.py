"""Evidence only the executor has, as the checks of ``grader.checks`` and ``grader.tfchecks``
take it there.

A check that watches a call (the ATen ops it dispatched, the tensors autograd saved for
backward, the watched Python functions it ran, the TF1 sessions it ran) asks a handle's
``call_probed(probe, ...)``, the
probe a name or a ``(name, parameter)`` pair: the executor runs the call under that very check
and sends its evidence back as plain data, which ``evidence`` rebuilds, checked, on the
trusted side. ``tensors_held_by`` asks a handle what its object holds: ``held`` walks it there,
``held_tensors`` rebuilds the answer here. It is the executor's word either way, so the test is
marked ``checked_in_executor``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grader.remote import _wire as wire


def _run_aten_ops(fn: Callable, args: tuple, kwargs: dict, parameter: None) -> tuple[Any, list]:
    from grader.checks._opcount import record_aten_ops

    result, calls = record_aten_ops(fn, *args, **kwargs)
    return result, [[call.name, list(call.dtypes), call.non_blocking] for call in calls]


def _aten_ops(plain: Any) -> list:
    import torch

    from grader.checks._opcount import AtenCall

    triples = (wire.as_list(call, 3) for call in wire.as_list(plain))
    calls = [AtenCall(name, tuple(wire.as_list(dtypes)), non_blocking) for name, dtypes, non_blocking in triples]
    if not all(type(c.name) is str and all(type(d) is torch.dtype for d in c.dtypes)
               and type(c.non_blocking) is bool for c in calls):
        raise wire.WireError("a record of ops that is not names, dtypes and flags")
    return calls


def _run_saved_tensors(fn: Callable, args: tuple, kwargs: dict, parameter: None) -> tuple[Any, int]:
    from grader.checks._saved import count_saved_tensors

    return count_saved_tensors(fn, *args, **kwargs)


def _saved_tensors(plain: Any) -> int:
    if type(plain) is not int or plain < 0:
        raise wire.WireError("a count of saved tensors that is not a count")
    return plain


def _run_calls(fn: Callable, args: tuple, kwargs: dict, watched: Any) -> tuple[Any, list]:
    from grader.checks._calls import record_calls

    if not (isinstance(watched, list) and all(type(name) is str for name in watched)):
        raise wire.WireError("watched functions that are not names")
    return record_calls(watched, fn, *args, **kwargs)


def _calls(plain: Any) -> list[str]:
    names = wire.as_list(plain)
    if not all(type(name) is str for name in names):
        raise wire.WireError("a record of calls that is not names")
    return names


def _run_session_runs(fn: Callable, args: tuple, kwargs: dict, parameter: None) -> tuple[Any, list]:
    from grader.tfchecks._sessions import record_session_runs

    result, runs = record_session_runs(fn, *args, **kwargs)
    return result, [[run.own_graph, [None if shape is None else list(shape) for shape in run.placeholder_shapes]]
                    for run in runs]


def _session_runs(plain: Any) -> list:
    from grader.tfchecks._sessions import SessionRun

    runs = []
    for entry in wire.as_list(plain):
        own_graph, shapes = wire.as_list(entry, 2)
        shapes = [None if shape is None else tuple(wire.as_list(shape)) for shape in wire.as_list(shapes)]
        if type(own_graph) is not bool or not all(
                shape is None or all(n is None or (type(n) is int and n >= 0) for n in shape) for shape in shapes):
            raise wire.WireError("a record of session runs that is not flags and shapes")
        runs.append(SessionRun(own_graph, tuple(shapes)))
    return runs


# name -> (run the call under the check, executor side; rebuild its evidence, trusted side)
PROBES: dict[str, tuple[Callable, Callable]] = {
    "aten_ops": (_run_aten_ops, _aten_ops),
    "saved_tensors": (_run_saved_tensors, _saved_tensors),
    "calls": (_run_calls, _calls),
    "session_runs": (_run_session_runs, _session_runs),
}


def split(probe: Any) -> tuple[str, Any]:
    """A probe as ``call_probed`` takes it (a name, or a ``(name, parameter)`` pair): its name
    and its parameter (None when it has none)."""
    return (probe[0], probe[1]) if isinstance(probe, tuple) else (probe, None)


def run(name: str, fn: Callable, args: tuple, kwargs: dict, parameter: Any = None) -> tuple[Any, Any]:
    """``fn(*args, **kwargs)`` under the probe ``name`` (one of ``PROBES``) with its
    ``parameter``: its result and the evidence, as plain data (executor side)."""
    return PROBES[name][0](fn, args, kwargs, parameter)


def evidence(name: str, plain: Any) -> Any:
    """What the check returns, rebuilt from the executor's plain data (``WireError`` for data
    that is not such evidence)."""
    return PROBES[name][1](plain)


def held(obj: Any) -> list:
    """The tensors ``obj`` holds (``grader.checks.tensors_held_by``), as plain data (executor side)."""
    from grader.checks._held import tensors_held_by

    return [[list(t.shape), t.dtype, t.requires_grad] for t in tensors_held_by(obj)]


def held_tensors(plain: Any) -> list:
    """The ``HeldTensor``s the executor listed (``WireError`` for data that is not such a list)."""
    import torch

    from grader.checks._held import HeldTensor

    found = [HeldTensor(tuple(wire.as_list(shape)), dtype, requires_grad)
             for shape, dtype, requires_grad in (wire.as_list(t, 3) for t in wire.as_list(plain))]
    if not all(all(type(n) is int for n in t.shape) and type(t.dtype) is torch.dtype
               and type(t.requires_grad) is bool for t in found):
        raise wire.WireError("a list of held tensors that is not shapes, dtypes and flags")
    return found
