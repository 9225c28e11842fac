"""A hiring take-home end to end, as the README tells a hiring team and a candidate to do it: a
real bundle from `grader release`, solved, zipped in the ordinary ways (real zip files), graded
with `grader score` and `grader batch`; and the inputs that must get a clear message."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader import catalog
from grader.cli import main
from grader.engine.intake import MANIFEST_NAME
from grader.engine.sandbox import Limits
from grader.workflows.batch import grading_settings, stale_reason

EX = catalog.get_exercise("pytorch.tensors.broadcasting")
LIMITS = ["--timeout", "300", "--test-timeout", "30"]

pytestmark = pytest.mark.timeout(1200)


def _zip_folder(folder: Path, archive: Path, arcroot: str) -> None:
    """Zip ``folder`` with its files under ``arcroot/`` (as a file manager or `zip -r` does)."""
    with zipfile.ZipFile(archive, "w") as out:
        for path in sorted(folder.rglob("*")):
            out.write(path, f"{arcroot}/{path.relative_to(folder).as_posix()}" if arcroot
                      else path.relative_to(folder).as_posix())


@pytest.fixture(scope="module")
def solved(tmp_path_factory) -> Path:
    """A take-home of one exercise, released and solved by the candidate."""
    bundle = tmp_path_factory.mktemp("release") / "take-home"
    assert main(["release", str(bundle), "-e", EX.id]) == 0
    shutil.copyfile(EX.reference, bundle / "exercises" / EX.relpath)
    return bundle


def test_bundle_carries_a_manifest_install_script_and_public_only_workflow(solved):
    manifest = json.loads((solved / "exercises" / MANIFEST_NAME).read_text())
    assert manifest["exercises"] == [EX.id] and manifest["kit_version"]
    workflow = (solved / ".github" / "workflows" / "grade.yml").read_text()
    assert "Only the public tests run here" in workflow
    readme = (solved / "README.md").read_text()
    assert "Python 3.11 or newer" in readme and "python install.py" in readme
    # The installer keeps the torch this environment has, and asks pip for nothing else than
    # the project itself (a dry run: tests download nothing).
    dry = subprocess.run([sys.executable, "install.py", "--dry-run"], cwd=solved, capture_output=True,
                         text=True, timeout=60, check=False)
    assert dry.returncode == 0, dry.stderr
    assert "keeping the installed torch" in dry.stdout
    assert "download.pytorch.org" not in dry.stdout and "pip install -e ." in dry.stdout


def test_score_of_an_unzipped_bundle_grades_exactly_its_exercises(solved, capsys):
    assert main(["score", str(solved), "--format", "json", *LIMITS]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [ex["id"] for ex in data["exercises"]] == [EX.id]
    assert data["score"] == data["max_score"] > 0, data["problems"]


@pytest.fixture(scope="module")
def batch(solved, tmp_path_factory) -> dict:
    """A folder of returned take-homes, zipped the ordinary ways, and the inputs to refuse."""
    folder = tmp_path_factory.mktemp("candidates")
    # From inside the take-home, as its README says: python -m zipfile -c submission.zip exercises
    subprocess.run([sys.executable, "-m", "zipfile", "-c", str(folder / "alice.zip"), "exercises"],
                   cwd=solved, check=True)
    _zip_folder(solved, folder / "bob.zip", "take-home")  # the whole folder, from its parent
    _zip_folder(solved / "exercises", folder / "carol.zip", "carol-submission/exercises")
    (folder / "dave").mkdir()  # an unzipped folder, as sent
    shutil.copytree(solved / "exercises", folder / "dave" / "my work" / "exercises")
    with zipfile.ZipFile(folder / "erin.zip", "w") as out:
        out.write(solved / "exercises" / EX.relpath, f"exercises/{EX.relpath.as_posix()}")
        out.write(solved / "exercises" / MANIFEST_NAME, f"exercises/{MANIFEST_NAME}")
        out.writestr("../../escaped.py", "print('outside')\n")
        out.writestr("/etc/absolute.py", "print('absolute')\n")
    with zipfile.ZipFile(folder / "frank.zip", "w") as out:  # the module under another name
        out.write(solved / "exercises" / MANIFEST_NAME, f"exercises/{MANIFEST_NAME}")
        out.write(solved / "exercises" / EX.relpath, "exercises/pytorch/tensors/broadcast.py")
    zipfile.ZipFile(folder / "gina.zip", "w").close()  # empty
    out = tmp_path_factory.mktemp("results")
    messages: list[str] = []
    from grader.workflows.batch import run_batch

    gradebook = run_batch(folder, out, jobs=2, limits=Limits(wall_s=300, test_s=30), log=messages.append)
    results = {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}
    with open(gradebook, newline="") as handle:
        rows = {r["submission"]: r for r in csv.DictReader(handle)}
    return {"folder": folder, "out": out, "results": results, "rows": rows, "messages": messages}


@pytest.mark.parametrize("name", ["alice", "bob", "carol", "dave"])
def test_ordinary_zips_and_folders_get_full_marks_on_the_take_homes_exercises(batch, name):
    result = batch["results"][name]
    assert [ex["id"] for ex in result["exercises"]] == [EX.id]
    assert result["score"] == result["max_score"] > 0, result["problems"]
    assert not result["problems"]


def test_gradebook_has_the_take_homes_columns_and_candidate_names(batch):
    rows = batch["rows"]
    assert set(rows) == {"alice", "bob", "carol", "dave", "erin", "frank", "gina"}
    assert [k for k in rows["alice"] if k.count(".") == 2] == [EX.id]  # one exercise column
    assert float(rows["carol"][EX.id]) == float(rows["carol"]["max_total"]) > 0


def test_escaping_zip_entries_are_named_and_the_rest_is_graded(batch):
    result = batch["results"]["erin"]
    problems = " ".join(result["problems"])
    assert "'../../escaped.py' points outside" in problems and "'/etc/absolute.py' points outside" in problems
    assert result["score"] == result["max_score"] > 0
    assert "escaped.py" in batch["rows"]["erin"]["problems"]


def test_no_module_found_is_a_loud_problem_never_a_silent_zero(batch):
    result = batch["results"]["frank"]
    assert result["problems"][0].startswith(
        f"no exercise module found; looked for {EX.relpath.as_posix()}")
    assert result["score"] == 0 and result["max_score"] > 0  # out of the take-home's points
    assert "no exercise module found" in batch["rows"]["frank"]["problems"]


def test_an_empty_zip_says_so(batch):
    assert "empty zip" in batch["results"]["gina"]["problems"][0]
    assert "empty zip" in batch["rows"]["gina"]["problems"]


def test_score_takes_a_zip(batch, capsys):
    assert main(["score", str(batch["folder"] / "bob.zip"), "--format", "json", *LIMITS]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [ex["id"] for ex in data["exercises"]] == [EX.id]
    assert data["score"] == data["max_score"] > 0


def test_resume_regrades_a_submission_whose_files_changed(batch):
    from grader.workflows.batch import run_batch

    with zipfile.ZipFile(batch["folder"] / "alice.zip", "w") as out:  # alice sends a new version
        out.write(EX.stub, f"exercises/{EX.relpath.as_posix()}")
        out.writestr(f"exercises/{MANIFEST_NAME}", json.dumps({"exercises": [EX.id]}))
    messages: list[str] = []
    run_batch(batch["folder"], batch["out"], jobs=1, limits=Limits(wall_s=300, test_s=30),
              log=messages.append)
    assert any(m.startswith("alice: its files changed since it was graded") for m in messages), messages
    assert any("6 submission(s) already graded" in m for m in messages), messages
    alice = json.loads((batch["out"] / "results" / "alice.json").read_text())
    assert alice["score"] == 0 and alice["exercises"][0]["status"] == "not started"


def test_a_stored_result_holds_only_for_the_same_files_and_settings():
    settings = grading_settings([EX.id], Limits())
    stored = {"batch": {"content_sha256": "abc", "settings": settings}}
    assert stale_reason(stored, "abc", settings) == ""
    assert "files changed" in stale_reason(stored, "def", settings)
    other = grading_settings([EX.id, "pytorch.nn.mlp"], Limits())
    assert "exercises changed" in stale_reason(stored, "abc", other)
    assert "limits changed" in stale_reason(stored, "abc", grading_settings([EX.id], Limits(test_s=1)))
    assert "no record" in stale_reason({"score": 1}, "abc", settings)


def test_empty_batch_folder_is_an_error(tmp_path, capsys):
    (tmp_path / "none").mkdir()
    assert main(["batch", str(tmp_path / "none"), "--out", str(tmp_path / "out")]) == 2
    assert "no submissions in" in capsys.readouterr().err


def test_a_selection_unlike_the_rest_of_the_batch_is_flagged():
    """Without --exercise each returned take-home is graded on its own manifest: one that
    differs from the rest (edited by its candidate?) is flagged for review."""
    from grader.workflows.batch import flag_odd_selections

    def result(*ids):
        return {"exercises": [{"id": i} for i in ids], "flags": []}

    results = {"a": result(EX.id, "pytorch.nn.mlp"), "b": result("pytorch.nn.mlp", EX.id),
               "c": result(EX.id), "d": {"exercises": [], "flags": []}}
    assert flag_odd_selections(results) == ["c"]
    assert "was its take-home manifest edited" in results["c"]["flags"][0]
    assert not results["a"]["flags"] and not results["d"]["flags"]
    assert flag_odd_selections(results) == ["c"] and len(results["c"]["flags"]) == 1  # once only


def test_installer_without_torch_takes_the_cpu_build_and_checks_python(solved, tmp_path):
    """In a fresh virtual environment (no torch): the CPU wheel index, then the project; a dry
    run, so nothing is downloaded."""
    import venv

    venv.create(tmp_path / "venv", with_pip=False)
    python = tmp_path / "venv" / "bin" / "python"
    dry = subprocess.run([str(python), "install.py", "--dry-run"], cwd=solved, capture_output=True,
                         text=True, timeout=60, check=False)
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    assert lines[1].endswith("-m pip install torch>=2.4 --index-url https://download.pytorch.org/whl/cpu")
    assert lines[2].endswith("-m pip install -e .")
    source = (solved / "install.py").read_text()
    assert "MIN = (3, 11)" in source
