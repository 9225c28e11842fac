"""What a function of the test's asks of a submission's process (``grader.remote``) while a
check watches it.

``check_gradients`` watches one evaluation of the function it checks: one that only forwards
its inputs to a single call of the submission's and returns that call's result can have its
finite-difference evaluations made there in batches. ``grader.remote`` tells each request it
makes (``note_request``) and each call of a handle (``note_call``); nothing is kept while no
check watches.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Watch:
    """The requests made while watched, and each call of a handle among them as ``(handle,
    args, kwargs, result)``."""

    requests: int = 0
    calls: list[tuple[Any, tuple, dict, Any]] = field(default_factory=list)


_WATCHES: list[Watch] = []


@contextlib.contextmanager
def watched() -> Iterator[Watch]:
    """Watch the requests made inside the block."""
    watch = Watch()
    _WATCHES.append(watch)
    try:
        yield watch
    finally:
        _WATCHES.remove(watch)


def note_request() -> None:
    """A request of a submission's process is made."""
    for watch in _WATCHES:
        watch.requests += 1


def note_call(handle: Any, args: tuple, kwargs: dict, result: Any) -> None:
    """``handle(*args, **kwargs)`` returned ``result``, from a submission's process."""
    for watch in _WATCHES:
        watch.calls.append((handle, args, kwargs, result))
