"""grader status: done / failing / not started / missing from one run of the public tests."""

from __future__ import annotations

import json

from grader import catalog, status
from grader.cli import main
from tests.helpers import make_submission

BROADCASTING = catalog.get_exercise("pytorch.tensors.broadcasting")
FROM_DATA = catalog.get_exercise("pytorch.tensors.from_data")
CREATION = catalog.get_exercise("pytorch.tensors.creation_ops")


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
    assert "passes its public tests" in status.render(done)


def test_render_groups_by_topic_with_counts_per_difficulty():
    progress = status.Progress(catalog.KIT_ROOT, [
        _fake(FROM_DATA, status.DONE), _fake(BROADCASTING, status.NOT_STARTED),
        _fake(CREATION, status.NOT_STARTED)], 1.0)
    text = status.render(progress)
    assert "pytorch.tensors: 1/3 done   (easy 1/2, medium 0/1)" in text
    assert "1/3 exercises done, 2 not started" in text
    assert f"next: {CREATION.id} (easy" in text


def test_status_of_a_submission_in_one_run(tmp_path, capsys):
    failing = BROADCASTING.reference.read_text().replace(
        "    return x @ weight.T + bias", "    return x @ weight.T")
    root = make_submission(tmp_path / "work", {BROADCASTING: failing, FROM_DATA: FROM_DATA.reference,
                                               CREATION: CREATION.stub})
    code = main(["status", str(root), "--topic", "tensors", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    states = {e["id"]: e for e in data["exercises"]}
    assert states[FROM_DATA.id]["state"] == "done"
    assert states[CREATION.id]["state"] == "not started"
    assert states[BROADCASTING.id]["state"] == "failing"
    assert states[BROADCASTING.id]["passed"] >= 1 and "affine" in states[BROADCASTING.id]["detail"]
    assert states["pytorch.tensors.numpy_bridge"]["state"] == "missing"
    assert {e["id"] for e in data["exercises"]} == {ex.id for ex in status.select(topics=["tensors"])}
    # Easy and not done, first in catalog order (from_data, also easy, is done).
    assert data["next"] == "pytorch.tensors.numpy_bridge"


def test_filters_that_match_nothing_are_an_error(capsys):
    assert main(["status", "--topic", "no-such-topic"]) == 2
    assert "no exercise matches" in capsys.readouterr().err
