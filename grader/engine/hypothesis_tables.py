"""Hypothesis's character tables, built once per user and handed to every grading process.

The first time a process draws text, hypothesis tabulates the Unicode categories and the characters
UTF-8 encodes (1.2 s) and keeps the tables in its storage directory. A grading child's storage
directory is new each time, so every fresh child and every fork server built them again
(``grader._preload.warm`` builds them before the first test, so that no test pays for them).
Instead the grader builds them once, in a process of its own that runs hypothesis alone, into the
user's cache directory (``$XDG_CACHE_HOME``, else ``~/.cache``, under ``tensor-drills/``), and:

- a fork server (which runs no submitted code) reads them there;
- a fresh child gets a copy in its own work directory, which no other child reads: what a
  submission does to its copy reaches no other grading.

A cache that cannot be written only costs the time: the processes build the tables themselves.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unicodedata
from pathlib import Path

from grader._preload import TABLES_ENV

_BUILD = "from hypothesis import strategies\nstrategies.text().validate()\n"
_BUILD_TIMEOUT_S = 120
COPY_NAME = "hypothesis-tables"  # in a fresh child's work directory

_built: dict[Path, Path | None] = {}
_lock = threading.Lock()


@functools.cache
def _hypothesis_version() -> str:
    return importlib.metadata.version("hypothesis")  # 0.5 ms a lookup, and every child asks


def _cache_dir() -> Path | None:
    """Where the tables for this interpreter and hypothesis belong (None: no home to put them in)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    try:
        root = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"  # a relative one is ignored
        version = _hypothesis_version()
    except (RuntimeError, importlib.metadata.PackageNotFoundError):
        return None
    return root / "tensor-drills" / (f"hypothesis-{version}-python-{sys.version_info[0]}.{sys.version_info[1]}"
                                     f"-unicode-{unicodedata.unidata_version}")


def user_tables() -> Path | None:
    """The directory (a hypothesis storage directory) holding the tables for this interpreter and
    hypothesis, built on first use; None where it cannot be built."""
    where = _cache_dir()
    if where is None:
        return None
    with _lock:
        if where not in _built:
            _built[where] = _build(where)
        return _built[where]


def _build(final: Path) -> Path | None:
    if final.is_dir():
        return final
    building = None
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=".building-", dir=final.parent))
        env = {"PATH": os.environ.get("PATH", ""), "HYPOTHESIS_STORAGE_DIRECTORY": str(building),
               "HYPOTHESIS_NO_PLUGINS": "1", "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        subprocess.run([sys.executable, "-c", _BUILD], env=env, cwd=building, check=True,
                       capture_output=True, timeout=_BUILD_TIMEOUT_S)
        os.rename(building, final)  # whole or not at all; another grader may have been first
    except (OSError, subprocess.SubprocessError):
        pass
    finally:
        if building is not None and building.exists():
            shutil.rmtree(building, ignore_errors=True)
    return final if final.is_dir() else None


def for_server() -> dict[str, str]:
    """What a fork server's environment needs to read the tables (empty where there are none)."""
    tables = user_tables()
    return {TABLES_ENV: str(tables)} if tables is not None else {}


def staged_in(work: Path) -> dict[str, str]:
    """Copy the tables into the work directory ``work`` of a fresh grading child (once); return
    what the child's environment needs to read them (empty where there are none)."""
    tables = user_tables()
    if tables is None:
        return {}
    copy = work / COPY_NAME
    if not copy.exists():
        # Files and folders made as the rest of what is staged: readable by the child's uid.
        for table in tables.rglob("*"):
            if table.is_file() and "tmp" not in table.relative_to(tables).parts:
                (copy / table.relative_to(tables)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(table, copy / table.relative_to(tables))
    return {TABLES_ENV: str(copy)}
