"""The outcome vocabulary: what a test, a check and an exercise can be, in one place.

The strings are the ones the JSON report, ``progress.json`` and the terminal have always shown
(StrEnum members compare and serialise as those strings), so nothing a user reads changes:

- ``TestStatus``: a test's ``status`` in the JSON report. ``not_run`` (a CUDA test on a machine
  without CUDA, left out of the maximum) is written with an underscore, as a machine value.
- ``State``: an exercise's state, in words for people (``ExerciseResult.status``, ``grader
  status``, ``grader list``, the pytest progress summary): ``not run`` has a space.
- ``CheckState``: the outcome of a module's public tests, as ``progress.json`` remembers it.
- ``Visibility``: a test's ``visibility`` in the JSON report. An nbgrader notebook names its
  cells after the *kind* of test file, ``public`` or ``hidden`` (``cell_kind``): the same split.

``classify`` is the one rule that turns counted test outcomes into a state; every place that
says done / failing / not started uses it.

Framework-free and engine-free: the pytest plugin imports it in the grading child.
"""

from __future__ import annotations

from enum import StrEnum


class TestStatus(StrEnum):
    __test__ = False  # not a pytest test class, despite the name

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"
    MISSING = "missing"  # collected, never reported (a crash, an early exit)
    NOT_RUN = "not_run"  # cannot run on this machine (CUDA); left out of the maximum


class State(StrEnum):
    DONE = "done"
    PUBLIC_PASS = "public checks pass"  # the public tests pass; not done until the full check
    FAILING = "failing"
    NOT_STARTED = "not started"  # the stub's own ``raise NotImplementedError`` still runs
    NOT_RUN = "not run"  # no test of it could run here
    SKIPPED = "skipped"  # every test skipped (a library the tests need is missing)
    MISSING = "missing"  # no module for it
    ERROR = "error"  # its tests could not be collected


class CheckState(StrEnum):
    """The public check's outcome for one module's content, as ``progress.json`` keeps it."""

    PASS = "pass"
    FAIL = "fail"
    NOT_STARTED = "not started"
    ERROR = "error"


class Visibility(StrEnum):
    VISIBLE = "visible"  # a public test, beside the stub
    HIDDEN = "hidden"  # a hidden test, under solutions/


def cell_kind(visibility: str) -> str:
    """The kind of test file an nbgrader notebook names a test's cells after (``public`` or
    ``hidden``)."""
    return "hidden" if visibility == Visibility.HIDDEN else "public"


# A failure message that starts with this is a test of an untouched stub (``grader.feedback``).
NOT_STARTED_PREFIX = "not started"


def classify(passed: int, failed: int, not_started: int) -> State | None:
    """The state of an exercise from its counted tests (skipped and not-run ones left out):
    ``failed`` counts every test that did not pass, ``not_started`` those of them that failed
    only because the stub is untouched. None when nothing failed (passing: whether that is
    ``DONE`` or ``PUBLIC_PASS`` depends on which tests ran, which the caller knows) or nothing
    was counted."""
    if failed == 0:
        return None
    if passed == 0 and not_started == failed:
        return State.NOT_STARTED
    return State.FAILING
