"""``grader batch``'s hiring outputs: an HTML report per submission, an index page ranking the
batch, near-copy pairs across submissions (rebuilt from the stored results on resume), and the
progress display (a rich bar on a terminal, plain lines otherwise, ``NO_COLOR`` respected)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from grader import catalog
from grader.cli import main
from grader.engine.sandbox import Limits
from grader.engine.scoring import ExerciseResult, Report, TestResult
from grader.workflows import batch
from grader.workflows.batch import BatchError, run_batch, write_reports
from tests.grader.test_similarity import INDEPENDENT, INDEPENDENT_TOO
from tests.helpers import make_submission

EX = catalog.get_exercise("pytorch.tensors.broadcasting")
OTHER = catalog.get_exercise("pytorch.optim.train_step")
HOSTILE = "<img src=x onerror=alert(1)>"


def _store(out: Path, name: str, code: str, score: float) -> None:
    """A stored batch result, as ``run_batch`` writes it, for a submission of ``code``."""
    tests = [TestResult("test_broadcasting.py::test_pairwise_small_example",
                        "passed" if score else "failed", score, 4.0, "visible",
                        "" if score else "not started: pytorch/tensors/broadcasting.py still raises")]
    report = Report(f"/batch/{name}.zip", score, 6.0, [
        ExerciseResult(EX.id, score, 4.0, tests, code),
        ExerciseResult(OTHER.id, 0.0, 2.0, [TestResult("test_train_step.py::test_loss_goes_down", "failed", 0, 2,
                                                       "visible", "not started: still raises")],
                       OTHER.stub.read_text())], 3.0, candidate=name)
    path = out / "results" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.to_dict()), encoding="utf-8")


@pytest.fixture
def stored(tmp_path) -> tuple[Path, list[str]]:
    """Six identical submissions, two independent ones, an untouched stub and a hostile name."""
    out = tmp_path / "out"
    names = [f"copy{i}" for i in range(6)] + ["solo", "solo2", "stub", HOSTILE]
    for i in range(6):
        _store(out, f"copy{i}", INDEPENDENT, 3.0)
    _store(out, "solo", EX.reference.read_text(), 4.0)
    _store(out, "solo2", INDEPENDENT_TOO, 2.0)
    _store(out, "stub", EX.stub.read_text(), 0.0)
    _store(out, HOSTILE, "x = 1\n", 1.0)
    return out, names


def test_reports_index_and_pairs_from_the_stored_results(stored):
    out, names = stored
    pairs = write_reports(out, names)
    assert {(p.first, p.second) for p in pairs} == {(f"copy{i}", f"copy{j}") for i in range(6) for j in range(i + 1, 6)}
    for name in names:
        assert (out / "html" / f"{name}.html").is_file()
    page = (out / "html" / "copy0.html").read_text()
    assert "<h1>tensor-drills report: copy0</h1>" in page
    assert all(f"near copy of submission copy{j} (similarity 1.00)" in page for j in range(1, 6))
    assert "near copy of submission" not in (out / "html" / "solo.html").read_text()

    index = (out / "index.html").read_text()
    ranked = re.findall(r'<a href="html/([^"]+)\.html">', index)
    assert ranked[:1] == ["solo"] and ranked[-1] == "stub" and len(ranked) == len(names)
    assert ranked[1:7] == [f"copy{i}" for i in range(6)]  # equal scores: by name
    assert "%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E" in ranked  # the link is quoted...
    assert HOSTILE not in index and "&lt;img src=x onerror=alert(1)&gt;" in index  # ...and the name escaped
    assert index.count("<tr><td>pytorch.tensors.broadcasting</td>") == 15  # the pairs table

    with open(out / "near-copies.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 15 and {r["exercise"] for r in rows} == {EX.id} and rows[0]["similarity"] == "1.000"


def test_a_submission_that_could_not_be_graded_gets_a_report_that_says_why(tmp_path):
    out = tmp_path / "out"
    entry = batch.Entry("broken", tmp_path / "broken.zip", "broken.zip is not a valid zip file")
    result, _ = batch.grade_entry(entry, [EX.id], Limits(), [])
    (out / "results").mkdir(parents=True)
    (out / "results" / "broken.json").write_text(json.dumps(result))
    write_reports(out, ["broken"])
    page = (out / "html" / "broken.html").read_text()
    assert "<h1>tensor-drills report: broken</h1>" in page
    assert "Problem: broken.zip is not a valid zip file" in page and "not graded</b>: no check ran" in page


def test_a_batch_without_copies(stored):
    out, names = stored
    assert write_reports(out, ["solo", "solo2", "stub"]) == []
    assert "No two submissions are near copies of each other." in (out / "index.html").read_text()
    with open(out / "near-copies.csv", newline="", encoding="utf-8") as handle:
        assert list(csv.reader(handle)) == [["exercise", "submission", "other_submission", "similarity",
                                             "shared_fingerprints"]]


@pytest.mark.parametrize("value", ["0", "-1", "1.01", "nan", "inf", "much"])
def test_copy_threshold_is_checked_before_any_work(tmp_path, capsys, value):
    folder = make_submission(tmp_path / "subs" / "ann", {EX: INDEPENDENT}).parent
    with pytest.raises(SystemExit) as exited:  # argparse's usage error
        main(["batch", str(folder), "--out", str(tmp_path / "out"), "--copy-threshold", value])
    assert exited.value.code == 2
    assert "--copy-threshold" in capsys.readouterr().err and not (tmp_path / "out").exists()
    with pytest.raises(BatchError, match="above 0 and at most 1"):
        run_batch(folder, tmp_path / "out", copy_threshold=float(value) if value != "much" else value)
    assert not (tmp_path / "out").exists()


def test_copy_threshold_of_one_is_accepted(tmp_path, capsys):
    # Accepted: the batch goes on to its next check (the folder), which fails on its own terms.
    assert main(["batch", str(tmp_path / "missing"), "--copy-threshold", "1"]) == 2
    assert "submissions folder not found" in capsys.readouterr().err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


_COLOUR = re.compile(r"\x1b\[[0-9;]*(?:3[0-8]|9[0-7])[0-9;]*m")


def _run_progress(stream, total=3):
    progress = batch._Progress(total, stream)
    for i in range(total):
        progress.update(f"cand{i}", f"{i}/3")
    progress.close()
    return stream.getvalue()


def test_progress_is_a_rich_bar_in_colour_on_a_terminal(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    text = _run_progress(_Terminal())
    assert "3/3" in text and "cand2: 2/3" in text and "━" in text  # rich's bar
    assert _COLOUR.search(text)


def test_progress_respects_no_color(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    text = _run_progress(_Terminal())
    assert "3/3" in text and not _COLOUR.search(text)


def test_progress_is_plain_lines_in_a_pipe(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    lines = _run_progress(io.StringIO()).splitlines()
    assert [re.sub(r" \(eta \d+ s\)$", "", line) for line in lines] == [
        "[1/3] cand0: 0/3", "[2/3] cand1: 1/3", "[3/3] cand2: 2/3"]
    assert "\x1b" not in "".join(lines)


def test_batch_writes_the_reports_and_rebuilds_them_on_resume(tmp_path):
    """Real grading: two copies of one solution and an untouched stub."""
    folder = tmp_path / "subs"
    for name, code in (("ann", INDEPENDENT), ("bob", INDEPENDENT), ("cy", EX.stub.read_text())):
        make_submission(folder / name, {EX: code})
    out, messages = tmp_path / "out", []
    run_batch(folder, out, exercise_ids=[EX.id], jobs=2, limits=Limits(wall_s=300, test_s=30),
              log=messages.append)
    index = (out / "index.html").read_text()
    assert re.findall(r'<a href="html/([^"]+)\.html">', index)[-1] == "cy"
    assert "  pytorch.tensors.broadcasting: ann and bob (similarity 1.00)" in messages
    stored = json.loads((out / "results" / "ann.json").read_text())
    assert stored["exercises"][0]["code"] == INDEPENDENT and stored["candidate"] == "ann"
    assert "near copy of submission bob" in (out / "html" / "ann.html").read_text()

    for path in (out / "index.html", out / "near-copies.csv", *(out / "html").iterdir()):
        path.unlink()
    messages.clear()
    run_batch(folder, out, exercise_ids=[EX.id], jobs=2, limits=Limits(wall_s=300, test_s=30),
              log=messages.append)
    assert any("already graded" in m for m in messages)  # nothing graded again...
    assert (out / "index.html").read_text() == index  # ...and the index is rebuilt whole
    assert sorted(p.name for p in (out / "html").iterdir()) == ["ann.html", "bob.html", "cy.html"]
