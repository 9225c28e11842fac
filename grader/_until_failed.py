"""Running an exercise's tests only until each of some groups of them has a failing test.

``grader verify`` needs of a wrong solution one failing test per contract clause it breaks, each
test its ``caught_by`` names, and one failing hidden test; once a group has its failure, its other
tests can show nothing more. A grading child given groups (``--until-failed``, or a fork server's
``until_failed`` option) leaves out a test of such an exercise once every group naming it has a
failed (or erroring) test: the test never runs and is never reported, so it reads as missing. A
test no group names runs as usual, and so does every test of an exercise given no groups. The
tests a group names alone run first (``alone``): they must run all the same, and a failure of
theirs can spare the other tests of a larger group.

Names are a test function's name or one case of it (``name[case]``), as ``--select-test`` takes.

Framework-free and engine-free: the pytest plugin imports it in the grading child.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

FailureGroups = Mapping[str, Sequence[Collection[str]]]  # exercise id -> groups of test names


class UntilFailed:
    """Which groups of each exercise have a failing test so far."""

    def __init__(self, groups: FailureGroups) -> None:
        self._groups = {ex_id: [frozenset(group) for group in found] for ex_id, found in groups.items()}
        self._failed = {ex_id: [False] * len(found) for ex_id, found in self._groups.items()}

    def _naming(self, ex_id: str, names: Iterable[str]) -> list[int]:
        """The indices of ``ex_id``'s groups that name a test known by ``names`` (its name, and
        its function's name when it is one case of a parametrized test)."""
        names = set(names)
        return [i for i, group in enumerate(self._groups.get(ex_id, ())) if group & names]

    def needed(self, ex_id: str | None, names: Iterable[str]) -> bool:
        """Whether the test can still show something: a group naming it has no failure yet, or no
        group names it."""
        naming = self._naming(ex_id, names) if ex_id in self._groups else []
        return not naming or not all(self._failed[ex_id][i] for i in naming)

    def alone(self, ex_id: str | None, names: Iterable[str]) -> bool:
        """Whether a group of ``ex_id`` names nothing but the test known by ``names``: it runs
        until it fails, whatever else fails."""
        names = set(names)
        return any(len(group) == 1 and group & names for group in self._groups.get(ex_id, ()))

    def failed(self, ex_id: str | None, names: Iterable[str]) -> None:
        """A test known by ``names`` failed: every group naming it has its failure."""
        for i in self._naming(ex_id, names) if ex_id in self._groups else ():
            self._failed[ex_id][i] = True
