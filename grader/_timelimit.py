"""A per-test time limit for code that runs in the test's own thread (the plugin, notebooks).

Imports only the standard library.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


class TestTimeout(BaseException):
    """Raised in a test that ran past its time limit.

    A BaseException, not an Exception: hypothesis catches ordinary failures (pytest-timeout's
    included) and replays the example, which would then hang with no alarm left.
    """

    __test__ = False  # not a test class, despite the name


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ``TestTimeout`` in the block once it has run ``seconds`` (and every second after, so
    that code which swallows the first one is interrupted again). No limit when ``seconds`` is 0,
    off the main thread, or where ``setitimer`` does not exist."""
    if not seconds or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum, frame):
        signal.setitimer(signal.ITIMER_REAL, 1.0)
        raise TestTimeout(f"Timeout: the test ran longer than {seconds:g} s "
                          "(an infinite loop, or far too slow?)")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
