"""``grader release``: a candidate bundle for a hiring take-home.

The bundle is a small project of its own: the chosen stubs and their public tests laid out like
exercises/, the grader package (its pytest plugin and check library; untouched stubs are also
shipped as ``grader/_stubs`` for ``grader reset``), a catalog of the chosen exercises only, a
``pyproject.toml`` so that ``pip install -e .`` then ``pytest`` works, and a README for the
candidate. Nothing from solutions/ goes in: ``audit`` checks the written bundle (no reference,
hidden test or wrong solution text in any file, no stub with a body filled in) and the bundle is
removed again if it fails.
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

from grader import PACKAGE_DIR, __version__, catalog
from grader.engine.intake import MANIFEST_NAME
from grader.errors import ReleaseError
from grader.workflows import stubs

GRADER_PACKAGE = PACKAGE_DIR


def _shippable(ex: catalog.Exercise) -> bool:
    return ex.stub.is_file() and ex.public_tests.is_file()


def choose(exercise_ids: list[str] | None = None, patterns: list[str] | None = None,
           topics: list[str] | None = None, minutes: int | None = None) -> list[catalog.Exercise]:
    """The exercises of a bundle, in catalog order.

    ``exercise_ids`` are taken as they are (``minutes`` must then hold them all). Otherwise the
    candidates are the catalog's exercises matching any of ``patterns`` (shell-style, on ids, e.g.
    ``pytorch.autograd.*``) and ``topics`` (``autograd`` or ``pytorch.autograd``); with
    ``minutes``, a deterministic greedy pick: topics take turns (the requested ones in the given
    order, else in catalog order), each turn adding that topic's first exercise, in catalog
    order, that still fits the time left, until nothing more fits.

    Raises:
        ReleaseError: nothing selected, the explicit exercises exceed ``minutes``, or a requested
            topic cannot be covered within ``minutes``.
        catalog.CatalogError: an unknown exercise id.
    """
    order = {ex_id: i for i, ex_id in enumerate(catalog.load_catalog())}
    if exercise_ids:
        chosen = sorted(catalog.select(exercise_ids), key=lambda ex: order[ex.id])
        unready = [ex.id for ex in chosen if not _shippable(ex)]
        if unready:
            raise ReleaseError(f"no stub or no public tests in the kit for {', '.join(unready)}")
        total = sum(ex.minutes for ex in chosen)
        if minutes is not None and total > minutes:
            raise ReleaseError(f"the chosen exercises take {total} min, more than --minutes {minutes}")
        return chosen
    candidates = [ex for ex in catalog.select(topics=topics, patterns=patterns) if _shippable(ex)]
    if not candidates:
        raise ReleaseError("no exercise matches the selection (see `grader list`)")
    if minutes is None:
        return candidates
    queues: dict[str, list[catalog.Exercise]] = {}
    for ex in candidates:
        key = (next((t for t in topics if catalog.in_topics(ex, [t])), ex.topic) if topics
               else f"{ex.framework}.{ex.topic}")
        queues.setdefault(key, []).append(ex)
    turns = [t for t in topics if t in queues] if topics else list(queues)
    chosen, left, added = [], minutes, True
    while added:
        added = False
        for topic in turns:
            pick = next((ex for ex in queues[topic] if ex.minutes <= left), None)
            if pick is not None:
                queues[topic].remove(pick)
                chosen.append(pick)
                left -= pick.minutes
                added = True
    if not chosen:
        raise ReleaseError(f"no selected exercise fits in {minutes} min")
    for topic in topics or []:
        if not any(catalog.in_topics(ex, [topic]) for ex in chosen):
            raise ReleaseError(f"topic {topic!r} cannot be covered in {minutes} min "
                               "(raise --minutes or drop the topic)")
    return sorted(chosen, key=lambda ex: order[ex.id])


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _catalog_toml(exercises: list[catalog.Exercise]) -> str:
    lines = ["# The exercises of this take-home (same format as the kit's catalog.toml)."]
    for ex in exercises:
        lines += ["", "[[exercise]]"]
        for name in ("id", "title", "framework", "topic", "difficulty", "minutes", "seeds"):
            lines.append(f"{name} = {_toml(getattr(ex, name))}")
    return "\n".join(lines) + "\n"


def _kit_project() -> dict:
    return tomllib.loads((catalog.KIT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def requires_python() -> str:
    """The kit's (and so a bundle's) ``requires-python``, e.g. ``>=3.11``."""
    return _kit_project()["project"]["requires-python"]


def _pyproject_toml(exercises: list[catalog.Exercise]) -> str:
    kit = _kit_project()
    # Not torch: pip would take PyPI's multi-GB CUDA build on Linux. install.py installs the CPU
    # build (or keeps the candidate's own torch) before it installs this project.
    deps = [d for d in kit["project"]["dependencies"]
            if re.match(r"[A-Za-z0-9._-]+", d).group().lower() != "torch"]
    for extra in catalog.required_extras(exercises):
        # With the kit's platform markers (tensorflow-cpu where it has wheels, tensorflow elsewhere).
        deps += kit["project"].get("optional-dependencies", {}).get(extra, [])
    ini = dict(kit["tool"]["pytest"]["ini_options"], testpaths=["exercises"])
    lines = ['[build-system]', 'requires = ["setuptools>=64"]', 'build-backend = "setuptools.build_meta"',
             '', '[project]', 'name = "drills-take-home"', f'version = {_toml(__version__)}',
             f'requires-python = {_toml(requires_python())}',
             f'dependencies = {_toml(deps)}', '', '[project.scripts]', 'grader = "grader.cli:main"',
             '', *(line for group, points in kit["project"]["entry-points"].items()
                   for line in (f'[project.entry-points.{group}]',
                                *(f'{name} = {_toml(value)}' for name, value in points.items()), '')),
             '[tool.setuptools.packages.find]', 'include = ["grader*"]', '',
             # What an installed (not editable) grader needs: stubs for `grader reset`, typing marker.
             '[tool.setuptools.package-data]', 'grader = ["py.typed", "_stubs/**/*.py"]', '',
             '[tool.pytest.ini_options]', *(f"{k} = {_toml(v)}" for k, v in ini.items())]
    return "\n".join(lines) + "\n"


def _version_tuple() -> tuple[int, ...]:
    return tuple(int(part) for part in requires_python().lstrip(">=~ ").split("."))


# The bundle's installer: pip cannot choose torch's CPU wheel index from a pyproject.toml, and the
# CUDA build that PyPI serves on Linux is a multi-GB download that grading does not use.
INSTALL_PY = '''"""Set up this take-home in the active Python environment (run it inside a virtual environment).

Keeps a torch (2.4 or newer) that is already installed; otherwise installs the CPU build of torch
from PyTorch's wheel index. Then installs this project in editable mode (`pip install -e .`).
`--dry-run` prints the commands instead of running them.
"""

import subprocess
import sys

MIN = MIN_PYTHON
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def torch_to_keep():
    try:
        from importlib.metadata import PackageNotFoundError, version
        found = version("torch")
    except PackageNotFoundError:
        return None
    major_minor = tuple(int(p) for p in found.split("+")[0].split(".")[:2])
    return found if major_minor >= (2, 4) else None


def main(argv):
    if sys.version_info < MIN:
        print(f"this take-home needs Python {'.'.join(map(str, MIN))} or newer; this is "
              f"{sys.version.split()[0]}", file=sys.stderr)
        return 2
    kept = torch_to_keep()
    commands = [] if kept else [[sys.executable, "-m", "pip", "install", "torch>=2.4",
                                 "--index-url", TORCH_CPU_INDEX]]
    commands.append([sys.executable, "-m", "pip", "install", "-e", "."])
    print(f"keeping the installed torch {kept}" if kept else "installing the CPU build of torch")
    for command in commands:
        print("$ " + " ".join(command))
        if "--dry-run" not in argv:
            subprocess.run(command, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''

# The bundle's GitHub workflow: the candidate's repository has only the public tests.
WORKFLOW = """# The public tests of this take-home, on every push (copy of the tensor-drills grading workflow).
# Only the public tests run here: the hidden tests that grade the submission are not in this
# repository, so the score on the summary page is not the final grade.
name: public-tests

on:
  push:
  pull_request:
  workflow_dispatch:

permissions:
  contents: read

jobs:
  public-tests:
    runs-on: ubuntu-latest
    timeout-minutes: 30
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install
        run: python install.py
      - name: Public tests
        # The score table goes to the run's summary page, marked as public tests only.
        run: grader score exercises --format junit -o report.xml
      - name: Upload the JUnit report
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: public-tests-report
          path: report.xml
          if-no-files-found: error
"""


def _readme(exercises: list[catalog.Exercise], budget: int) -> str:
    total = sum(ex.minutes for ex in exercises)
    rows = [f"| {i} | {ex.title} | `exercises/{ex.relpath.as_posix()}` | {ex.difficulty} | {ex.minutes} |"
            for i, ex in enumerate(exercises, 1)]
    first = exercises[0]
    test_path = f"exercises/{first.relpath.parent.as_posix()}/test_{first.stem}.py"
    return f"""# Take-home exercises

Time budget: **about {budget} minutes** (the estimates below add up to {total} minutes).
Work through the tasks in any order; a partly solved task still earns the points of the checks
it passes.

## Tasks

| # | task | file to edit | difficulty | minutes |
| ---: | --- | --- | --- | ---: |
{chr(10).join(rows)}

Each file's docstring is the specification: the question, your task, the **Contract** your code
is held to (shapes, dtypes, devices, errors) and hints. Replace every `raise NotImplementedError`
with your implementation; keep the file names and function signatures.

## Set up

You need Python {requires_python().lstrip(">=")} or newer (`python --version`).

```
python -m venv .venv
. .venv/bin/activate        # Windows: .venv\\Scripts\\activate
python install.py
```

`install.py` keeps a torch you already have in that environment (2.4 or newer); otherwise it
installs the CPU build of torch (a few hundred MB, not the multi-GB CUDA build), then this
project (`pip install -e .`, which leaves torch to this script). `python install.py --dry-run`
shows the commands without running them.

## Check your work

```
pytest                                  # the public tests of every task
pytest {test_path}   # one task
grader status                           # progress: public checks pass / failing / not started
grader hint {first.id}       # the hints of a task
grader reset {first.id}      # start a task over (your version is kept: grader attempts)
```

The public tests are a small sample. Your submission is also graded with hidden tests that check
every point of each Contract, so passing the public tests is not the full grade: read the
Contract and test the edge cases yourself. The same holds for the GitHub workflow in
`.github/workflows/grade.yml` (if you keep your work in a GitHub repository): it runs only the
public tests.

## Submit

Zip the `exercises` folder and send `submission.zip`:

```
python -m zipfile -c submission.zip exercises
```

Only the task modules are graded; test files and any other file in the zip are ignored. Keep
`exercises/{MANIFEST_NAME}`: it tells the grader which tasks this take-home has.
"""


def audit(bundle: Path, solutions: Path | None = None) -> list[str]:
    """Every way ``bundle`` leaks the kit's solutions; empty when it is clean.

    Checks: no ``solutions`` or ``wrong`` folder, no ``*_hidden.py`` file, no file whose text
    equals or contains the text of any file under ``solutions`` (references, hidden tests, wrong
    solutions), and every exercise module still a stub.
    """
    solutions = solutions or catalog.KIT_ROOT / "solutions"
    secrets = [p.read_text(encoding="utf-8", errors="replace").strip()
               for p in sorted(solutions.rglob("*.py"))] if solutions.is_dir() else []
    secrets = [s for s in secrets if s]
    problems = []
    for path in sorted(bundle.rglob("*")):
        rel = path.relative_to(bundle)
        if path.is_dir():
            if path.name in ("solutions", "wrong"):
                problems.append(f"{rel}: a {path.name} folder")
            continue
        if path.name.endswith("_hidden.py"):
            problems.append(f"{rel}: a hidden test file")
        text = path.read_text(encoding="utf-8", errors="replace")
        if any(secret in text for secret in secrets):
            problems.append(f"{rel}: contains the text of a file of solutions/")
        if rel.parts[0] == "exercises" and path.suffix == ".py" and not path.name.startswith("test_") \
                and not stubs.looks_like_stub(text):
            problems.append(f"{rel}: an exercise module that is not an untouched stub")
    return problems


def _stub_text(ex: catalog.Exercise) -> str:
    try:
        return stubs.untouched_stub(ex)
    except stubs.StubError as exc:
        raise ReleaseError(f"no untouched stub of {ex.id} to ship: {exc}") from None


def write_bundle(out: Path, exercises: list[catalog.Exercise], budget: int | None = None) -> Path:
    """Write the bundle for ``exercises`` into ``out`` (absent or empty); returns ``out``.

    Raises:
        ReleaseError: ``out`` is not empty, or the written bundle fails ``audit`` (then it is removed).
    """
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReleaseError(f"{out} exists and is not an empty folder")
    texts = {ex: _stub_text(ex) for ex in exercises}
    out.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copytree(GRADER_PACKAGE, out / "grader",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "_stubs"))
        for ex, text in texts.items():
            for root in (out / "exercises", out / "grader" / "_stubs"):
                (root / ex.relpath).parent.mkdir(parents=True, exist_ok=True)
                (root / ex.relpath).write_text(text, encoding="utf-8")
            shutil.copyfile(ex.public_tests, out / "exercises" / ex.relpath.parent / ex.public_tests.name)
        (out / "exercises" / MANIFEST_NAME).write_text(json.dumps(
            {"exercises": [ex.id for ex in exercises], "kit_version": __version__}, indent=2) + "\n",
            encoding="utf-8")
        (out / "install.py").write_text(INSTALL_PY.replace("MIN_PYTHON", repr(_version_tuple())),
                                         encoding="utf-8")
        workflow = out / ".github" / "workflows" / "grade.yml"
        workflow.parent.mkdir(parents=True)
        workflow.write_text(WORKFLOW, encoding="utf-8")
        (out / "catalog.toml").write_text(_catalog_toml(exercises), encoding="utf-8")
        (out / "pyproject.toml").write_text(_pyproject_toml(exercises), encoding="utf-8")
        (out / "conftest.py").write_text(
            '"""pytest configuration; the checks live in grader/pytest_plugin.py."""\n\n'
            'collect_ignore_glob = [".venv/*", "grader/*"]\n', encoding="utf-8")
        budget = budget or sum(ex.minutes for ex in exercises)
        (out / "README.md").write_text(_readme(exercises, budget), encoding="utf-8")
        problems = audit(out)
        if problems:
            raise ReleaseError("the bundle would leak solutions, so it was removed:\n  "
                               + "\n  ".join(problems))
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    return out
