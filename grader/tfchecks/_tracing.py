"""Count how often a ``tf.function`` traces: each trace builds a new graph (slow), so a training
step that retraces per batch is a classic performance bug."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grader.tfchecks._env import tf  # noqa: F401 - a tf.function exists only with TensorFlow loaded


def _tracing_count(fn: Any, name: str) -> int:
    getter = getattr(fn, "experimental_get_tracing_count", None)
    if not callable(getter):
        raise AssertionError(  # noqa: TRY004 - a failed check, reported to the learner
            f"{name}: expected a tf.function (decorate it with @tf.function or wrap "
            f"it with tf.function(...)), got {type(fn).__name__}")
    return int(getter())


def retrace_counter(fn: Any, *, name: str = "function") -> Callable[[], int]:
    """Return a callable giving how many times ``fn`` (a ``tf.function``) traced since this call.

    ``counter = retrace_counter(step); ...run...; assert counter() <= 2``. Raises
    ``AssertionError`` with a clear message when ``fn`` is not a ``tf.function``.
    """
    start = _tracing_count(fn, name)
    return lambda: _tracing_count(fn, name) - start
