"""``grader score``: grade one submission, a folder laid out like ``exercises/``, a zip of one, or
a notebook. Grading the kit's own ``exercises/`` grades the learner's work, so its result is
remembered for ``grader status``, ``grader list`` and ``grader watch`` (``grader.progress``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from grader import catalog, progress

if TYPE_CHECKING:
    from grader.engine.sandbox import Limits
    from grader.engine.scoring import Report


def score(submission: str | None, exercise_ids: list[str] | None, *, limits: Limits,
          warn: Callable[[str], None] = lambda message: None) -> Report:
    """The report of ``submission`` (default: the kit's ``exercises/``) on ``exercise_ids``
    (default: a take-home's, from its manifest, else all); ``warn`` hears what a notebook's
    grading warns about."""
    from grader.engine import scoring

    submission = submission or str(catalog.KIT_ROOT / "exercises")
    if submission.endswith(".ipynb"):
        from grader.workflows.notebooks import score_notebook

        return score_notebook(Path(submission), exercise_ids, limits=limits, warn=warn)
    own = Path(submission).resolve() == (catalog.KIT_ROOT / "exercises").resolve()
    digests = progress.module_digests(Path(submission), list(catalog.load_catalog().values())) if own else {}
    report = scoring.score_path(submission, exercise_ids, limits=limits)
    if own:
        progress.remember_report(report, digests)
    return report
