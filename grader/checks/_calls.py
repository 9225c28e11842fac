"""Record which watched Python functions a call runs: proves code is written from scratch, not
delegated to the library function the exercise asks to rewrite."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any


def record_calls(watched: Sequence[str], fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, list[str]]:
    """Run ``fn(*args, **kwargs)``; return its result and the watched functions it ran, each
    named once, in the order of their first call.

    ``watched`` names Python functions as ``"module.function"`` (``"torch.nn.utils.clip_grad.
    clip_grad_norm_"``: the module that defines it, not one that re-exports it) or every function
    of a module as ``"module.*"``. A function is recognised by the module its code runs in and
    its name, however it was reached (imported under another name, bound before the call, called
    through a wrapper or a decorator), which replacing a module attribute would not catch.

    A function of a submission graded in a process of its own (``grader.remote``) is recorded
    there, and the test that asks is marked as checked in that process.
    """
    watched = tuple(watched)
    if not all(isinstance(name, str) and "." in name for name in watched):
        raise TypeError("watched must name functions as 'module.function' or 'module.*'")
    probed = getattr(type(fn), "call_probed", None)
    if probed is not None:
        return probed(fn, ("calls", list(watched)), *args, **kwargs)
    functions: dict[str, set[str]] = {}
    for name in watched:
        module, _, function = name.rpartition(".")
        functions.setdefault(module, set()).add(function)
    seen: dict[str, None] = {}

    def profile(frame, event: str, arg: Any) -> None:  # noqa: ARG001 - sys.setprofile's signature
        if event != "call":
            return
        module = frame.f_globals.get("__name__")
        names = functions.get(module)
        if names is not None and ("*" in names or frame.f_code.co_name in names):
            seen.setdefault(f"{module}.{frame.f_code.co_name}")

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        result = fn(*args, **kwargs)
    finally:
        sys.setprofile(previous)
    return result, list(seen)
