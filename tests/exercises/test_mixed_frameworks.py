"""A submission that mixes both frameworks grades correctly: the cross-framework exercise (torch and
TensorFlow in one process), a PyTorch exercise and a TensorFlow exercise, each at its reference
solution, get full marks in learner mode, in grading mode and in a batch."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from grader import catalog
from grader.engine.scoring import score_submission
from grader.workflows.batch import run_batch
from tests.helpers import make_submission, run_python

IDS = ["pytorch.tensors.broadcasting", "tensorflow.keras.custom_layer", "crossframework.port_weights"]
EXERCISES = [catalog.get_exercise(i) for i in IDS]

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def submission(tmp_path_factory) -> Path:
    pytest.importorskip("tensorflow")
    root = tmp_path_factory.mktemp("mixed") / "student"
    return make_submission(root, {ex: ex.reference for ex in EXERCISES})


def test_learner_mode_runs_every_exercise_to_done(submission):
    files = [str(p) for ex in EXERCISES for p in (ex.public_tests, ex.hidden_tests)]
    proc = run_python("-m", "pytest", "-q", "-p", "no:warnings", "--impl-root", str(submission), *files)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    for ex in EXERCISES:
        assert any(line.split()[:2] == ["done", ex.id] for line in output.splitlines()), (ex.id, output[-3000:])
    assert f"{len(EXERCISES)}/{len(EXERCISES)} exercises done" in output


def test_grading_mode_gives_full_marks(submission):
    report = score_submission(submission, IDS)
    assert report.problems == []
    assert [ex.id for ex in report.exercises] == IDS
    for ex in report.exercises:
        failed = [(t.name, t.status, t.message[:300]) for t in ex.tests if t.status != "passed"]
        assert ex.status == "done" and ex.score == ex.max_score > 0, (ex.id, failed)
    assert report.score == report.max_score


def test_batch_gives_every_copy_full_marks(submission, tmp_path):
    folder = tmp_path / "submissions"
    for name in ("alice", "bob"):
        shutil.copytree(submission, folder / name)
    out = tmp_path / "out"
    gradebook = run_batch(folder, out, exercise_ids=IDS, jobs=2, log=lambda message: None)
    for name in ("alice", "bob"):
        result = json.loads((out / "results" / f"{name}.json").read_text())
        assert result["problems"] == [], (name, result["problems"])
        assert result["score"] == result["max_score"] > 0, (name, [
            (ex["id"], ex["score"], ex["max_score"]) for ex in result["exercises"]])
        assert {ex["id"]: ex["status"] for ex in result["exercises"]} == dict.fromkeys(IDS, "done")
    with open(gradebook, newline="") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    assert set(rows) == {"alice", "bob"}
    assert all(row["percent"] == "100.0" for row in rows.values())
