"""Every exercise, through the real grader (``grader.workflows.verify``): the reference scores full marks,
the untouched stub scores 0 and reads as not started, and every wrong solution fails a hidden test.
"""

from __future__ import annotations

import pytest

from grader import catalog
from grader.workflows.verify import Verdict, verify

EXERCISES = list(catalog.load_catalog().values())

pytestmark = pytest.mark.timeout(3600)


@pytest.fixture(scope="session")
def verified() -> tuple[dict[str, Verdict], list]:
    verdicts, reports = verify()
    return {v.id: v for v in verdicts}, reports


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.id)
def test_exercise_is_sound(verified, ex):
    problems = verified[0][ex.id].problems()
    assert problems == [], f"{ex.id}:\n" + "\n".join(problems)


def test_no_grading_run_reported_a_problem(verified):
    assert {r.submission: r.problems for r in verified[1] if r.problems} == {}
