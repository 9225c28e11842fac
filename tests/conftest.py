"""What the kit's own test processes change of the grader's defaults."""

from __future__ import annotations

from grader.engine import forkserver


def pytest_configure(config) -> None:
    # A test process keeps its fork servers until it ends: the grader's default lets a server go
    # after a minute without a child, which frees a user's memory, but one test file after another
    # graded a minute apart, and each started the same server again (4-9 s of CPU a start, ten
    # starts in the two workers of a run). A test of idle closing sets its own limit.
    forkserver.IDLE_S = float("inf")
