"""grader gradescope build: the bundle's layout, and its run_autograder run for real on a
Gradescope-like /autograder tree, with results.json checked against Gradescope's schema."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader import catalog
from grader.cli import main
from grader.reports import formats
from grader.workflows.gradescope import stage_submission

EX = catalog.get_exercise("pytorch.tensors.broadcasting")
WRONG = EX.wrong_solution("sqrt_then_square").source()

# Gradescope's autograder specification (https://gradescope-autograders.readthedocs.io/en/latest/specs/)
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
TOP_LEVEL_KEYS = {"score", "execution_time", "output", "output_format", "test_output_format",
                  "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests",
                  "leaderboard"}
TEST_KEYS = {"score", "max_score", "status", "name", "name_format", "number", "output",
             "output_format", "tags", "visibility", "extra_data"}
STATUSES = {"passed", "failed"}


def check_results_schema(data: dict) -> None:
    """Fail unless ``data`` is a valid Gradescope results.json."""
    assert isinstance(data, dict) and set(data) <= TOP_LEVEL_KEYS, set(data) - TOP_LEVEL_KEYS
    tests = data.get("tests", [])
    assert isinstance(tests, list)
    # score is required at the top level unless every test carries one
    assert "score" in data or all("score" in t for t in tests)
    if "score" in data:
        assert isinstance(data["score"], (int, float)) and not isinstance(data["score"], bool)
    if "execution_time" in data:
        assert isinstance(data["execution_time"], (int, float))
    for key in ("output",):
        assert isinstance(data.get(key, ""), str)
    for key in ("visibility", "stdout_visibility"):
        assert data.get(key, "visible") in VISIBILITIES
    for test in tests:
        assert isinstance(test, dict) and set(test) <= TEST_KEYS, set(test) - TEST_KEYS
        assert isinstance(test.get("name", ""), str) and test.get("name")
        for key in ("score", "max_score"):
            if key in test:
                assert isinstance(test[key], (int, float)) and test[key] >= 0
        if "score" in test and "max_score" in test:
            assert test["score"] <= test["max_score"]
        assert test.get("status", "passed") in STATUSES
        assert isinstance(test.get("output", ""), str)
        assert test.get("visibility", "visible") in VISIBILITIES


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "autograder.zip"
    assert main(["gradescope", "build", str(out), "-e", EX.id]) == 0
    return out


def test_bundle_layout(bundle):
    with zipfile.ZipFile(bundle) as archive:
        names = set(archive.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}
        setup = archive.read("setup.sh").decode()
        config = json.loads(archive.read("autograder.json"))
    # setup.sh and run_autograder at the root of the zip, executable
    for script in ("setup.sh", "run_autograder"):
        assert script in names and modes[script] & stat.S_IXUSR
    assert "--index-url https://download.pytorch.org/whl/cpu" in setup
    assert '/autograder/source/kit"' in setup  # no TensorFlow extra for a PyTorch-only bundle
    assert config["exercises"] == [EX.id]
    kit = "kit/"
    for needed in ("grader/cli/__init__.py", "grader/pytest_plugin.py", "catalog.toml", "pyproject.toml",
                   f"exercises/{EX.relpath}", f"exercises/{EX.relpath.parent}/{EX.public_tests.name}",
                   f"solutions/{EX.relpath.parent}/{EX.hidden_tests.name}"):
        assert kit + needed in names, needed
    assert f"{kit}solutions/{EX.relpath}" not in names  # no reference solution
    assert not any("/wrong/" in n or "__pycache__" in n for n in names)
    other = catalog.get_exercise("pytorch.optim.grad_clipping")
    assert f"{kit}solutions/{other.relpath.parent}/{other.hidden_tests.name}" not in names


def test_setup_installs_the_extras_the_exercises_name(tmp_path):
    out = tmp_path / "autograder.zip"
    assert main(["gradescope", "build", str(out), "-e", "pytorch.deploy.onnx_export"]) == 0
    with zipfile.ZipFile(out) as archive:
        assert '/autograder/source/kit[onnx]"' in archive.read("setup.sh").decode()


def _autograder_tree(tmp_path: Path, bundle: Path) -> Path:
    """Lay out tmp/autograder as Gradescope does: the zip in source/, run_autograder copied up."""
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    (root / "submission").mkdir()
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
    shutil.copyfile(root / "source" / "run_autograder", root / "run_autograder")
    (root / "run_autograder").chmod(0o755)
    return root


def test_run_autograder_writes_valid_results(tmp_path, bundle):
    root = _autograder_tree(tmp_path, bundle)
    # A student who uploaded just the module file, at the top level; it imports ctypes, which
    # the static scan flags for review.
    (root / "submission" / EX.relpath.name).write_text("import ctypes  # noqa: F401\n" + WRONG)
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), DRILLS_PYTHON=sys.executable)
    env.pop("GITHUB_STEP_SUMMARY", None)
    proc = subprocess.run([str(root / "run_autograder")], env=env, capture_output=True, text=True, check=False,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((root / "results" / "results.json").read_text())
    check_results_schema(data)
    assert f"{EX.id}: graded {EX.relpath.name}" in data["output"]
    max_score = sum(t["max_score"] for t in data["tests"])
    assert data["score"] == sum(t["score"] for t in data["tests"])
    assert 0 < data["score"] < max_score  # the wrong solution loses the gradient test only
    # The review flag: in a test only instructors see (visibility "hidden"), nowhere students look.
    [review] = [t for t in data["tests"] if t["name"] == formats.REVIEW_FLAGS_TEST]
    assert "ctypes" in review["output"] and review["visibility"] == "hidden" and review["max_score"] == 0
    shown = [data["output"], *(t["output"] for t in data["tests"] if t is not review)]
    assert not any("ctypes" in text for text in shown)
    failed = [t for t in data["tests"] if t["status"] == "failed" and t is not review]
    assert [t["name"].rsplit("::", 1)[-1] for t in failed] == [
        "test_pairwise_gradient_finite_where_rows_coincide"]
    assert failed[0]["visibility"] != "visible"  # hidden tests' details wait for publication


def test_broken_setup_still_writes_results(tmp_path, bundle):
    root = _autograder_tree(tmp_path, bundle)
    (root / "source" / "autograder.json").write_text("{}")
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), DRILLS_PYTHON=sys.executable)
    proc = subprocess.run([str(root / "run_autograder")], env=env, capture_output=True, text=True, check=False,
                          timeout=120)
    assert proc.returncode == 1
    data = json.loads((root / "results" / "results.json").read_text())
    check_results_schema(data)
    assert data["score"] == 0 and "could not grade" in data["output"]


def _notebook(exercise_id: str | None) -> str:
    meta = {"tensor_drills": {"exercise": exercise_id}} if exercise_id else {}
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": meta, "cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "def pairwise_sq_dists(a, b):\n    return a\n"}]})


@pytest.mark.parametrize("files, graded", [
    ({f"exercises/{EX.relpath}": "x = 'laid out'"}, f"exercises/{EX.relpath}"),
    ({f"{EX.relpath}": "x = 'laid out'", "broadcasting.py": "x = 'top'"}, str(EX.relpath)),
    ({"hw/broadcasting.py": "x = 'by name'"}, "hw/broadcasting.py"),
    ({"answer.ipynb": _notebook(EX.id)}, "answer.ipynb"),
    ({"pytorch.tensors.broadcasting.ipynb": _notebook(None)}, "pytorch.tensors.broadcasting.ipynb"),
    ({"__MACOSX/broadcasting.py": "junk", "other.py": "x = 1"}, None),
])
def test_submission_layouts(tmp_path, files, graded):
    sub, out = tmp_path / "submission", tmp_path / "staged"
    for name, text in files.items():
        (sub / name).parent.mkdir(parents=True, exist_ok=True)
        (sub / name).write_text(text)
    [note] = stage_submission(sub, [EX], out)
    if graded is None:
        assert "no broadcasting.py" in note and not (out / EX.relpath).exists()
    else:
        assert note.endswith(graded) and (out / EX.relpath).is_file()
