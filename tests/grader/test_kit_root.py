"""The kit the grader works on comes from the working directory (or --kit / $DRILLS_KIT_ROOT),
not from wherever the ``grader`` package was installed: real subprocesses, real folders."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from grader import catalog

EX = catalog.get_exercise("pytorch.tensors.broadcasting")
PACKAGE = Path(catalog.__file__).resolve().parent


def _other_kit(root: Path) -> Path:
    """A second checkout holding one exercise, as a fresh clone would."""
    (root / "exercises" / EX.relpath).parent.mkdir(parents=True)
    shutil.copyfile(EX.stub, root / "exercises" / EX.relpath)
    entry = catalog.CATALOG_FILE.read_text().split("[[exercise]]")
    (root / "catalog.toml").write_text("[[exercise]]" + next(e for e in entry if f'"{EX.id}"' in e))
    return root


def _grader(*args: str, cwd: Path, pythonpath: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DRILLS_KIT_ROOT", "PYTHONPATH")}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_the_working_directory_names_the_kit_not_the_installed_package(tmp_path):
    other = _other_kit(tmp_path / "clone")
    (other / "exercises" / "pytorch").mkdir(exist_ok=True)
    for cwd in (other, other / "exercises" / "pytorch"):  # the kit's folder, or one below it
        listed = _grader("list", cwd=cwd)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.split()[0] == EX.id and "1 exercise(s)" in listed.stderr
    assert catalog.find_kit_root(other / "exercises") == other.resolve()


def test_kit_option_and_environment(tmp_path):
    other = _other_kit(tmp_path / "clone")
    listed = _grader("--kit", str(other), "list", cwd=tmp_path)
    assert listed.returncode == 0 and "1 exercise(s)" in listed.stderr, listed.stderr
    bad = _grader("--kit", str(tmp_path), "list", cwd=tmp_path)
    assert bad.returncode == 2 and "no catalog.toml" in bad.stderr and "Traceback" not in bad.stderr


def test_a_non_editable_install_outside_a_kit_says_where_to_run(tmp_path):
    """Installed as a plain package (a copy in site-packages) and run outside any kit: a clear
    error, not a traceback; inside a clone, that copy works on the clone."""
    site = tmp_path / "site-packages"
    shutil.copytree(PACKAGE, site / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "elsewhere").mkdir()
    run = _grader("list", cwd=tmp_path / "elsewhere", pythonpath=str(site))
    assert run.returncode == 2 and "no tensor-drills kit here" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
    other = _other_kit(tmp_path / "clone")
    inside = _grader("list", cwd=other, pythonpath=str(site))
    assert inside.returncode == 0 and inside.stdout.split()[0] == EX.id, inside.stderr
