"""grader watch for real: a subprocess on a temporary copy of the kit, files written as a learner
saves them, its output read with bounded waits, the process group killed at the end."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grader import catalog

FIRST = catalog.get_exercise("pytorch.tensors.from_data")
SECOND = catalog.get_exercise("pytorch.tensors.creation_ops")
WAIT_S = 240  # one full check is a grading child importing torch: slow on a busy machine


def temp_kit(root: Path, exercises: list[catalog.Exercise]) -> Path:
    """A kit holding only ``exercises``: catalog entries, stubs, public and hidden tests."""
    entries = catalog.CATALOG_FILE.read_text().split("[[exercise]]")
    (root / "exercises").mkdir(parents=True)
    (root / "catalog.toml").write_text(
        "".join("[[exercise]]" + next(e for e in entries if f'"{ex.id}"' in e) for ex in exercises))
    for name in ("pyproject.toml", "conftest.py"):
        shutil.copyfile(catalog.KIT_ROOT / name, root / name)
    for ex in exercises:
        for src in (ex.stub, ex.public_tests, ex.hidden_tests):
            dest = root / src.relative_to(catalog.KIT_ROOT)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
    return root


class Output:
    """The lines a process prints, read by a thread, awaited with a deadline."""

    def __init__(self, stream) -> None:
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, text: str, timeout: float = WAIT_S) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {text!r} within {timeout:g} s:\n" + "\n".join(self.lines)) from None
            if line is None:
                raise AssertionError(f"the process ended before printing {text!r}:\n" + "\n".join(self.lines))
            self.lines.append(line)
            if text in line:
                return line


def _save(path: Path, source: str) -> None:
    """Write as an editor does: a new file moved over the old one."""
    tmp = path.with_name(path.name + ".swp")
    tmp.write_text(source, encoding="utf-8")
    os.replace(tmp, path)


@pytest.mark.timeout(1200)
def test_watch_checks_each_save_and_moves_on_when_done(tmp_path):
    kit = temp_kit(tmp_path / "kit", [FIRST, SECOND])
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if k not in ("DRILLS_KIT_ROOT", "NO_COLOR")}
    env.update(DRILLS_STATE_DIR=str(state), PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.Popen([sys.executable, "-m", "grader", "watch"], cwd=kit, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True, start_new_session=True)
    module = kit / "exercises" / FIRST.relpath
    try:
        out = Output(proc.stdout)
        assert "not started: pytorch.tensors.from_data" in out.wait_for(f"{FIRST.id} (")
        out.wait_for("watching")

        _save(module, FIRST.wrong_solution("as_tensor_shares_memory").source())  # fails a public test
        assert "2/3 public checks" in out.wait_for(f"failing: {FIRST.id}")
        assert "first failing check: test_" in out.wait_for("first failing check")
        out.wait_for("watching")

        # passes the public tests, fails hidden ones
        _save(module, FIRST.wrong_solution("cast_after_inference").source())
        line = out.wait_for(f"failing: {FIRST.id}")
        assert "public checks pass, full check" in line and "done" not in line
        assert "_hidden.py::" in out.wait_for("first failing check")
        out.wait_for("watching")

        _save(module, FIRST.reference.read_text(encoding="utf-8"))
        assert out.wait_for(f"{FIRST.id} (").startswith("done: ")
        out.wait_for(f"next: {SECOND.id}")
        assert "not started" in out.wait_for(f"{SECOND.id} (")
        out.wait_for("watching")
        assert "Traceback" not in "\n".join(out.lines)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    # Remembered: the list knows it is done without running anything.
    listed = subprocess.run([sys.executable, "-m", "grader", "list"], cwd=kit, env=env, capture_output=True,
                            text=True, timeout=120)
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert "  done  " in rows[FIRST.id] and "not started" in rows[SECOND.id]
    assert "1 done" in listed.stderr


def test_watch_of_a_folder_that_does_not_exist_is_an_error(tmp_path):
    result = subprocess.run([sys.executable, "-m", "grader", "watch", "--dir", str(tmp_path / "nope")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "not a folder" in result.stderr

