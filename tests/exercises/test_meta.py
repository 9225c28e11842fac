"""Every exercise, through the real grader: the reference scores full marks, the untouched stub
scores 0, and every wrong solution loses points on its hidden tests.

The grader runs one child per submission; wrong solutions are graded in rounds (round k holds the
k-th wrong solution of every exercise), so the whole check costs a handful of pytest runs.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from grader import catalog
from grader.sandbox import Limits
from grader.scoring import ExerciseResult, Report, score_submission

EXERCISES = list(catalog.load_catalog().values())
RUN_LIMIT_S = 1800.0

pytestmark = pytest.mark.timeout(3600)


def _by_id(report: Report) -> dict[str, ExerciseResult]:
    return {ex.id: ex for ex in report.exercises}


@pytest.fixture(scope="session")
def graded(tmp_path_factory) -> dict[str, dict]:
    """Grade the references, the stubs and each round of wrong solutions, two at a time."""
    rounds: list[tuple[Path, dict[str, Path]]] = []
    for k in range(max(len(ex.wrong_solutions) for ex in EXERCISES)):
        root = tmp_path_factory.mktemp(f"wrong{k}")
        chosen = {ex.id: ex.wrong_solutions[k] for ex in EXERCISES if len(ex.wrong_solutions) > k}
        for ex_id, src in chosen.items():
            target = root / catalog.get_exercise(ex_id).relpath
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)
        rounds.append((root, chosen))
    jobs = {"reference": (catalog.KIT_ROOT / "solutions", None),
            "stub": (catalog.KIT_ROOT / "exercises", None)}
    for k, (root, chosen) in enumerate(rounds):
        jobs[f"wrong{k}"] = (root, list(chosen))
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(score_submission, root, ids, limits=Limits(wall_s=RUN_LIMIT_S))
                   for name, (root, ids) in jobs.items()}
        reports = {name: f.result() for name, f in futures.items()}
    wrong: dict[str, dict[str, ExerciseResult]] = {}
    for k, (_, chosen) in enumerate(rounds):
        results = _by_id(reports[f"wrong{k}"])
        for ex_id, src in chosen.items():
            wrong.setdefault(ex_id, {})[src.stem] = results[ex_id]
    return {"reference": _by_id(reports["reference"]), "stub": _by_id(reports["stub"]),
            "wrong": wrong, "reports": reports}


def _failures(result: ExerciseResult) -> str:
    return "\n".join(f"  {t.name}: {t.status}: {t.message[:300]}" for t in result.tests
                     if t.status not in ("passed", "not_run"))


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.id)
def test_reference_scores_full_marks(graded, ex):
    result = graded["reference"][ex.id]
    hidden = [t for t in result.tests if t.visibility == "hidden" and t.status != "not_run"]
    assert hidden, f"{ex.id}: no hidden test ran"
    assert result.score == result.max_score > 0, f"{ex.id} reference failed:\n{_failures(result)}"


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.id)
def test_untouched_stub_scores_zero(graded, ex):
    result = graded["stub"][ex.id]
    passed = [t.name for t in result.tests if t.status == "passed"]
    assert result.score == 0 and not passed, f"{ex.id}: the stub passes {passed}"
    assert result.status == "not started", f"{ex.id}: stub reported as {result.status}"


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.id)
def test_every_wrong_solution_fails_a_hidden_test(graded, ex):
    results = graded["wrong"].get(ex.id, {})
    assert len(results) >= 2, f"{ex.id}: needs at least two wrong solutions"
    for mistake, result in results.items():
        hidden_failed = [t.name for t in result.tests if t.visibility == "hidden"
                         and t.status not in ("passed", "not_run")]
        assert hidden_failed, f"{ex.id}: wrong solution {mistake!r} passes every hidden test"


def test_no_run_reported_a_problem(graded):
    problems = {name: r.problems for name, r in graded["reports"].items() if r.problems}
    assert problems == {}
