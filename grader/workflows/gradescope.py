"""Gradescope autograder bundles: ``grader gradescope build OUT.zip``.

The zip follows Gradescope's autograder specification
(https://gradescope-autograders.readthedocs.io/en/latest/specs/):

- ``setup.sh`` (run once, as root, when Gradescope builds the image): creates a virtual environment
  in ``/autograder/venv``, installs a CPU build of torch from PyTorch's wheel index (Gradescope has no
  GPU; CUDA tests are left out of the maximum) and the kit from the bundled source;
- ``run_autograder`` (run for every submission, in ``/autograder``): runs
  ``python -m grader.cli.autograder run``, which calls ``run`` below: it lays the submission out
  like ``exercises/``, grades it as ``grader score --format gradescope`` does and writes
  ``/autograder/results/results.json`` once;
- ``kit/``: the kit's ``grader`` package, catalog and project files, and the chosen exercises'
  stubs, public tests and hidden tests (not the reference solutions). Students never see the
  autograder bundle.

A submission may be a folder laid out like ``exercises/`` (at the top or one folder down), module
files named like the exercises' modules (``broadcasting.py``) anywhere in it, or notebooks (one per
exercise, found by the exercise id in their metadata or their file name). ``AUTOGRADER_ROOT``
(default ``/autograder``) and ``DRILLS_PYTHON`` (default ``$AUTOGRADER_ROOT/venv/bin/python``) let
``run_autograder`` run outside Gradescope, e.g. to try a bundle locally.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from grader import __version__, catalog

CONFIG_NAME = "autograder.json"
DEFAULT_TORCH = "2.13.0"
_SKIP_PARTS = {"__pycache__", "__MACOSX", ".ipynb_checkpoints", ".git"}

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image. Choose an Ubuntu 24.04
# (or later) base image: the kit needs Python 3.11 or newer.
set -euxo pipefail
apt-get update
apt-get install -y --no-install-recommends python3 python3-venv python3-pip
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --upgrade pip
# A CPU build of torch (Gradescope has no GPU; CUDA-only tests are left out of the maximum).
/autograder/venv/bin/pip install torch=={torch} --index-url https://download.pytorch.org/whl/cpu
/autograder/venv/bin/pip install "/autograder/source/kit{extras}"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission. AUTOGRADER_ROOT (default /autograder) and DRILLS_PYTHON
# (default $AUTOGRADER_ROOT/venv/bin/python, made by setup.sh) let it run elsewhere for a try-out.
set -uo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${DRILLS_PYTHON:-$ROOT/venv/bin/python}"
export DRILLS_KIT_ROOT="$ROOT/source/kit"
export PYTHONPATH="$DRILLS_KIT_ROOT${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$ROOT/results"
cd "$ROOT"
exec "$PYTHON" -m grader.cli.autograder run --root "$ROOT"
"""


def _torch_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("torch").split("+")[0]
    except importlib.metadata.PackageNotFoundError:
        return DEFAULT_TORCH


def _kit_files(exercises: list[catalog.Exercise]) -> list[Path]:
    """The kit files the bundle carries, relative to the kit root."""
    root = catalog.KIT_ROOT
    files = [p.relative_to(root) for p in sorted((root / "grader").rglob("*"))
             if p.is_file() and not _SKIP_PARTS & set(p.parts) and p.suffix in (".py", ".typed")]
    files += [Path(name) for name in ("catalog.toml", "pyproject.toml", "conftest.py", "README.md")
              if (root / name).is_file()]
    for ex in exercises:
        files += [p.relative_to(root) for p in (ex.stub, ex.public_tests, ex.hidden_tests) if p.is_file()]
    return files


def _add(archive: zipfile.ZipFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def build(out: Path, exercise_ids: list[str] | None = None) -> list[str]:
    """Write the autograder zip to ``out``; return the exercise ids it grades.

    Raises:
        catalog.CatalogError: an exercise id is unknown.
    """
    exercises = catalog.select(exercise_ids)
    ids = [ex.id for ex in exercises]
    needed = catalog.required_extras(exercises)
    extras = f"[{','.join(needed)}]" if needed else ""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as archive:
        _add(archive, "setup.sh", SETUP_SH.format(torch=_torch_version(), extras=extras).encode(), 0o755)
        _add(archive, "run_autograder", RUN_AUTOGRADER.encode(), 0o755)
        _add(archive, CONFIG_NAME, json.dumps({"exercises": ids, "kit_version": __version__},
                                              indent=2).encode())
        for rel in _kit_files(exercises):
            _add(archive, f"kit/{rel.as_posix()}", (catalog.KIT_ROOT / rel).read_bytes())
    return ids


def _files(folder: Path, pattern: str) -> list[Path]:
    return sorted((p for p in folder.rglob(pattern) if p.is_file() and not p.is_symlink()
                   and not _SKIP_PARTS & set(p.relative_to(folder).parts)),
                  key=lambda p: (len(p.parts), str(p)))


def stage_submission(submission: Path, exercises: list[catalog.Exercise], out: Path) -> list[str]:
    """Lay the exercises' modules found in ``submission`` out under ``out`` like ``exercises/``;
    return one note per exercise saying which file is graded (or that none was found)."""
    from grader.workflows.notebooks import notebook_exercise_id, read_notebook, stage_notebook

    notes = []
    notebooks = {}
    for path in _files(submission, "*.ipynb"):
        try:
            notebooks[path] = notebook_exercise_id(read_notebook(path))
        except ValueError:
            continue
    python_files = _files(submission, "*.py")
    stems = [ex.stem for ex in exercises]
    for ex in exercises:
        laid_out = [p for p in python_files if p.parts[-len(ex.relpath.parts):] == ex.relpath.parts]
        by_name = [p for p in python_files if p.name == ex.relpath.name] if stems.count(ex.stem) == 1 else []
        by_notebook = [p for p, nb_id in notebooks.items() if nb_id == ex.id
                       or (nb_id is None and p.stem in (ex.id, ex.stem))]
        found = (laid_out or by_name)[:1]
        if found:
            (out / ex.relpath).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(found[0], out / ex.relpath)
            notes.append(f"{ex.id}: graded {found[0].relative_to(submission)}")
        elif by_notebook:
            stage_notebook(by_notebook[0], [ex.id], out)
            notes.append(f"{ex.id}: graded the answer cells of {by_notebook[0].relative_to(submission)}")
        else:
            notes.append(f"{ex.id}: no {ex.relpath.name} (or {ex.relpath}, or a notebook for it) "
                         "in the submission")
    return notes


def run(root: Path) -> int:
    """Grade ``root/submission`` and write ``root/results/results.json`` (Gradescope's layout)."""
    from grader.engine import scoring
    from grader.reports import formats

    started = time.monotonic()
    results = root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    try:
        config = json.loads((root / "source" / CONFIG_NAME).read_text(encoding="utf-8"))
        exercises = [catalog.get_exercise(i) for i in config["exercises"]]
        with tempfile.TemporaryDirectory(prefix="drills-gradescope-") as tmp:
            notes = stage_submission(root / "submission", exercises, Path(tmp))
            report = scoring.score_path(tmp, [ex.id for ex in exercises])
        data = formats.gradescope_results(report, notes)
        results.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        return 0
    except Exception as exc:  # noqa: BLE001 - Gradescope needs a results.json whatever happened
        results.write_text(json.dumps({
            "score": 0.0, "execution_time": round(time.monotonic() - started),
            "output": f"The autograder could not grade this submission ({type(exc).__name__}: "
                      f"{exc}). Please tell your instructor.",
            "stdout_visibility": "hidden", "tests": []}, indent=2) + "\n", encoding="utf-8")
        print(f"grader: autograder error: {exc!r}", file=sys.stderr)
        return 1

