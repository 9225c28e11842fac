"""Grade a Jupyter notebook (``.ipynb``) like a module, without nbgrader.

``grader score answer.ipynb [--exercise ID]`` extracts the answer from the notebook into the
exercise's module in a temporary folder laid out like ``exercises/`` and grades that. The answer is:

- the cells marked as answers: nbgrader solution cells, or cells whose metadata carries
  ``tensor_drills.role == "answer"`` (both are set by ``grader nbgrader export``), kept whole,
  plus the top-level definitions of the code cells the learner added (cells without nbgrader
  metadata), which may hold helpers;
- otherwise (a notebook the learner wrote from scratch), the top-level definitions of every code
  cell up to the last one that defines a name of the exercise's API (a function or class the stub
  defines).

"Top-level definitions" are imports, functions, classes, assignments and ``if``/``try`` blocks:
try-out calls and prints are left out, as they would run (and could fail) when the module is
imported. Cells that run the kit's tests are left out. IPython magics and shell escapes (lines
starting with ``%`` or ``!``) become comments. The exercise id comes from ``--exercise`` or from
the notebook's metadata (``tensor_drills.exercise``).
Reads the ``.ipynb`` JSON directly: no Jupyter package is needed.
"""

from __future__ import annotations

import ast
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

from grader import catalog
from grader._source import parse
from grader.engine.sandbox import Limits
from grader.engine.scoring import Report, SubmissionError, candidate_name, score_submission

METADATA_KEY = "tensor_drills"


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def read_notebook(path: Path) -> dict:
    """The notebook's JSON. Raises SubmissionError when it is not a notebook."""
    try:
        nb = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SubmissionError(f"{path}: not a readable Jupyter notebook ({exc})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise SubmissionError(f"{path}: not a Jupyter notebook (no cells)")
    return nb


def notebook_exercise_id(nb: dict) -> str | None:
    """The exercise id the export wrote into the notebook's metadata, if any."""
    meta = nb.get("metadata", {}).get(METADATA_KEY, {})
    return meta.get("exercise") if isinstance(meta, dict) else None


def _is_answer_cell(cell: dict) -> bool:
    meta = cell.get("metadata", {})
    nbg = meta.get("nbgrader", {})
    ours = meta.get(METADATA_KEY, {})
    return (nbg.get("solution") is True and not nbg.get("grade")) or (
        isinstance(ours, dict) and ours.get("role") == "answer")


def _api_names(ex: catalog.Exercise) -> set[str]:
    tree = parse(ex.stub.read_text(encoding="utf-8"))
    return {node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _defines(code: str, names: set[str]) -> bool:
    try:
        tree = parse(code)
    except SyntaxError:
        return False
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               and node.name in names for node in tree.body)


def _plain_python(code: str) -> str:
    return "\n".join(f"# {line}" if line.lstrip().startswith(("%", "!")) else line
                     for line in code.splitlines())


_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                ast.Assign, ast.AnnAssign, ast.If, ast.Try)


def _definitions(code: str) -> str:
    """The top-level definitions of a cell (nothing when it does not parse)."""
    try:
        tree = parse(code)
    except SyntaxError:
        return ""
    lines = code.splitlines()
    kept = []
    for node in tree.body:
        if isinstance(node, _DEFINITIONS):
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            kept.append("\n".join(lines[first - 1: node.end_lineno]))
    return "\n".join(kept)


def extract_answer(nb: dict, ex: catalog.Exercise) -> str:
    """The module text of the learner's answer in ``nb`` (see the module docstring)."""
    cells = [c for c in nb["cells"] if c.get("cell_type") == "code"
             and "grader.notebook_runtime" not in _source(c)]
    if any(_is_answer_cell(c) for c in cells):
        parts = [_plain_python(_source(c)) if _is_answer_cell(c)
                 else _definitions(_plain_python(_source(c)))
                 for c in cells if _is_answer_cell(c) or "nbgrader" not in c.get("metadata", {})]
    else:
        names = _api_names(ex)
        parts = [_definitions(_plain_python(_source(c))) for c in cells]
        last = max((i for i, code in enumerate(parts) if _defines(code, names)), default=None)
        if last is None:
            raise SubmissionError(f"the notebook defines none of {ex.id}'s functions or classes "
                                  f"({', '.join(sorted(names))})")
        parts = parts[: last + 1]
    return "\n\n".join(part for part in parts if part.strip()) + "\n"


def stage_notebook(path: Path, exercise_ids: list[str] | None, root: Path,
                   warn: Callable[[str], None] = lambda message: None) -> str:
    """Write the answer in notebook ``path`` as its exercise's module under ``root``; return the id.

    ``warn`` is told when the id given differs from the one the notebook's metadata names.

    Raises:
        SubmissionError: not a notebook, several ids, no id, or no answer in it.
        catalog.CatalogError: the id is unknown.
    """
    nb = read_notebook(path)
    ids = list(dict.fromkeys(exercise_ids or []))
    if len(ids) > 1:
        raise SubmissionError("a notebook answers one exercise: give one --exercise")
    named = notebook_exercise_id(nb)
    exercise_id = ids[0] if ids else named
    if ids and named and named != ids[0]:
        warn(f"{path.name} was exported for {named}, but it is graded as {ids[0]} (--exercise); "
             "check that this is the exercise it answers")
    if not exercise_id:
        raise SubmissionError(f"{path}: no exercise id in its metadata; give --exercise ID")
    ex = catalog.get_exercise(exercise_id)
    target = root / ex.relpath
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(extract_answer(nb, ex), encoding="utf-8")
    return ex.id


def score_notebook(path: Path, exercise_ids: list[str] | None = None, *,
                   limits: Limits | None = None,
                   warn: Callable[[str], None] = lambda message: None) -> Report:
    """Grade the answer in notebook ``path`` like a submitted module (see the module docstring).

    A warning that the graded id is not the notebook's own also goes into the report's problems.
    """
    warnings: list[str] = []

    def note(message: str) -> None:
        warnings.append(message)
        warn(message)

    with tempfile.TemporaryDirectory(prefix="drills-notebook-") as tmp:
        exercise_id = stage_notebook(Path(path), exercise_ids, Path(tmp), note)
        report = score_submission(tmp, [exercise_id], limits=limits)
    report.submission = str(path)
    report.candidate = candidate_name(Path(path))
    report.problems[:0] = warnings
    return report
