"""grader status: the public check and the full check per exercise, done only on full marks for
the current content, results remembered per content digest (grader.progress)."""

from __future__ import annotations

import json

import pytest

from grader import catalog, progress
from grader.cli import main
from grader.workflows import status
from tests.helpers import make_submission, run_python

BROADCASTING = catalog.get_exercise("pytorch.tensors.broadcasting")
FROM_DATA = catalog.get_exercise("pytorch.tensors.from_data")
CREATION = catalog.get_exercise("pytorch.tensors.creation_ops")


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    """Remembered results go to a fresh state folder, never the kit's own."""
    monkeypatch.setenv(progress.STATE_ENV, str(tmp_path / "state"))
    return tmp_path / "state"


def _fake(ex: catalog.Exercise, state: str) -> status.ExerciseStatus:
    return status.ExerciseStatus(ex, state)


def test_next_exercise_is_the_easiest_not_done_first_in_catalog_order():
    exercises = list(catalog.load_catalog().values())
    hard = next(ex for ex in exercises if ex.difficulty == "hard")
    medium = next(ex for ex in exercises if ex.difficulty == "medium")
    easy = [ex for ex in exercises if ex.difficulty == "easy"]
    progress = status.Progress(catalog.KIT_ROOT, [
        _fake(hard, status.FAILING), _fake(medium, status.NOT_STARTED),
        _fake(easy[0], status.DONE), _fake(easy[2], status.NOT_STARTED), _fake(easy[1], status.FAILING),
    ], 0.0)
    assert progress.next_exercise().exercise == easy[1]
    done = status.Progress(catalog.KIT_ROOT, [_fake(easy[0], status.DONE)], 0.0)
    assert done.next_exercise() is None
    assert "Every selected exercise is done: full marks in the full check." in status.render(done)


def test_render_groups_by_topic_with_counts_per_difficulty():
    progress = status.Progress(catalog.KIT_ROOT, [
        _fake(FROM_DATA, status.DONE), _fake(BROADCASTING, status.NOT_STARTED),
        _fake(CREATION, status.NOT_STARTED)], 1.0)
    text = status.render(progress)
    assert "pytorch.tensors: 1/3 done   (easy 1/2, medium 0/1)" in text
    assert "1/3 exercises done, 2 not started" in text
    assert f"next: {CREATION.id} (easy" in text


def test_status_of_a_submission_in_one_run_then_from_memory(tmp_path, capsys):
    failing = BROADCASTING.reference.read_text().replace(
        "    return x @ weight.T + bias", "    return x @ weight.T")
    root = make_submission(tmp_path / "work", {BROADCASTING: failing, FROM_DATA: FROM_DATA.reference,
                                               CREATION: CREATION.stub})
    code = main(["status", str(root), "--topic", "tensors", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    states = {e["id"]: e for e in data["exercises"]}
    # Passing the public tests is not done: the hidden ones have not run.
    assert states[FROM_DATA.id]["state"] == "public checks pass"
    assert states[FROM_DATA.id]["full"] is None and states[FROM_DATA.id]["full_note"] == "not checked yet"
    assert states[CREATION.id]["state"] == "not started"
    assert states[BROADCASTING.id]["state"] == "failing"
    assert states[BROADCASTING.id]["passed"] >= 1 and "affine" in states[BROADCASTING.id]["detail"]
    assert states["pytorch.tensors.numpy_bridge"]["state"] == "missing"
    assert {e["id"] for e in data["exercises"]} == {ex.id for ex in catalog.select(topics=["tensors"])}
    # Easy and not done, first in catalog order: from_data is not done either.
    assert data["next"] == FROM_DATA.id
    assert data["ran_public"] == 3
    # Nothing changed: nothing runs, the same states come from memory.
    again = status.collect(root, catalog.select(topics=["tensors"]))
    assert again.ran_public == 0 and all(s.remembered for s in again.exercises if s.state != "missing")
    assert {s.exercise.id: s.state for s in again.exercises} == {i: e["state"] for i, e in states.items()}
    # One module changed: only it runs again.
    (root / CREATION.relpath).write_text(CREATION.reference.read_text())
    third = status.collect(root, catalog.select(topics=["tensors"]))
    assert third.ran_public == 1
    assert {s.exercise.id: s.state for s in third.exercises}[CREATION.id] == "public checks pass"
    assert "2 exercise(s) pass their public checks: `grader status --full`" in status.render(third)


@pytest.mark.timeout(900)
def test_done_only_on_full_marks_in_the_full_check_of_the_current_content(tmp_path, state):
    """The issue: "done" for an exercise whose public tests pass and whose hidden tests fail."""
    hidden_fails = FROM_DATA.wrong_solution("cast_after_inference").source()
    root = make_submission(tmp_path / "work", {FROM_DATA: hidden_fails, CREATION: CREATION.reference})
    checked = status.collect(root, [FROM_DATA, CREATION], full=True)
    assert checked.problems == [] and checked.ran_full == 2
    by_id = {s.exercise.id: s for s in checked.exercises}
    wrong, right = by_id[FROM_DATA.id], by_id[CREATION.id]
    assert wrong.public.state == progress.PASS  # its public tests pass...
    assert wrong.state == "failing" and not wrong.full.done  # ...and it is not done
    assert wrong.detail.startswith(f"full check {wrong.full.points}; first failure: test_from_data_hidden.py::")
    assert right.state == "done" and right.full.done and right.full_text == right.full.points
    text = status.render(checked)
    assert f"full {right.full.points}" in text and "1/2 exercises done, 1 failing" in text

    # The pytest summary of a learner's run knows it is done, from memory.
    result = run_python("-m", "pytest", "-p", "no:cacheprovider", str(CREATION.public_tests),
                        f"--impl-root={root}")
    assert f"  {'done':<18}  {CREATION.id}" in result.stdout and f"full check {right.full.points}" in result.stdout
    assert "1/1 exercises done" in result.stdout

    # An edit makes the full check stale; reverting it finds the remembered verdict again.
    original = (root / CREATION.relpath).read_text()
    (root / CREATION.relpath).write_text(original + "\n# an edit\n")
    edited = status.collect(root, [CREATION])
    assert edited.exercises[0].state == "public checks pass"
    assert edited.exercises[0].full_text == "changed since last check"
    (root / CREATION.relpath).write_text(original)
    reverted = status.collect(root, [CREATION], full=True)
    assert reverted.exercises[0].state == "done" and reverted.ran_public == reverted.ran_full == 0


def test_an_exercise_without_hidden_tests_is_never_done(tmp_path, monkeypatch):
    """A take-home bundle has no solutions/: its public checks pass, and that is all it says."""
    root = make_submission(tmp_path / "work", {FROM_DATA: FROM_DATA.reference})
    store = progress.Store()
    digest = progress.file_digest(root / FROM_DATA.relpath)
    store.remember_public(FROM_DATA, digest, progress.PublicCheck(progress.PASS, 3))
    store.save()
    monkeypatch.setattr(progress, "has_full_check", lambda ex: False)
    found = status.collect(root, [FROM_DATA], full=True)
    assert found.ran_public == found.ran_full == 0
    assert found.exercises[0].state == "public checks pass"
    assert found.exercises[0].full_text == status.NO_HIDDEN_TESTS
    assert "they run when your work is graded" in status.render(found)


def test_the_store_keys_results_by_content_and_tests(tmp_path):
    path = tmp_path / "state" / progress.PROGRESS_FILE
    store = progress.Store(path)
    store.remember_full(FROM_DATA, "a" * 64, progress.FullCheck(3, 4, "test_x: wrong"))
    assert store.full(FROM_DATA, "a" * 64) == progress.FullCheck(3, 4, "test_x: wrong")
    assert store.full(FROM_DATA, "b" * 64) is None and store.full(CREATION, "a" * 64) is None
    assert store.save() and (path.parent / ".gitignore").read_text().splitlines()[-1] == "*"  # the state folder
    assert progress.Store(path).full(FROM_DATA, "a" * 64).points == "3/4"
    # Another process's results are merged, not overwritten.
    other = progress.Store(path)
    store.remember_public(FROM_DATA, "c" * 64, progress.PublicCheck(progress.PASS, 3))
    other.remember_public(CREATION, "d" * 64, progress.PublicCheck(progress.FAIL, 1, 2, "test_y: no"))
    assert store.save() and other.save()
    merged = progress.Store(path)
    assert merged.public(FROM_DATA, "c" * 64) and merged.public(CREATION, "d" * 64)
    assert merged.full(FROM_DATA, "a" * 64)
    # Only the newest few are kept per exercise.
    for i in range(progress.KEPT_PER_EXERCISE + 3):
        merged.remember_public(FROM_DATA, f"{i:064d}", progress.PublicCheck(progress.PASS, 3))
    merged.save()
    kept = json.loads(path.read_text())["exercises"][FROM_DATA.id]["public"]
    assert len(kept) == progress.KEPT_PER_EXERCISE and kept[0]["module"] == f"{progress.KEPT_PER_EXERCISE + 2:064d}"


def test_the_store_survives_a_damaged_or_unwritable_file(tmp_path, monkeypatch):
    path = tmp_path / progress.PROGRESS_FILE
    path.write_text("{not json")
    store = progress.Store(path)
    assert store.public(FROM_DATA, "a" * 64) is None
    store.remember_public(FROM_DATA, "a" * 64, progress.PublicCheck(progress.PASS, 3))
    assert store.save() and progress.Store(path).public(FROM_DATA, "a" * 64)
    # The tests changed (a kit update): the old result does not count.
    monkeypatch.setattr(progress, "public_tests_digest", lambda ex: "changed")
    assert progress.Store(path).public(FROM_DATA, "a" * 64) is None
    blocked = progress.Store(tmp_path / "a-file" / progress.PROGRESS_FILE)
    (tmp_path / "a-file").write_text("")
    blocked.remember_public(FROM_DATA, "a" * 64, progress.PublicCheck(progress.PASS, 3))
    assert blocked.save() is False


def test_filters_that_match_nothing_are_an_error(capsys):
    assert main(["status", "--topic", "no-such-topic"]) == 2
    assert "no exercise matches" in capsys.readouterr().err


def test_grader_score_of_the_kits_own_exercises_is_remembered(monkeypatch, capsys):
    from grader.engine.scoring import ExerciseResult, Report, TestResult

    hidden_fails = ExerciseResult(FROM_DATA.id, 3.0, 5.0, [
        TestResult("test_from_data.py::test_a", "passed", 3.0, 3.0, "visible"),
        TestResult("test_from_data_hidden.py::test_b", "failed", 0.0, 2.0, "hidden", "b is wrong\nmore")])
    untouched = ExerciseResult(CREATION.id, 0.0, 4.0, [
        TestResult("test_creation_ops.py::test_c", "failed", 0.0, 4.0, "visible", "not started: stub")])
    report = Report("exercises", 3.0, 9.0, [hidden_fails, untouched], 1.0)
    monkeypatch.setattr("grader.engine.scoring.score_path", lambda *args, **kwargs: report)
    assert main(["score", "-e", FROM_DATA.id, "-e", CREATION.id]) == 0
    capsys.readouterr()
    store = progress.Store()
    full = store.full(FROM_DATA, progress.file_digest(FROM_DATA.stub))
    assert full == progress.FullCheck(3.0, 5.0, "test_from_data_hidden.py::test_b: b is wrong", "b is wrong\nmore")
    assert store.public(FROM_DATA, progress.file_digest(FROM_DATA.stub)).state == progress.PASS
    assert store.public(CREATION, progress.file_digest(CREATION.stub)).state == progress.NOT_STARTED
    rows = {ex.id: status.remembered_status(ex, catalog.KIT_ROOT / "exercises", store) for ex in (FROM_DATA, CREATION)}
    assert rows[FROM_DATA.id].state == "failing" and rows[CREATION.id].state == "not started"
    # Another folder's score is not the learner's work: nothing is remembered for it.
    monkeypatch.setenv(progress.STATE_ENV, str(progress.state_dir().parent / "other-state"))
    assert main(["score", str(catalog.KIT_ROOT / "examples" / "submission"), "-e", FROM_DATA.id]) == 0
    assert not (progress.state_dir() / progress.PROGRESS_FILE).exists()


def test_the_pytest_summary_calls_done_only_a_whole_suite_that_passed():
    """Public and hidden tests passing in a learner's run is done; with some left out, it is not."""
    files = [str(BROADCASTING.public_tests), str(BROADCASTING.hidden_tests)]
    whole = run_python("-m", "pytest", "-p", "no:cacheprovider", *files, "--impl-root=solutions")
    assert f"  {'done':<18}  {BROADCASTING.id}" in whole.stdout and "public and hidden" in whole.stdout
    some = run_python("-m", "pytest", "-p", "no:cacheprovider", *files, "--impl-root=solutions", "-k", "not affine")
    assert some.returncode == 0 and f"  {'tests pass':<18}  {BROADCASTING.id}" in some.stdout
    assert "0/1 exercises done; 1 pass their tests here, which is not done" in some.stdout
    named = run_python("-m", "pytest", "-p", "no:cacheprovider", f"{files[0]}::test_batched_affine_matches_linear",
                       files[1], "--impl-root=solutions")
    assert f"  {'tests pass':<18}  {BROADCASTING.id}" in named.stdout
