"""Score a submission: run its exercises' public and hidden tests in a child process.

The child is ``python -m pytest`` with the kit's own configuration and rootdir, the submission as
``--impl-root`` and grading mode on. It streams one JSON record per collected test and per result
over a pipe the grader owns (``--report-fd``). The score counts only tests the child reported as
passed: a test that was collected but never reported (a crash, an early exit, a timeout) scores 0
with a reason. Tests that need CUDA on a machine without it are left out of ``max_score``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader import catalog
from grader.pytest_plugin import CUDA_SKIP_REASON

DEFAULT_TIMEOUT_S = 600.0
DEFAULT_TEST_TIMEOUT_S = 60.0
_OUTPUT_LIMIT = 20_000


class SubmissionError(ValueError):
    """The submission cannot be graded at all (not a directory, nothing selected)."""


@dataclass
class TestResult:
    name: str
    status: str  # passed | failed | error | skipped | missing | not_run
    score: float
    max_score: float
    visibility: str  # visible (public test) | hidden
    message: str = ""


@dataclass
class ExerciseResult:
    id: str
    score: float = 0.0
    max_score: float = 0.0
    tests: list[TestResult] = field(default_factory=list)

    @property
    def status(self) -> str:
        """done, failing, not started (stub untouched) or not run (no test could run here)."""
        counted = [t for t in self.tests if t.status != "not_run"]
        if not counted:
            return "not run"
        if all(t.status == "passed" for t in counted):
            return "done"
        if all(t.status != "passed" for t in counted) and all(
                t.message.startswith("not started") for t in counted):
            return "not started"
        return "failing"


@dataclass
class Report:
    submission: str
    score: float
    max_score: float
    exercises: list[ExerciseResult]
    duration_s: float
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The stable JSON shape: score, max_score, exercises[{id, score, max_score, tests[...]}]."""
        data = asdict(self)
        for ex, raw in zip(self.exercises, data["exercises"]):
            raw["status"] = ex.status
        return data


def select_exercises(ids: list[str] | None) -> list[catalog.Exercise]:
    """The exercises to grade: ``ids`` in catalog order (all when empty).

    Raises:
        catalog.CatalogError: an id is not in the catalog.
    """
    if not ids:
        return list(catalog.load_catalog().values())
    wanted = [catalog.get_exercise(i) for i in ids]
    return list(dict.fromkeys(wanted))


def _child_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TZ")}
    env.update(
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONHASHSEED="0",
        HYPOTHESIS_STORAGE_DIRECTORY=str(tmp / "hypothesis"),
        TF_CPP_MIN_LOG_LEVEL="2",
        TF_ENABLE_ONEDNN_OPTS="0",
        TMPDIR=str(tmp),
        HOME=str(tmp),
    )
    return env


def _pytest_command(exercises: list[catalog.Exercise], submission: Path, fd: int,
                    test_timeout: float) -> list[str]:
    files = [str(p) for ex in exercises for p in (ex.public_tests, ex.hidden_tests) if p.is_file()]
    root = catalog.KIT_ROOT
    return [sys.executable, "-m", "pytest", "-q", "--no-header", "-p", "no:cacheprovider",
            "--rootdir", str(root), "-c", str(root / "pyproject.toml"),
            "--impl-root", str(submission), "--grading", "--report-fd", str(fd),
            "--test-timeout", str(test_timeout), *files]


def _run_child(cmd: list[str], fd_write: int, fd_read: int, env: dict[str, str], cwd: Path,
               timeout: float) -> tuple[list[dict], int | None, str]:
    """Run pytest; return the JSON records it sent, its exit code (None if killed) and output tail."""
    records: list[dict] = []

    def read_records() -> None:
        with os.fdopen(fd_read, encoding="utf-8", errors="replace") as stream:
            for line in stream:
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    continue

    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                env=env, cwd=cwd, pass_fds=(fd_write,), start_new_session=True)
        os.close(fd_write)
        reader = threading.Thread(target=read_records, daemon=True)
        reader.start()
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code = None
        # Grandchildren may still hold the pipe: kill the whole group before waiting on the reader.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        reader.join(timeout=5)
        out.seek(0, os.SEEK_END)
        size = out.tell()
        out.seek(max(0, size - _OUTPUT_LIMIT))
        tail = out.read().decode("utf-8", errors="replace")
    return list(records), code, tail


def _fold(records: list[dict], exercises: list[catalog.Exercise], code: int | None,
          timeout: float) -> tuple[list[ExerciseResult], list[str]]:
    by_id = {ex.id: ExerciseResult(ex.id) for ex in exercises}
    results = {r["nodeid"]: r for r in records if r.get("event") == "result"}
    finished = any(r.get("event") == "finished" for r in records)
    problems: list[str] = []
    if code is None:
        problems.append(f"the test run was stopped after {timeout:g} s (wall-clock limit)")
    elif not finished:
        problems.append(f"the test run ended early (exit code {code}) before reporting all results")
    if not any(r.get("event") == "collected" for r in records):
        problems.append("no tests were collected: the kit's test files could not be loaded")
    missing_reason = problems[0] if problems else "the test never reported a result"
    for rec in (r for r in records if r.get("event") == "collected"):
        ex = by_id.get(rec["exercise"])
        if ex is None:
            continue
        points = float(rec["points"])
        name = rec["nodeid"].rsplit("/", 1)[-1]
        res = results.get(rec["nodeid"])
        if res is None:
            test = TestResult(name, "missing", 0.0, points, rec["visibility"], missing_reason)
        elif res["status"] == "skipped" and res["message"] == CUDA_SKIP_REASON:
            test = TestResult(name, "not_run", 0.0, 0.0, rec["visibility"], CUDA_SKIP_REASON)
        else:
            status = res["status"]
            score = points if status == "passed" else 0.0
            message = res["message"] or ("skipped" if status == "skipped" else "")
            test = TestResult(name, status, score, points, rec["visibility"], message)
        ex.tests.append(test)
        ex.score += test.score
        ex.max_score += test.max_score
    return list(by_id.values()), problems


def score_submission(submission: Path | str, exercise_ids: list[str] | None = None, *,
                     timeout: float = DEFAULT_TIMEOUT_S,
                     test_timeout: float = DEFAULT_TEST_TIMEOUT_S) -> Report:
    """Grade ``submission`` (a directory laid out like ``exercises/``) on the chosen exercises.

    Raises:
        SubmissionError: ``submission`` is not a directory.
        catalog.CatalogError: an exercise id is unknown.
    """
    submission = Path(submission)
    if not submission.is_dir():
        raise SubmissionError(f"submission must be a directory laid out like exercises/: {submission}")
    exercises = select_exercises(exercise_ids)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="drills-grade-") as tmp:
        fd_read, fd_write = os.pipe()
        cmd = _pytest_command(exercises, submission.resolve(), fd_write, test_timeout)
        records, code, tail = _run_child(cmd, fd_write, fd_read, _child_env(Path(tmp)), Path(tmp),
                                         timeout)
    results, problems = _fold(records, exercises, code, timeout)
    if problems and not any(ex.tests for ex in results):
        problems.append("last output of the test run:\n" + tail[-3000:])
    return Report(str(submission), sum(e.score for e in results), sum(e.max_score for e in results),
                  results, round(time.monotonic() - started, 2), problems)
