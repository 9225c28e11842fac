"""grader score on a notebook (.ipynb) without nbgrader: answer extraction and grading."""

from __future__ import annotations

import json

import pytest

from grader import catalog
from grader.cli import main
from grader.engine.scoring import SubmissionError
from grader.workflows.notebooks import extract_answer, stage_notebook

EX = catalog.get_exercise("pytorch.tensors.broadcasting")
REFERENCE = EX.reference.read_text()


def _code(source: str, **metadata) -> dict:
    return {"cell_type": "code", "metadata": metadata, "source": source.splitlines(keepends=True),
            "outputs": [], "execution_count": None}


def _notebook(cells: list[dict], exercise: str | None = None) -> dict:
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    if exercise:
        meta["tensor_drills"] = {"exercise": exercise}
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": meta, "cells": cells}


def _write(path, nb: dict):
    path.write_text(json.dumps(nb))
    return path


def test_exported_notebook_is_graded_like_the_module(tmp_path):
    nb = _notebook([
        {"cell_type": "markdown", "metadata": {}, "source": "# question"},
        _code(REFERENCE, nbgrader={"solution": True, "grade": False, "grade_id": "answer",
                                   "locked": False}),
        _code("from grader.notebook_runtime import TestModule\npublic_tests = None",
              nbgrader={"grade": False, "locked": True, "grade_id": "public_tests"}),
    ], exercise=EX.id)
    path = _write(tmp_path / "answer.ipynb", nb)
    out = tmp_path / "report.json"
    assert main(["score", str(path), "--format", "json", "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["submission"] == str(path)
    [exercise] = report["exercises"]
    assert exercise["id"] == EX.id and exercise["status"] == "done"
    assert exercise["score"] == exercise["max_score"] > 0
    assert any("reference" in flag for flag in report["flags"])  # a copy of it, flagged for review


def test_scratch_notebook_keeps_the_definitions_up_to_the_last_api_definition():
    nb = _notebook([
        _code("import torch\n%matplotlib inline\n!pip install nothing"),
        {"cell_type": "markdown", "metadata": {}, "source": "my notes"},
        _code("SCALE = 2\n\n@torch.no_grad()\ndef helper(t):\n    return t\n\n"
              "def pairwise_sq_dists(a, b):\n    return torch.cdist(a, b) ** 2\n\n"
              "print(pairwise_sq_dists(torch.ones(1, 2), torch.ones(1, 2)))  # trying it out"),
        _code("from grader.notebook_runtime import TestModule\ntests = TestModule('x', 'y', '')"),
        _code("def batched_affine(x, weight, bias):\n    return x @ weight.T + bias"),
        _code("def later(): pass"),
        _code("this is not python"),
    ])
    text = extract_answer(nb, EX)
    assert "import torch" in text and "SCALE = 2" in text and "@torch.no_grad()\ndef helper" in text
    assert "def pairwise_sq_dists" in text and "def batched_affine" in text
    assert "matplotlib" not in text and "pip install" not in text  # magics: commented, then dropped
    assert "TestModule" not in text and "trying it out" not in text and "later" not in text
    compile(text, "answer.py", "exec")


def test_tagged_answer_cells_are_kept_whole_with_the_learners_helpers():
    nb = _notebook([
        _code("def pairwise_sq_dists(a, b):\n    return 'scratch'",
              nbgrader={"grade": False, "solution": False, "locked": True, "grade_id": "given"}),
        _code("def pairwise_sq_dists(a, b):\n    return helper()\n\nprint('kept')",
              tensor_drills={"role": "answer"}),
        _code("def helper():\n    return 'answer'\n\nhelper()  # a try-out"),
    ])
    text = extract_answer(nb, EX)
    assert "'scratch'" not in text and "print('kept')" in text
    assert "def helper" in text and "a try-out" not in text


@pytest.mark.parametrize("nb, ids, message", [
    (_notebook([_code("x = 1")]), None, "no exercise id"),
    (_notebook([_code("x = 1")], exercise=EX.id), None, "defines none of"),
    (_notebook([_code("x = 1")]), [EX.id, "pytorch.optim.grad_clipping"], "one --exercise"),
])
def test_notebooks_that_cannot_be_graded_say_why(tmp_path, nb, ids, message):
    with pytest.raises(SubmissionError, match=message):
        stage_notebook(_write(tmp_path / "nb.ipynb", nb), ids, tmp_path / "out")


def test_unknown_id_and_non_notebook_fail_with_status_2(tmp_path, capsys):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("not json")
    assert main(["score", str(bad), "-e", EX.id]) == 2
    assert "not a readable Jupyter notebook" in capsys.readouterr().err
    nb = _write(tmp_path / "nb.ipynb", _notebook([_code("x = 1")], exercise="pytorch.nope.nope"))
    assert main(["score", str(nb)]) == 2
    assert "unknown exercise id" in capsys.readouterr().err


def test_grading_as_another_exercise_than_the_notebook_names_warns(tmp_path):
    other = catalog.get_exercise("pytorch.tensors.from_data")
    path = _write(tmp_path / "answer.ipynb", _notebook(
        [_code(REFERENCE, tensor_drills={"role": "answer", "exercise": EX.id})], exercise=EX.id))
    warnings: list[str] = []
    assert stage_notebook(path, [other.id], tmp_path / "root", warnings.append) == other.id
    assert len(warnings) == 1 and EX.id in warnings[0] and other.id in warnings[0]
    warnings.clear()
    stage_notebook(path, [EX.id], tmp_path / "root2", warnings.append)
    stage_notebook(path, None, tmp_path / "root3", warnings.append)
    assert warnings == []  # the notebook's own exercise: nothing to say
