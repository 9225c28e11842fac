"""grader nbgrader export, end to end: real nbgrader (generate_assignment, autograde) and a real
kernel, with the gradebook's scores compared with what ``grader score`` gives the same code."""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader import catalog
from grader.cli import main
from grader.engine.scoring import score_submission
from tests.helpers import make_submission

# nbformat is imported where a test reads a notebook, not at collection: its import (jsonschema's
# format grammars) cost each xdist worker more than a second, and one of them runs this file.
pytestmark = pytest.mark.skipif(not all(importlib.util.find_spec(name) for name in ("nbformat", "nbgrader")),
                                reason="needs nbformat and nbgrader (the notebooks extra)")

EX = catalog.get_exercise("pytorch.tensors.broadcasting")
NOTEBOOK = f"{EX.id}.ipynb"
ASSIGNMENT = "week1"
# A correct answer that warns and writes to stderr (Python-level and file-descriptor-level) while
# the tests run: nbgrader zeroes a test cell with stderr output, the kit's runner must not let that
# happen to a correct answer.
NOISY_REFERENCE = EX.reference.read_text().replace(
    "    return x @ weight.T + bias",
    "    import os, sys, warnings\n"
    "    import torch\n"
    "    torch.tensor(torch.ones(1))  # torch warns: copy-constructing from a tensor\n"
    "    warnings.warn('a harmless warning from the answer')\n"
    "    print('a line on stderr', file=sys.stderr)\n"
    "    os.write(2, b'a line on file descriptor 2\\n')\n"
    "    return x @ weight.T + bias")
WRONG = EX.wrong_solution("sqrt_then_square").source()
STUDENTS = {"alice": NOISY_REFERENCE, "bob": WRONG}
# Real nbgrader runs real kernels: four nbgrader commands in one module fixture.
pytestmark = pytest.mark.timeout(1800)


def _nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    bin_dir = str(Path(sys.executable).parent)
    # The venv first on PATH (nbgrader runs alembic from it; the python3 kernel is this python),
    # and empty Jupyter folders so that no kernel spec or config of the user's home interferes.
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
               JUPYTER_DATA_DIR=str(course / ".jupyter-data"),
               JUPYTER_CONFIG_DIR=str(course / ".jupyter-config"),
               IPYTHONDIR=str(course / ".ipython"), PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env, check=False,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _read(path: Path):
    import nbformat

    return nbformat.read(path, as_version=4)


def _cell(nb, grade_id: str):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    import nbformat

    course = tmp_path_factory.mktemp("course")
    assert main(["nbgrader", "export", str(course), "--assignment", ASSIGNMENT, "-e", EX.id]) == 0
    _nbgrader(course, "generate_assignment", ASSIGNMENT)
    released = _read(course / "release" / ASSIGNMENT / NOTEBOOK)
    for student, code in STUDENTS.items():
        _cell(released, "answer").source = code
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(released, folder / NOTEBOOK)
    _nbgrader(course, "autograde", ASSIGNMENT)
    _nbgrader(course, "generate_feedback", ASSIGNMENT)
    return course


def _gradebook(course: Path) -> dict[str, tuple[float, float, set[str]]]:
    """Per student: score, maximum, and the test cells that lost points (by grade id)."""
    from nbgrader.api import Gradebook

    found = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student in STUDENTS:
            submission = gradebook.find_submission(ASSIGNMENT, student)
            lost = {grade.name for nb in submission.notebooks for grade in nb.grades
                    if grade.auto_score < grade.max_score}
            found[student] = (submission.score, submission.max_score, lost)
    return found


def test_release_gives_the_stub_and_hides_solution_and_hidden_tests(course):
    text = (course / "release" / ASSIGNMENT / NOTEBOOK).read_text()
    released = _read(course / "release" / ASSIGNMENT / NOTEBOOK)
    answer = _cell(released, "answer").source
    assert "def pairwise_sq_dists(a: Tensor, b: Tensor) -> Tensor:" in answer
    assert answer.count("\n    raise NotImplementedError\n") == 2  # both stub bodies
    assert "BEGIN SOLUTION" not in text and "clamp_min" not in text
    assert "brute_force_sq_dists" not in text  # hidden test code
    assert "test_pairwise_small_example(impl)" in text  # public test code stays
    assert released.metadata["tensor_drills"]["exercise"] == EX.id


def test_gradebook_scores_equal_grader_score(course, tmp_path):
    gradebook = _gradebook(course)
    for student, code in STUDENTS.items():
        report = score_submission(make_submission(tmp_path / student, {EX: code}), [EX.id])
        score, max_score, lost = gradebook[student]
        assert (score, max_score) == (report.score, report.max_score), student
        failed = {f"{t.visibility.replace('visible', 'public')}_{t.name.rsplit('::', 1)[-1]}"
                  for t in report.exercises[0].tests if t.status not in ("passed", "not_run")}
        assert lost == failed, student  # the same tests fail (none of them parametrized here)
    assert gradebook["alice"][0] == gradebook["alice"][1]  # warnings cost a correct answer nothing
    assert gradebook["bob"][2] == {"hidden_test_pairwise_gradient_finite_where_rows_coincide"}


def test_stderr_during_a_test_is_echoed_on_stdout(course):
    graded = _read(course / "autograded" / "alice" / ASSIGNMENT / NOTEBOOK)
    outputs = _cell(graded, "public_test_batched_affine_matches_linear").outputs
    assert [o.get("name") for o in outputs] == ["stdout"]
    text = "".join(o.text for o in outputs)
    assert "a harmless warning from the answer" in text and "file descriptor 2" in text
    assert "copy construct from a tensor" in text  # torch's own warning


def test_hidden_failure_shows_the_message_not_the_test_source(course):
    graded = _read(course / "autograded" / "bob" / ASSIGNMENT / NOTEBOOK)
    error = next(o for o in _cell(graded, "hidden_test_pairwise_gradient_finite_where_rows_coincide")
                 .outputs if o.output_type == "error")
    assert "gradient is not finite where two rows are equal" in error.evalue
    assert "a.grad" not in json.dumps(error.traceback)


def _visible_text(html_text: str) -> str:
    """What a reader of an HTML page sees: tags (syntax highlighting splits code) and entities gone."""
    return html.unescape(re.sub(r"<[^>]+>", "", html_text))


def _source_lines(path: Path) -> list[str]:
    """The lines of a test file that are its own code (not blank, not a lone bracket or keyword)."""
    return [line.strip() for line in path.read_text().splitlines() if len(line.strip()) >= 12]


def test_feedback_shows_hidden_outcomes_never_hidden_test_source(course):
    # The hidden file's own lines: not those it shares with what the student may see anyway.
    shared = {line for text in (EX.public_tests.read_text(), EX.stub.read_text(), *STUDENTS.values())
              for line in (raw.strip() for raw in text.splitlines())}
    hidden_lines = [line for line in _source_lines(EX.hidden_tests) if line not in shared]
    assert len(hidden_lines) > 20
    for student in STUDENTS:
        page = course / "feedback" / student / ASSIGNMENT / f"{EX.id}.html"
        text = _visible_text(page.read_text())
        leaked = [line for line in hidden_lines if line in text]
        assert not leaked, (student, leaked[:5])
        # The graded notebook the page shows: between nbgrader's markers, references by name only.
        graded = _read(course / "autograded" / student / ASSIGNMENT / NOTEBOOK)
        regions = [re.search(r"### BEGIN HIDDEN TESTS\n(.*?)\n### END HIDDEN TESTS", c.source, re.DOTALL)
                   for c in graded.cells if "BEGIN HIDDEN TESTS" in c.source]
        assert len(regions) == 1 + len(_hidden_cases()) and all(regions)
        allowed = re.compile(r"from grader\.notebook_runtime import TestModule|"
                             r"hidden_tests = TestModule\.from_kit\('[\w.]+', 'hidden'\)|"
                             r"hidden_tests\.run\('\w+', globals\(\)(, params=\{[^}]*\})?\)")
        code = [line for region in regions for line in region.group(1).splitlines() if line.strip()]
        assert all(allowed.fullmatch(line) for line in code), code
        # The outcome of each hidden test is there: its name, and for bob the failure message.
        assert "test_pairwise_gradient_finite_where_rows_coincide" in text
    bob = _visible_text((course / "feedback" / "bob" / ASSIGNMENT / f"{EX.id}.html").read_text())
    assert "gradient is not finite where two rows are equal" in bob
    # The check has teeth: the public tests' own code is shown, and found the same way.
    assert any(line in bob for line in _source_lines(EX.public_tests))


def _hidden_cases():
    from grader.workflows.nbgrader_export import collect_cases

    return [c for c in collect_cases([EX])[EX.id] if c.kind == "hidden"]


def test_no_hypothesis_cache_reaches_students(course):
    for folder in ("release", "submitted", "autograded", "feedback"):
        assert not [p for p in (course / folder).rglob(".hypothesis")], folder


def test_student_runs_the_released_public_checks_with_the_shipped_runtime(course, tmp_path):
    """A student opens the released notebook in the released folder (its grader/ copy beside it)
    and runs every cell: the public checks run, with the shipped copy of the runtime."""
    import nbformat

    nbclient = pytest.importorskip("nbclient")
    folder = tmp_path / "student"
    shutil.copytree(course / "release" / ASSIGNMENT, folder)
    assert (folder / "grader" / "notebook_runtime.py").is_file()
    assert not list(folder.rglob("*_hidden.py")) and not (folder / "grader" / "_stubs").exists()
    nb = _read(folder / NOTEBOOK)
    _cell(nb, "answer").source = EX.reference.read_text()
    nb.cells.append(nbformat.v4.new_code_cell("import grader\nprint('runtime from', grader.__file__)"))
    env = {k: v for k, v in os.environ.items() if k != "DRILLS_KIT_ROOT"}
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(folder)}})
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env, JUPYTER_DATA_DIR=str(tmp_path / "jd"), JUPYTER_CONFIG_DIR=str(tmp_path / "jc"))
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    outputs = {c.metadata.get("nbgrader", {}).get("grade_id"): "".join(o.get("text", "") for o in c.outputs)
               for c in nb.cells if c.cell_type == "code"}
    public = [k for k in outputs if k and k.startswith("public_test_")]
    assert public and all(outputs[k].startswith("passed: ") for k in public), outputs
    assert f"runtime from {folder / 'grader'}" in outputs[None]


def test_export_takes_the_untouched_stub_not_the_working_tree(tmp_path, monkeypatch):
    """An instructor's half-done code in exercises/ never goes into the notebook."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    from grader.workflows.nbgrader_export import answer_source, question_markdown

    repo = tmp_path / "kit"
    for path in (EX.stub, EX.reference):
        target = repo / path.relative_to(catalog.KIT_ROOT)
        target.parent.mkdir(parents=True)
        shutil.copyfile(path, target)

    def git(*args):
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com",
                        *args], check=True, capture_output=True)

    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "stub")
    half_done = EX.stub.read_text().replace('"""Broadcasting', '"""INSTRUCTOR DRAFT Broadcasting', 1)
    half_done = half_done.replace("    raise NotImplementedError", "    secret_draft = 1  # WIP\n"
                                  "    raise NotImplementedError")
    (repo / "exercises" / EX.relpath).write_text(half_done)
    monkeypatch.setattr(catalog, "KIT_ROOT", repo)
    text = answer_source(EX) + question_markdown(EX)
    assert "secret_draft" not in text and "INSTRUCTOR DRAFT" not in text
    assert "raise NotImplementedError" in text


# Building blocks of the export, without nbgrader.

def test_answer_cell_is_the_stub_then_the_reference_as_solution():
    from grader.workflows.nbgrader_export import answer_source

    ex = catalog.get_exercise("pytorch.autograd.custom_function")  # its reference has __future__
    text = answer_source(ex)
    assert text.startswith("from __future__ import annotations\n")
    assert text.count("from __future__") == 1  # only at the top, where Python accepts it
    stub_part, _, solution = text.partition("### BEGIN SOLUTION\n")
    assert "raise NotImplementedError" in stub_part and solution.endswith("### END SOLUTION")
    assert '"""Reference solution' not in text  # module docstrings go to the question cell
    compile(text, "answer", "exec")


@pytest.mark.parametrize("text", ["plain", "has ''' quotes", "ends with \\", "a \\n b", "cr\r\n",
                                  "ends with '", "ends with ''", "a \\' b"])
def test_test_sources_are_embedded_exactly(text):
    import ast

    from grader.workflows.nbgrader_export import _py_string

    assert ast.literal_eval(_py_string(text)) == text


def test_notebook_cells_carry_the_kit_points():
    import nbformat

    from grader.workflows.nbgrader_export import TestCase, build_notebook

    cases = [TestCase("public", "test_a", "test_a", 1.0, {}),
             TestCase("hidden", "test_b", "test_b[cpu]", 2.0, {"device": 0}),
             TestCase("hidden", "test_b", "test_b[meta]", 2.0, {"device": 1})]
    nb = build_notebook(EX, cases)
    nbformat.validate(nb)
    grades = {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
              if c.metadata["nbgrader"].get("grade")}
    assert {k: c.metadata["nbgrader"]["points"] for k, c in grades.items()} == {
        "public_test_a": 1.0, "hidden_tests": 0, "hidden_test_b_device0": 2.0,
        "hidden_test_b_device1": 2.0}
    assert "hidden_tests.run('test_b', globals(), params={'device': 1})" in grades[
        "hidden_test_b_device1"].source
    for grade_id in ("hidden_tests", "hidden_test_b_device0"):
        assert "### BEGIN HIDDEN TESTS" in grades[grade_id].source
    assert "BEGIN HIDDEN" not in grades["public_test_a"].source


def test_collected_cases_match_pytest_items_and_leave_out_cuda():
    from grader.workflows.nbgrader_export import collect_cases

    ex = catalog.get_exercise("pytorch.autograd.grad_basics")  # stacked parametrize marks
    cases = collect_cases([ex])[ex.id]
    stacked = {(c.indices["case"], c.indices["create_graph"]): c.name for c in cases
               if c.function == "test_gradient_leaves_x_untouched"}
    assert set(stacked) == {(i, j) for i in range(4) for j in range(2)}
    assert stacked[(3, 1)] == "test_gradient_leaves_x_untouched[non-leaf-True]"
    assert not any("cuda" in c.name for c in cases)
    assert {c.kind for c in cases} == {"public", "hidden"}
