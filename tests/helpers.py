"""Small helpers shared by the kit's own tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from grader.catalog import KIT_ROOT, Exercise


def make_submission(root: Path, files: dict[Exercise, str | Path]) -> Path:
    """Lay out a submission under ``root``: each exercise's module gets the text (or file) given."""
    for ex, content in files.items():
        target = root / ex.relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        text = content.read_text(encoding="utf-8") if isinstance(content, Path) else content
        target.write_text(text, encoding="utf-8")
    return root


def run_python(*args: str, cwd: Path = KIT_ROOT, timeout: float = 300,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the venv's python with ``args`` (and ``env`` added to this process's environment);
    output captured as text."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", **(env or {}))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
