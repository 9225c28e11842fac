"""Each report format, read back by an independent reader: Gradescope's results.json against a
JSON schema written from its autograder specification, JUnit XML through junitparser (the reader
CI plugins use), Markdown through markdown-it, and the kit's own JSON shape."""

from __future__ import annotations

import json

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped
from markdown_it import MarkdownIt

from grader.engine.scoring import ExerciseResult, Report, TestResult
from grader.reports import formats

# Gradescope autograder specification, "Output format": every field is optional but for a score
# (top level or per test); status is passed/failed; visibility one of four values.
VISIBILITY = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}
GRADESCOPE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["score", "tests"],
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number", "minimum": 0},
        "output": {"type": "string"},
        "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
        "visibility": VISIBILITY,
        "stdout_visibility": VISIBILITY,
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": {
            "type": "object",
            "additionalProperties": False,
            "required": ["name", "score", "max_score", "status", "output", "visibility"],
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "number": {"type": "string"},
                "score": {"type": "number", "minimum": 0},
                "max_score": {"type": "number", "minimum": 0},
                "status": {"enum": ["passed", "failed"]},
                "output": {"type": "string"},
                "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "visibility": VISIBILITY,
                "extra_data": {"type": "object"},
            },
        }},
    },
}


def _report() -> Report:
    """A report with every kind of test outcome, and text that needs escaping."""
    done = ExerciseResult("pytorch.tensors.broadcasting", 3.0, 3.0, [
        TestResult("test_broadcasting.py::test_small", "passed", 1.0, 1.0, "visible"),
        TestResult("test_broadcasting_hidden.py::test_grad", "passed", 2.0, 2.0, "hidden"),
        TestResult("test_broadcasting_hidden.py::test_cuda", "not_run", 0.0, 0.0, "hidden",
                   "needs CUDA, which this machine does not have"),
    ])
    failing = ExerciseResult("pytorch.nn.mlp", 1.0, 5.0, [
        TestResult("test_mlp.py::test_shape", "passed", 1.0, 1.0, "visible"),
        TestResult("test_mlp_hidden.py::test_values", "failed", 0.0, 2.0, "hidden",
                   "MLP(4, [8], 3)(x): max abs error 0.5 at [0, 1] | <tag> & \"quotes\"\nline 2"),
        TestResult("test_mlp_hidden.py::test_crash", "error", 0.0, 1.0, "hidden", "ImportError: x"),
        TestResult("test_mlp_hidden.py::test_never_ran", "missing", 0.0, 1.0, "hidden",
                   "the test run ended early"),
    ])
    return Report("submission", 4.0, 8.0, [done, failing], 12.5, problems=["a problem | pipe"],
                  flags=["os._exit at mlp.py:3"])


def test_gradescope_matches_the_specification():
    import jsonschema  # here, not at collection: 1 s of imports in every worker that collects this file

    data = json.loads(formats.render(_report(), "gradescope"))
    jsonschema.validate(data, GRADESCOPE_SCHEMA)
    assert data["score"] == sum(t["score"] for t in data["tests"]) == 4.0
    assert sum(t["max_score"] for t in data["tests"]) == 8.0  # CUDA test left out
    assert not any("test_cuda" in t["name"] for t in data["tests"])
    assert "os._exit" not in data["output"]  # review flags are for staff, not the student
    assert data["extra_data"]["flags"] == ["os._exit at mlp.py:3"]
    # ... in a test that Gradescope shows instructors only (visibility "hidden"), worth nothing.
    [review] = [t for t in data["tests"] if "os._exit" in t["output"]]
    assert review["name"] == formats.REVIEW_FLAGS_TEST and review["visibility"] == "hidden"
    assert review["score"] == review["max_score"] == 0
    statuses = {t["name"].rsplit("::", 1)[-1]: t["status"] for t in data["tests"] if t is not review}
    assert statuses == {"test_small": "passed", "test_grad": "passed", "test_shape": "passed",
                        "test_values": "failed", "test_crash": "failed", "test_never_ran": "failed"}


def test_no_review_entry_without_flags():
    report = _report()
    report.flags = []
    data = json.loads(formats.render(report, "gradescope"))
    assert not any(t["name"] == formats.REVIEW_FLAGS_TEST for t in data["tests"])


def test_public_only_runs_say_so():
    report = _report()
    assert formats.PUBLIC_ONLY_NOTE not in formats.render(report, "markdown")
    for ex in report.exercises:
        ex.tests = [t for t in ex.tests if t.visibility == "visible"]
    for fmt in ("markdown", "table"):
        assert formats.PUBLIC_ONLY_NOTE in formats.render(report, fmt)


def test_junit_is_read_back_by_junitparser(tmp_path):
    path = tmp_path / "report.xml"
    path.write_text(formats.render(_report(), "junit"), encoding="utf-8")
    xml = JUnitXml.fromfile(str(path))
    suites = {suite.name: suite for suite in xml}
    assert set(suites) == {"pytorch.tensors.broadcasting", "pytorch.nn.mlp"}
    mlp = suites["pytorch.nn.mlp"]
    assert (mlp.tests, mlp.failures, mlp.errors, mlp.skipped) == (4, 1, 2, 0)
    outcomes = {case.name: [type(r).__name__ for r in case.result] for case in mlp}
    assert outcomes == {"test_mlp.py::test_shape": [], "test_mlp_hidden.py::test_values": ["Failure"],
                        "test_mlp_hidden.py::test_crash": ["Error"],
                        "test_mlp_hidden.py::test_never_ran": ["Error"]}
    failure = next(r for case in mlp for r in case.result if isinstance(r, Failure))
    assert "<tag> & \"quotes\"" in failure.text  # escaped in XML, intact when read back
    broadcasting = suites["pytorch.tensors.broadcasting"]
    skipped = [case.name for case in broadcasting if any(isinstance(r, Skipped) for r in case.result)]
    assert skipped == ["test_broadcasting_hidden.py::test_cuda"]
    assert not any(isinstance(r, Error) for case in broadcasting for r in case.result)


def test_markdown_renders_one_table_row_per_exercise():
    text = formats.render(_report(), "markdown")
    tokens = MarkdownIt().enable("table").parse(text)
    assert [t.type for t in tokens].count("table_open") == 1
    rows = [t for t in tokens if t.type == "tr_open"]
    assert len(rows) == 1 + 2  # header + one per exercise
    cells = [t.content for t in tokens if t.type == "inline"]
    assert "4/8 (50.0%)" in text.splitlines()[0]
    assert any("max abs error 0.5" in c for c in cells)
    html = MarkdownIt().enable("table").render(text)
    assert html.count("<tr>") == 3
    assert html.count("<td") == 2 * 4  # the pipe in the failure message did not split a cell
    assert "problem: a problem | pipe" in html


def test_json_keeps_its_stable_shape():
    data = json.loads(formats.render(_report(), "json"))
    assert {"score", "max_score", "exercises"} <= set(data)
    for ex in data["exercises"]:
        assert {"id", "score", "max_score", "status", "tests"} <= set(ex)
        for t in ex["tests"]:
            assert {"name", "status", "score", "max_score", "message"} <= set(t)
    assert [ex["status"] for ex in data["exercises"]] == ["done", "failing"]


def test_table_states_the_total_and_the_tests_not_run():
    text = formats.render(_report(), "table")
    assert "4/8" in text and "(50.0%)" in text
    assert "1 CUDA test(s) not run on this machine" in text
    assert "first failure: test_mlp_hidden.py::test_values" in text


def test_unknown_format_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown format 'yaml'"):
        formats.render(_report(), "yaml")
