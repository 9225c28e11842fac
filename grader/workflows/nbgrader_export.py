"""``grader nbgrader export``: write nbgrader *source* notebooks for a course, one per exercise.

Each notebook ``COURSE_DIR/source/ASSIGNMENT/<exercise id>.ipynb`` holds:

- the question (the stub's docstring) as a read-only markdown cell;
- the answer cell (an nbgrader solution cell): the untouched stub's code (signatures whose bodies
  raise ``NotImplementedError``; from ``grader.workflows.stubs.untouched_stub``, never a work in progress in
  the kit's ``exercises/``) followed by the whole reference module between ``### BEGIN SOLUTION`` and
  ``### END SOLUTION``. The reference redefines every function, so the instructor's notebook passes
  its tests; ``nbgrader generate_assignment`` drops the region (``ClearSolutions.code_stub`` is set
  to a comment in the ``nbgrader_config.py`` written here), which leaves the learner the stub;
- a read-only cell that loads the public tests (``grader.notebook_runtime.TestModule``) and one
  nbgrader grade cell per public test case, worth the test's ``@pytest.mark.points``;
- for the hidden tests, cells between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``
  (nbgrader removes them from the release and puts them back when it autogrades) that hold no
  test source: they load the hidden tests from the kit on the grading machine
  (``TestModule.from_kit``) and run each case by name, printing only its outcome and message.
  ``nbgrader generate_feedback`` shows a cell's source to the student, so a hidden test's source
  must never be in one.

Beside the notebooks, ``source/ASSIGNMENT/grader/`` holds a copy of the ``grader`` package (its
test runtime and check libraries, no solutions), so that the released notebook's public test cells
run for a student who has only torch, pytest and hypothesis installed; nbgrader copies it into the
release, and ``autograde`` overwrites a student's copy with it. The ``nbgrader_config.py`` written
here names the kit (``DRILLS_KIT_ROOT``) for the hidden tests, and keeps ``.hypothesis`` caches out
of what nbgrader copies.

A parametrized test gives one grade cell per case, as it gives one pytest item per case, so the
notebook's total equals what ``grader score`` gives the same code. Cases marked ``cuda`` are left
out (nbgrader's maximum cannot depend on the grading machine), as ``grader score`` leaves them out
of the maximum on a machine without CUDA.

"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader import PACKAGE_DIR, __version__, catalog
from grader._source import parse
from grader.errors import ExportError
from grader.notebook_runtime import SUPPORTED_FIXTURES
from grader.outcomes import Visibility, cell_kind
from grader.workflows.stubs import StubError, untouched_stub

GRADER_PACKAGE = PACKAGE_DIR

KERNEL_NAME = "python3"
NOTEBOOK_METADATA_KEY = "tensor_drills"
ANSWER_STUB = "# YOUR CODE HERE: fill in the functions above (replace each raise NotImplementedError)"
NBGRADER_CONFIG = '''"""nbgrader settings for notebooks exported by `grader nbgrader export` (tensor-drills)."""

import os

c = get_config()  # noqa: F821 - defined by nbgrader when it loads this file

# Where the kernels that autograde find the hidden tests (the tensor-drills kit); the notebooks
# hold none. Change it if the kit moves.
os.environ.setdefault("DRILLS_KIT_ROOT", {kit!r})
# Hypothesis' cache folder holds paths of the machine that ran the tests: never copy it around.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".hypothesis"]

# The answer cell keeps the exercise's stub (signatures raising NotImplementedError) outside the
# solution region, so the cleared region only needs a comment.
c.ClearSolutions.code_stub = {{"python": {stub!r}}}
# Hypothesis-based tests may take some seconds each; the kit limits each test to 60 s itself.
c.Execute.timeout = 300
'''


@dataclass(frozen=True)
class TestCase:
    """One pytest item of an exercise's test file."""

    __test__ = False  # not a pytest test class
    kind: str  # the kind of its test file, ``outcomes.cell_kind``: public | hidden
    function: str
    name: str  # pytest's item name, e.g. test_x[cpu]
    points: float
    indices: dict[str, int]  # per parametrize mark (its first argument name): the case's index


def _strip_module(source: str) -> tuple[str, bool]:
    """The module without its docstring and ``from __future__`` imports; whether it had any."""
    tree = parse(source)
    drop: set[int] = set()
    future = False
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        drop.update(range(body[0].lineno, body[0].end_lineno + 1))
    for node in body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            future = True
            drop.update(range(node.lineno, node.end_lineno + 1))
    lines = [line for number, line in enumerate(source.splitlines(), 1) if number not in drop]
    return "\n".join(lines).strip("\n"), future


def _stub(ex: catalog.Exercise) -> str:
    try:
        return untouched_stub(ex)
    except StubError as exc:
        raise ExportError(f"{ex.id}: no untouched stub to export: {exc}") from None


def answer_source(ex: catalog.Exercise) -> str:
    """The answer cell of the source notebook: the untouched stub, then the reference as the solution."""
    stub, stub_future = _strip_module(_stub(ex))
    reference, ref_future = _strip_module(ex.reference.read_text(encoding="utf-8"))
    head = "from __future__ import annotations\n\n" if stub_future or ref_future else ""
    return (f"{head}{stub}\n\n### BEGIN SOLUTION\n# Reference solution: it replaces the functions "
            f"above.\n{reference}\n### END SOLUTION")


def question_markdown(ex: catalog.Exercise) -> str:
    doc = ast.get_docstring(parse(_stub(ex))) or ex.title
    title, _, rest = doc.partition("\n")
    return (f"# {title.strip()}\n\n*Exercise `{ex.id}` ({ex.difficulty}, about {ex.minutes} min) "
            f"of the tensor-drills kit.*\n\n{rest.strip()}\n")


def _py_string(text: str) -> str:
    """``text`` as a readable Python literal (a raw triple-quoted string where that is exact)."""
    if "'''" not in text and not text.endswith(("\\", "'")) and "\r" not in text:
        return "r'''" + text + "'''"
    return repr(text)


def collect_cases(exercises: list[catalog.Exercise]) -> dict[str, list[TestCase]]:
    """The exercises' public and hidden test cases, as pytest collects them (in one child process:
    collecting imports torch, which the ``grader`` command keeps out of its own process)."""
    files = [p for ex in exercises for p in (ex.public_tests, ex.hidden_tests) if p.is_file()]
    with tempfile.TemporaryDirectory(prefix="drills-collect-") as tmp:
        out = Path(tmp) / "items.json"
        proc = subprocess.run(
            [sys.executable, "-m", "grader.workflows.nbgrader_collect", str(out), str(catalog.KIT_ROOT),
             str(catalog.KIT_ROOT / "pyproject.toml"), *map(str, files)],
            check=False, cwd=catalog.KIT_ROOT, capture_output=True, text=True, timeout=300)
        if not out.is_file() or json.loads(out.read_text())["code"] != 0:
            raise ExportError(f"collecting the tests failed:\n{proc.stdout[-3000:]}"
                              f"{proc.stderr[-3000:]}")
        items = json.loads(out.read_text())["items"]
    cases: dict[str, list[TestCase]] = {ex.id: [] for ex in exercises}
    for item in items:
        ex = catalog.exercise_for_test_file(Path(item["file"]))
        if item["cuda"] or ex is None or ex.id not in cases:
            continue
        # ``request``: what ``impl`` uses. Fixtures the
        # test module defines itself run in the notebook too (see grader.notebook_runtime).
        unsupported = sorted(set(item["fixtures"]) - set(item["params"])
                             - {"request"}
                             - set(SUPPORTED_FIXTURES) - set(item["module_fixtures"]))
        if item["unmatched"]:
            raise ExportError(f"{ex.id}: {item['name']}: cannot tell which case of the parameter(s) "
                              f"{', '.join(item['unmatched'])} it runs")
        if unsupported:
            raise ExportError(f"{ex.id}: {item['name']} needs fixture(s) {', '.join(unsupported)}, "
                              "which notebooks do not provide")
        visibility = Visibility.HIDDEN if Path(item["file"]).resolve() == ex.hidden_tests else Visibility.VISIBLE
        kind = cell_kind(visibility)
        cases[ex.id].append(TestCase(kind, item["function"], item["name"], item["points"],
                                     item["indices"]))
    return cases


def _grade_id(case: TestCase) -> str:
    suffix = "".join(f"_{k}{v}" for k, v in sorted(case.indices.items()))
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"{case.kind}_{case.function}{suffix}")


def _nbgrader(grade_id: str, *, grade: bool = False, solution: bool = False, locked: bool = True,
              points: float | None = None) -> dict:
    meta = {"grade": grade, "solution": solution, "locked": locked, "grade_id": grade_id,
            "schema_version": 3}
    if grade:
        meta["points"] = points or 0
    return {"nbgrader": meta}


def _points(points: float) -> str:
    return f"{points:g} point" + ("" if points == 1 else "s")


def build_notebook(ex: catalog.Exercise, cases: list[TestCase]):
    """The nbgrader source notebook of ``ex`` (an ``nbformat`` notebook node)."""
    from nbformat import v4

    cells = [
        v4.new_markdown_cell(question_markdown(ex), metadata=_nbgrader("question")),
        v4.new_markdown_cell(
            "## Your answer\n\nWrite your solution in the next cell: replace every "
            "`raise NotImplementedError` with your code (add imports and helpers as you need). "
            "Then run all cells: each test cell below shows its points in its first line; a test "
            "cell that raises an error scores 0. Hidden tests run when your notebook is graded.",
            metadata=_nbgrader("instructions")),
        v4.new_code_cell(answer_source(ex), metadata={
            **_nbgrader("answer", solution=True, locked=False),
            NOTEBOOK_METADATA_KEY: {"role": "answer", "exercise": ex.id}}),
    ]
    for kind, path in (("public", ex.public_tests), ("hidden", ex.hidden_tests)):
        kind_cases = [c for c in cases if c.kind == kind]
        if not kind_cases:
            continue
        if kind == "public":
            cells.append(v4.new_code_cell(
                f"# The public tests of {ex.id}: run this cell first.\n"
                f"from grader.notebook_runtime import TestModule\n\n"
                f"public_tests = TestModule({ex.id!r}, 'public', {_py_string(path.read_text(encoding='utf-8'))})",
                metadata=_nbgrader("public_tests")))
        else:
            # Only a reference to the kit's hidden tests: feedback shows this cell's source.
            cells.append(v4.new_code_cell(
                f"# The hidden tests of {ex.id}: added back when your notebook is graded.\n"
                f"### BEGIN HIDDEN TESTS\nfrom grader.notebook_runtime import TestModule\n\n"
                f"hidden_tests = TestModule.from_kit({ex.id!r}, 'hidden')\n### END HIDDEN TESTS",
                metadata=_nbgrader("hidden_tests", grade=True, points=0)))
        for case in kind_cases:
            params = f", params={case.indices!r}" if case.indices else ""
            call = f"{kind}_tests.run({case.function!r}, globals(){params})"
            header = f"# {kind} test {case.name} ({_points(case.points)})"
            source = (f"{header}\n{call}" if kind == "public"
                      else f"{header}\n### BEGIN HIDDEN TESTS\n{call}\n### END HIDDEN TESTS")
            cells.append(v4.new_code_cell(source, metadata=_nbgrader(
                _grade_id(case), grade=True, points=case.points)))
    return v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": KERNEL_NAME, "display_name": "Python 3 (ipykernel)",
                       "language": "python"},
        "language_info": {"name": "python"},
        NOTEBOOK_METADATA_KEY: {"exercise": ex.id, "kit_version": __version__}})


def export(course_dir: Path, assignment: str, exercise_ids: list[str] | None = None) -> list[Path]:
    """Write the assignment's source notebooks (and ``nbgrader_config.py`` when the course has
    none); return the notebooks written.

    Raises:
        catalog.CatalogError: an exercise id is unknown.
        ExportError: an exercise's tests cannot run in a notebook.
    """
    import nbformat

    if not re.fullmatch(r"[A-Za-z0-9_.-]+", assignment):
        raise ExportError(f"assignment name {assignment!r}: use letters, digits, '_', '-', '.'")
    target = Path(course_dir) / "source" / assignment
    target.mkdir(parents=True, exist_ok=True)
    exercises = catalog.select(exercise_ids)
    for ex in exercises:
        for path in (ex.stub, ex.reference):
            if not path.is_file():
                raise ExportError(f"{ex.id}: {path.relative_to(catalog.KIT_ROOT)} is missing")
    cases = collect_cases(exercises)
    runtime = target / "grader"
    if runtime.exists():
        shutil.rmtree(runtime)
    shutil.copytree(GRADER_PACKAGE, runtime, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "_stubs"))
    written = []
    for ex in exercises:
        notebook = build_notebook(ex, cases[ex.id])
        nbformat.validate(notebook)
        path = target / f"{ex.id}.ipynb"
        nbformat.write(notebook, path)
        written.append(path)
    config = Path(course_dir) / "nbgrader_config.py"
    settings = NBGRADER_CONFIG.format(kit=str(catalog.KIT_ROOT), stub=ANSWER_STUB)
    if not config.exists():
        config.write_text(settings, encoding="utf-8")
    elif "DRILLS_KIT_ROOT" not in config.read_text(encoding="utf-8"):
        print(f"grader: note: {config} exists; add these settings to it for tensor-drills "
              f"notebooks:\n{settings}", file=sys.stderr)
    return written
