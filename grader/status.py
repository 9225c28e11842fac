"""``grader status``: a learner's progress over the exercises, like ``rustlings list``.

Fast enough to run after every edit: it runs only the *public* tests, all exercises in one pytest
child (learner mode, ``--impl-root DIR``), and reads each test's outcome from the plugin's JSON
report channel (``--report-fd``, pointed at a temporary file), never from pytest's text output.
"Done" therefore means "passes its public tests"; ``grader score`` also runs the hidden ones.

This module imports neither torch nor TensorFlow: only the child does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader import catalog
from grader._options import POSITIVE_SECONDS

DONE, FAILING, NOT_STARTED, MISSING, ERROR = "done", "failing", "not started", "missing", "error"


@dataclass
class ExerciseStatus:
    exercise: catalog.Exercise
    state: str  # done | failing | not started | missing | error
    passed: int = 0
    failed: int = 0
    detail: str = ""  # the first failing test, or why no test ran

    def to_dict(self) -> dict:
        ex = self.exercise
        return {"id": ex.id, "state": self.state, "passed": self.passed, "failed": self.failed,
                "detail": self.detail, "title": ex.title, "difficulty": ex.difficulty,
                "minutes": ex.minutes}


@dataclass
class Progress:
    root: Path
    exercises: list[ExerciseStatus]
    duration_s: float
    problems: list[str] = field(default_factory=list)

    def count(self, state: str) -> int:
        return sum(s.state == state for s in self.exercises)

    def next_exercise(self) -> ExerciseStatus | None:
        """The suggested next exercise: the easiest not done, first in catalog order on ties."""
        order = {ex_id: i for i, ex_id in enumerate(catalog.load_catalog())}
        todo = [s for s in self.exercises if s.state != DONE]
        return min(todo, default=None, key=lambda s: (
            catalog.DIFFICULTIES.index(s.exercise.difficulty), order.get(s.exercise.id, 0)))

    def to_dict(self) -> dict:
        nxt = self.next_exercise()
        return {"root": str(self.root), "duration_s": self.duration_s, "problems": self.problems,
                "next": nxt.exercise.id if nxt else None,
                "exercises": [s.to_dict() for s in self.exercises]}


def select(framework: str | None = None, topics: list[str] | None = None) -> list[catalog.Exercise]:
    """Catalog exercises, in catalog order, filtered by framework and topic.

    A topic is given as ``autograd`` or ``pytorch.autograd``.
    """
    return [ex for ex in catalog.load_catalog().values()
            if (not framework or ex.framework == framework)
            and (not topics or ex.topic in topics or f"{ex.framework}.{ex.topic}" in topics)]


def _read_records(path: Path) -> list[dict]:
    records = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            records.append(json.loads(json.loads(line)["body"]))
        except (ValueError, KeyError, TypeError):
            continue  # a torn last line if the child was killed
    return records


def _run_public_tests(root: Path, exercises: list[catalog.Exercise], timeout_s: float,
                      test_timeout_s: float) -> tuple[list[dict], str, int | None]:
    """One pytest child over the public test files; returns (records, output, exit code)."""
    with tempfile.TemporaryDirectory(prefix="drills-status-") as tmp:
        channel = Path(tmp) / "report.jsonl"
        with open(channel, "w", encoding="utf-8") as sink:
            fd = sink.fileno()
            cmd = [sys.executable, "-m", "pytest", "-q", "--tb=no", "--no-summary", "--no-header",
                   "-p", "no:cacheprovider", "--continue-on-collection-errors",
                   f"--rootdir={catalog.KIT_ROOT}", f"--impl-root={root}",
                   "--test-timeout", f"{test_timeout_s:g}", "--report-fd", str(fd),
                   *(str(ex.public_tests) for ex in exercises)]
            env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
            try:
                proc = subprocess.run(cmd, cwd=catalog.KIT_ROOT, env=env, pass_fds=(fd,),
                                      stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                      timeout=timeout_s, check=False)
                output, code = proc.stdout + proc.stderr, proc.returncode
            except subprocess.TimeoutExpired:
                output, code = f"the public tests ran past {timeout_s:g} s and were stopped", None
        return _read_records(channel), output, code


def _gist(result: dict) -> str:
    """The line of a failure that says what went wrong (pytest marks it with ``E``)."""
    lines = (result.get("message") or result["status"]).strip().splitlines() or [""]
    marked = [line[1:].strip() for line in lines if line.startswith("E ")]
    return (marked or lines)[0]


def _fold(ex: catalog.Exercise, collected: list[dict], results: dict[str, dict]) -> ExerciseStatus:
    if not collected:
        return ExerciseStatus(ex, ERROR, detail="its public tests could not be collected "
                                                f"(run: pytest {ex.public_tests.relative_to(catalog.KIT_ROOT)})")
    status = ExerciseStatus(ex, NOT_STARTED)
    not_started = 0
    for rec in collected:
        res = results.get(rec["nodeid"])
        if res is None:
            status.failed += 1
            status.detail = status.detail or f"{rec['nodeid'].split('::', 1)[-1]}: no result (crashed?)"
        elif res["status"] == "passed":
            status.passed += 1
        elif res["status"] != "skipped":
            status.failed += 1
            not_started += bool(res.get("not_started"))
            status.detail = status.detail or f"{rec['nodeid'].split('::', 1)[-1]}: {_gist(res)[:120]}"
    if status.failed == 0:
        status.state, status.detail = (DONE, "") if status.passed else (ERROR, "every public test was skipped")
    elif status.passed == 0 and not_started == status.failed:
        status.state, status.detail = NOT_STARTED, ""
    else:
        status.state = FAILING
    return status


def collect(root: Path, exercises: list[catalog.Exercise], *, timeout_s: float = 600.0,
            test_timeout_s: float = 60.0) -> Progress:
    """Run the public tests of ``exercises`` against ``root`` (laid out like exercises/)."""
    started = time.monotonic()
    root = Path(root).resolve()
    runnable = [ex for ex in exercises if (root / ex.relpath).is_file() and ex.public_tests.is_file()]
    records, output, code = _run_public_tests(root, runnable, timeout_s, test_timeout_s) if runnable else ([], "", 0)
    results = {r["nodeid"]: r for r in records if r.get("event") == "result"}
    collected: dict[str, list[dict]] = {}
    for rec in records:
        if rec.get("event") == "collected":
            collected.setdefault(rec["exercise"], []).append(rec)
    statuses = []
    for ex in exercises:
        if not (root / ex.relpath).is_file():
            statuses.append(ExerciseStatus(ex, MISSING, detail=f"no file {ex.relpath} in {root}"))
        elif not ex.public_tests.is_file():
            statuses.append(ExerciseStatus(ex, ERROR, detail="the kit has no public tests for it"))
        else:
            statuses.append(_fold(ex, collected.get(ex.id, []), results))
    problems = []
    if runnable and (code not in (0, 1) or not any(r.get("event") == "finished" for r in records)):
        problems.append(f"the public test run ended abnormally (exit code {code}); its last output:\n"
                        + output[-2000:])
    return Progress(root, statuses, round(time.monotonic() - started, 2), problems)


def render(progress: Progress) -> str:
    """The progress view: one block per topic with counts per difficulty, then the next step."""
    lines = [f"tensor-drills progress in {progress.root} (public tests only)", ""]
    topics: dict[str, list[ExerciseStatus]] = {}
    for s in progress.exercises:
        topics.setdefault(f"{s.exercise.framework}.{s.exercise.topic}", []).append(s)
    width = max([len(s.exercise.stem) for s in progress.exercises] + [4])
    for topic, rows in topics.items():
        per_level = []
        for level in catalog.DIFFICULTIES:
            of_level = [s for s in rows if s.exercise.difficulty == level]
            if of_level:
                per_level.append(f"{level} {sum(s.state == DONE for s in of_level)}/{len(of_level)}")
        done = sum(s.state == DONE for s in rows)
        lines.append(f"{topic}: {done}/{len(rows)} done   ({', '.join(per_level)})")
        for s in rows:
            ex = s.exercise
            detail = s.detail
            if s.state == FAILING:
                detail = f"{s.passed}/{s.passed + s.failed} public tests pass; first failure: {s.detail}"
            lines.append(f"  {s.state:<11}  {ex.stem:<{width}}  {ex.difficulty:<6} {ex.minutes:>3} min  "
                         f"{detail or ex.title}")
        lines.append("")
    total = len(progress.exercises)
    counts = ", ".join(f"{progress.count(state)} {state}" for state in (FAILING, NOT_STARTED, MISSING, ERROR)
                       if progress.count(state))
    lines.append(f"{progress.count(DONE)}/{total} exercises done" + (f", {counts}" if counts else "")
                 + f"  ({progress.duration_s:.1f} s)")
    nxt = progress.next_exercise()
    if nxt is None:
        lines.append("Every selected exercise passes its public tests: run `grader score` for the "
                     "hidden tests too.")
    else:
        ex = nxt.exercise
        lines.append(f"next: {ex.id} ({ex.difficulty}, {ex.minutes} min): {ex.title}")
        lines.append(f"      edit {progress.root / ex.relpath}; `grader hint {ex.id}` shows hints")
    lines.extend(f"problem: {p}" for p in progress.problems)
    return "\n".join(lines) + "\n"


def _cmd_status(args) -> int:
    if not Path(args.dir).is_dir():
        print(f"grader: error: not a folder: {args.dir}", file=sys.stderr)
        return 2
    exercises = select(args.framework, args.topic)
    if not exercises:
        print("grader: error: no exercise matches these filters (see `grader list`)", file=sys.stderr)
        return 2
    progress = collect(Path(args.dir), exercises, timeout_s=args.timeout,
                       test_timeout_s=args.test_timeout)
    sys.stdout.write(json.dumps(progress.to_dict(), indent=2) + "\n" if args.json else render(progress))
    return 1 if progress.problems else 0


def register(sub) -> None:
    """Add the ``status`` subcommand to the CLI's subparsers."""
    status = sub.add_parser(
        "status", help="your progress: which exercises are done, failing or not started",
        description="Run the public tests of every exercise (in one quick pytest run) against DIR "
                    "and show, per topic, what is done, failing or not started, with counts per "
                    "difficulty and the next exercise to try (the easiest one not done). Done "
                    "means the public tests pass; `grader score` also runs the hidden tests.")
    status.add_argument("dir", nargs="?", default=str(catalog.KIT_ROOT / "exercises"), metavar="DIR",
                        help="folder laid out like exercises/ (default: the kit's exercises/)")
    status.add_argument("--framework", choices=catalog.FRAMEWORKS)
    status.add_argument("--topic", action="append", metavar="TOPIC",
                        help="only this topic, e.g. autograd or pytorch.autograd (repeatable)")
    status.add_argument("--json", action="store_true", help="print the progress as JSON")
    status.add_argument("--timeout", type=POSITIVE_SECONDS, default=600.0, metavar="S",
                        help="wall-clock limit of the whole run in seconds (default: 600)")
    status.add_argument("--test-timeout", type=POSITIVE_SECONDS, default=60.0, metavar="S",
                        help="limit per test in seconds (default: 60)")
    status.set_defaults(func=_cmd_status)
