"""``grader status``: a learner's progress over the exercises, like ``rustlings list``.

Per exercise it shows two checks (see ``grader.progress``): the *public check* (its public tests,
in learner mode) and the *full check* (public and hidden tests in the grader's sandbox, as
``grader score`` runs them), and calls an exercise *done* only when the full check of the
module's current content gave full marks.

Fast enough to run after every edit: results are remembered per content digest, so only
exercises whose module changed run again; the public tests of those run all in one pytest child
(``--impl-root DIR``), whose outcomes come from the plugin's JSON report channel (``--report-fd``,
pointed at a temporary file), never from pytest's text output. The full check (``--full``) runs
the hidden tests of the exercises whose public checks pass and whose full check is not
remembered, in one sandboxed grading run.

This module imports neither torch nor TensorFlow: only the children do.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader import _records, catalog, defaults, progress
from grader._records import Event
from grader.outcomes import State, TestStatus, classify
from grader.reports import console as _console

DONE, PUBLIC_PASS, FAILING = State.DONE, State.PUBLIC_PASS, State.FAILING
NOT_STARTED, MISSING, ERROR = State.NOT_STARTED, State.MISSING, State.ERROR
STATES = (DONE, PUBLIC_PASS, FAILING, NOT_STARTED, MISSING, ERROR)
# What the full-check column says when no full check of the current content is remembered.
NOT_CHECKED, CHANGED, NO_HIDDEN_TESTS = "not checked yet", "changed since last check", "no hidden tests here"
ALL_DONE = "Every selected exercise is done: full marks in the full check."


@dataclass
class ExerciseStatus:
    exercise: catalog.Exercise
    state: str  # one of STATES
    public: progress.PublicCheck | None = None  # None: the module is missing
    full: progress.FullCheck | None = None  # the full check of the current content, if remembered
    full_note: str = ""  # why there is no full result: NOT_CHECKED, CHANGED, NO_HIDDEN_TESTS
    remembered: bool = False  # the public check came from memory, not from this run

    @property
    def passed(self) -> int:
        return self.public.passed if self.public else 0

    @property
    def failed(self) -> int:
        return self.public.failed if self.public else 0

    @property
    def detail(self) -> str:
        """What to look at: the first failure (hidden checks' once the public ones pass)."""
        if self.state == FAILING and self.public and self.public.state == progress.PASS and self.full:
            return f"full check {self.full.points}; first failure: {self.full.first_failure}"
        if self.state == FAILING and self.public:
            return (f"{self.passed}/{self.passed + self.failed} public checks pass; "
                    f"first failure: {self.public.detail}")
        return self.public.detail if self.public and self.state != NOT_STARTED else ""

    @property
    def public_text(self) -> str:
        """The public-check column: pass 3/3, fail 1/3, not started, missing, error."""
        if self.public is None:
            return MISSING
        total = self.public.passed + self.public.failed
        if self.public.state in (progress.PASS, progress.FAIL):
            return f"{self.public.state} {self.public.passed}/{total}"
        return self.public.state

    @property
    def full_text(self) -> str:
        """The full-check column: the score of the current content, or why there is none."""
        if self.full is not None:
            return self.full.points
        return self.full_note or "-"

    def to_dict(self) -> dict:
        ex = self.exercise
        return {"id": ex.id, "state": self.state, "passed": self.passed, "failed": self.failed,
                "detail": self.detail, "public": self.public.state if self.public else MISSING,
                "full": None if self.full is None else {
                    "score": self.full.score, "max_score": self.full.max_score,
                    "first_failure": self.full.first_failure},
                "full_note": self.full_note, "remembered": self.remembered,
                "title": ex.title, "difficulty": ex.difficulty, "minutes": ex.minutes}


@dataclass
class Progress:
    root: Path
    exercises: list[ExerciseStatus]
    duration_s: float
    problems: list[str] = field(default_factory=list)
    ran_public: int = 0  # exercises whose public tests ran now (the rest were remembered)
    ran_full: int = 0  # exercises fully checked now

    def count(self, state: str) -> int:
        return sum(s.state == state for s in self.exercises)

    def next_exercise(self) -> ExerciseStatus | None:
        """The suggested next exercise: the easiest not done, first in catalog order on ties."""
        order = {ex_id: i for i, ex_id in enumerate(catalog.load_catalog())}
        todo = [s for s in self.exercises if s.state != DONE]
        return min(todo, default=None, key=lambda s: (
            catalog.DIFFICULTIES.index(s.exercise.difficulty), order.get(s.exercise.id, 0)))

    def awaiting_full_check(self) -> list[ExerciseStatus]:
        """Exercises whose public checks pass but whose current content has no full check."""
        return [s for s in self.exercises if s.state == PUBLIC_PASS and s.full_note != NO_HIDDEN_TESTS]

    def to_dict(self) -> dict:
        nxt = self.next_exercise()
        return {"root": str(self.root), "duration_s": self.duration_s, "problems": self.problems,
                "ran_public": self.ran_public, "ran_full": self.ran_full,
                "next": nxt.exercise.id if nxt else None,
                "exercises": [s.to_dict() for s in self.exercises]}


def _run_public_tests(root: Path, exercises: list[catalog.Exercise], timeout_s: float,
                      test_timeout_s: float) -> tuple[list[dict], str, int | None]:
    """One pytest child over the public test files; returns (records, output, exit code)."""
    with tempfile.TemporaryDirectory(prefix="drills-status-") as tmp:
        channel = Path(tmp) / "report.jsonl"
        key = _records.new_key()
        with open(channel, "w", encoding="utf-8") as sink:
            fd, key_fd = sink.fileno(), _records.key_pipe(key)
            cmd = [sys.executable, "-m", "pytest", "-q", "--tb=no", "--no-summary", "--no-header",
                   "-p", "no:cacheprovider", "--continue-on-collection-errors",
                   f"--rootdir={catalog.KIT_ROOT}", f"--impl-root={root}",
                   "--test-timeout", f"{test_timeout_s:g}", "--report-fd", str(fd),
                   "--report-key-fd", str(key_fd),
                   *(str(ex.public_tests) for ex in exercises)]
            env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
            try:
                proc = subprocess.run(cmd, cwd=catalog.KIT_ROOT, env=env, pass_fds=(fd, key_fd),
                                      stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                      timeout=timeout_s, check=False)
                output, code = proc.stdout + proc.stderr, proc.returncode
            except subprocess.TimeoutExpired:
                output, code = f"the public tests ran past {timeout_s:g} s and were stopped", None
            finally:
                os.close(key_fd)
        lines = channel.read_text(encoding="utf-8", errors="replace").splitlines()
        return _records.verify_all(key, lines), output, code


def _gist(result: dict) -> str:
    """The line of a failure that says what went wrong (pytest marks it with ``E``)."""
    lines = (result.get("message") or result["status"]).strip().splitlines() or [""]
    marked = [line[1:].strip() for line in lines if line.startswith("E ")]
    return (marked or lines)[0]


def _public_check(ex: catalog.Exercise, collected: list[dict], results: dict[str, dict]) -> progress.PublicCheck:
    """One exercise's public check from the child's records."""
    if not collected:
        return progress.PublicCheck(progress.ERROR, detail="its public tests could not be collected (run: "
                                    f"pytest {ex.public_tests.relative_to(catalog.KIT_ROOT)})")
    passed = failed = not_started = 0
    detail = message = ""
    for rec in collected:
        res = results.get(rec["nodeid"])
        if res is None:
            failed += 1
            detail = detail or f"{rec['nodeid'].split('::', 1)[-1]}: no result (crashed?)"
        elif res["status"] == TestStatus.PASSED:
            passed += 1
        elif res["status"] != TestStatus.SKIPPED:
            failed += 1
            not_started += bool(res.get("not_started"))
            if not detail:
                detail = f"{rec['nodeid'].split('::', 1)[-1]}: {_gist(res)[:120]}"
                message = (res.get("message") or "")[:progress.MESSAGE_CHARS]
    if failed == 0:
        return (progress.PublicCheck(progress.PASS, passed) if passed
                else progress.PublicCheck(progress.ERROR, detail="every public test was skipped"))
    if classify(passed, failed, not_started) == State.NOT_STARTED:
        return progress.PublicCheck(progress.NOT_STARTED, failed=failed)
    return progress.PublicCheck(progress.FAIL, passed, failed, detail, message)


def _state(public: progress.PublicCheck | None, full: progress.FullCheck | None) -> str:
    """The exercise's state: done only on full marks in the full check of the current content."""
    if public is None:
        return MISSING
    if public.state == progress.NOT_STARTED:
        return NOT_STARTED
    if full is not None:
        return DONE if full.done else FAILING
    return {progress.PASS: PUBLIC_PASS, progress.FAIL: FAILING, progress.NOT_STARTED: NOT_STARTED,
            progress.ERROR: ERROR}[public.state]


def _status(ex: catalog.Exercise, root: Path, public: progress.PublicCheck | None,
            full: progress.FullCheck | None, store: progress.Store, remembered: bool) -> ExerciseStatus:
    if public is None:
        return ExerciseStatus(ex, MISSING, progress.PublicCheck(MISSING, detail=f"no file {ex.relpath} in {root}"))
    note = ""
    if full is None and public.state != progress.NOT_STARTED:
        note = (NO_HIDDEN_TESTS if not progress.has_full_check(ex)
                else CHANGED if store.ever_fully_checked(ex) else NOT_CHECKED)
    return ExerciseStatus(ex, _state(public, full), public, full, note, remembered)


def remembered_status(ex: catalog.Exercise, root: Path, store: progress.Store) -> ExerciseStatus | None:
    """What is remembered of ``ex`` in ``root``, running nothing; None when the module's current
    content was never checked."""
    digest = progress.file_digest(Path(root) / ex.relpath)
    public = store.public(ex, digest) if digest else None
    if digest is not None and public is None:
        return None
    return _status(ex, Path(root), public, store.full(ex, digest), store, True)


def remembered_states(exercises: list[catalog.Exercise]) -> dict[str, str]:
    """Each exercise's state in the kit's ``exercises/`` by id, from the remembered checks alone
    (``grader list``): running nothing, an exercise whose current content was never checked is
    ``"not checked"``."""
    store, root = progress.Store(), catalog.KIT_ROOT / "exercises"
    states = {ex.id: remembered_status(ex, root, store) for ex in exercises}
    return {i: s.state if s else "not checked" for i, s in states.items()}


def _full_check(root: Path, exercises: list[catalog.Exercise], digests: dict[str, str | None],
                store: progress.Store, timeout_s: float, test_timeout_s: float) -> list[str]:
    """Grade ``exercises`` as ``grader score`` does and remember each result; returns problems."""
    from grader.engine import scoring
    from grader.engine.sandbox import Limits

    report = scoring.score_submission(root, [ex.id for ex in exercises],
                                      limits=Limits(wall_s=timeout_s, test_s=test_timeout_s))
    progress.remember_report(report, digests, store)
    return [f"full check: {p}" for p in report.problems]


def collect(root: Path, exercises: list[catalog.Exercise], *, full: bool = False, rerun: bool = False,
            timeout_s: float = defaults.WALL_S, test_timeout_s: float = defaults.TEST_TIMEOUT_S,
            store: progress.Store | None = None) -> Progress:
    """The status of ``exercises`` in ``root`` (laid out like exercises/).

    Public checks are remembered per module digest: only modules without a remembered result
    (all of them with ``rerun``) run their public tests. With ``full``, the exercises whose public
    checks pass and whose full check is not remembered (or all of those, with ``rerun``) are
    graded with their hidden tests too.
    """
    started = time.monotonic()
    root = Path(root).resolve()
    store = store or progress.Store()
    digests = progress.module_digests(root, exercises)
    publics: dict[str, progress.PublicCheck] = {}
    remembered: set[str] = set()
    for ex in exercises:
        if digests[ex.id] is None:
            continue
        if not ex.public_tests.is_file():
            publics[ex.id] = progress.PublicCheck(progress.ERROR, detail="the kit has no public tests for it")
            continue
        known = None if rerun else store.public(ex, digests[ex.id])
        if known is not None:
            publics[ex.id] = known
            remembered.add(ex.id)
    to_run = [ex for ex in exercises if digests[ex.id] is not None and ex.id not in publics]
    problems: list[str] = []
    if to_run:
        records, output, code = _run_public_tests(root, to_run, timeout_s, test_timeout_s)
        results = {r["nodeid"]: r for r in _records.of(records, Event.RESULT)}
        collected: dict[str, list[dict]] = {}
        for rec in _records.of(records, Event.COLLECTED):
            collected.setdefault(rec["exercise"], []).append(rec)
        finished = code in (0, 1) and bool(_records.of(records, Event.FINISHED))
        for ex in to_run:
            publics[ex.id] = _public_check(ex, collected.get(ex.id, []), results)
            if finished:  # an interrupted run's verdicts are not worth remembering
                store.remember_public(ex, digests[ex.id], publics[ex.id])
        if not finished:
            problems.append(f"the public test run ended abnormally (exit code {code}); its last output:\n"
                            + output[-2000:])
    fulls = {ex.id: None if rerun else store.full(ex, digests[ex.id]) for ex in exercises}
    to_check = [ex for ex in exercises if full and progress.has_full_check(ex) and fulls[ex.id] is None
                and ex.id in publics and publics[ex.id].state == progress.PASS]
    if to_check:
        problems += _full_check(root, to_check, digests, store, timeout_s, test_timeout_s)
        fulls.update({ex.id: store.full(ex, digests[ex.id]) for ex in to_check})
    store.save()
    statuses = [_status(ex, root, publics.get(ex.id), fulls[ex.id], store, ex.id in remembered)
                for ex in exercises]
    return Progress(root, statuses, round(time.monotonic() - started, 2), problems,
                    ran_public=len(to_run), ran_full=len(to_check))


def _by_topic(exercises: list[ExerciseStatus]) -> dict[str, list[ExerciseStatus]]:
    topics: dict[str, list[ExerciseStatus]] = {}
    for s in exercises:
        topics.setdefault(f"{s.exercise.framework}.{s.exercise.topic}", []).append(s)
    return topics


def _topic_line(topic: str, rows: list[ExerciseStatus]) -> str:
    per_level = []
    for level in catalog.DIFFICULTIES:
        of_level = [s for s in rows if s.exercise.difficulty == level]
        if of_level:
            per_level.append(f"{level} {sum(s.state == DONE for s in of_level)}/{len(of_level)}")
    done = sum(s.state == DONE for s in rows)
    return f"{topic}: {done}/{len(rows)} done   ({', '.join(per_level)})"


def _footer(progress_: Progress) -> list[str]:
    """The totals, what to run for the full check, the next exercise and the problems."""
    total = len(progress_.exercises)
    counts = ", ".join(f"{progress_.count(state)} {state}" for state in STATES[1:] if progress_.count(state))
    ran = ("every public check remembered" if progress_.ran_public == 0
           else "every public check run" if progress_.ran_public == total
           else f"{progress_.ran_public} public check(s) run, the rest remembered")
    if progress_.ran_full:
        ran += f", {progress_.ran_full} full check(s) run"
    lines = [f"{progress_.count(DONE)}/{total} exercises done" + (f", {counts}" if counts else "")
             + f"  ({progress_.duration_s:.1f} s; {ran})"]
    waiting = progress_.awaiting_full_check()
    if waiting:
        lines.append(f"{len(waiting)} exercise(s) pass their public checks: `grader status --full` "
                     "runs their hidden tests too (done means full marks there)")
    if any(s.state == PUBLIC_PASS and s.full_note == NO_HIDDEN_TESTS for s in progress_.exercises):
        lines.append("This kit has no hidden tests for some exercises: they run when your work is graded.")
    nxt = progress_.next_exercise()
    if nxt is None:
        lines.append(ALL_DONE)
    else:
        ex = nxt.exercise
        lines.append(f"next: {ex.id} ({ex.difficulty}, {ex.minutes} min): {ex.title}")
        lines.append(f"      edit {progress_.root / ex.relpath}; `grader hint {ex.id}` shows hints")
    lines.extend(f"problem: {p}" for p in progress_.problems)
    return lines


def render(progress_: Progress) -> str:
    """The plain-text progress view (pipes, logs): per topic, counts per difficulty, then per
    exercise its state, public check, full check and what to look at; then the next step."""
    lines = [f"tensor-drills progress in {progress_.root}", ""]
    width = max([len(s.exercise.stem) for s in progress_.exercises] + [4])
    public_w = max([len(s.public_text) for s in progress_.exercises] + [6])
    full_w = max([len(s.full_text) for s in progress_.exercises] + [4])
    state_w = max(len(state) for state in STATES)
    for topic, rows in _by_topic(progress_.exercises).items():
        lines.append(_topic_line(topic, rows))
        for s in rows:
            ex = s.exercise
            lines.append(f"  {s.state:<{state_w}}  {ex.stem:<{width}}  {ex.difficulty:<6} {ex.minutes:>3} min  "
                         f"public {s.public_text:<{public_w}}  full {s.full_text:<{full_w}}  "
                         f"{s.detail or ex.title}")
        lines.append("")
    lines.extend(_footer(progress_))
    return "\n".join(lines) + "\n"


def print_rich(progress_: Progress, console) -> None:
    """The progress view on a terminal: a coloured table per topic, then the footer."""
    from rich.table import Table
    from rich.text import Text

    console.print(Text(f"tensor-drills progress in {progress_.root}", style="bold"))
    for topic, rows in _by_topic(progress_.exercises).items():
        table = Table(title=Text(_topic_line(topic, rows), style="bold"), title_justify="left",
                      show_edge=False, pad_edge=False, expand=False)
        for name, justify in (("state", "left"), ("exercise", "left"), ("level", "left"),
                              ("min", "right"), ("public", "left"), ("full", "left"), ("", "left")):
            table.add_column(name, justify=justify, no_wrap=name != "")
        for s in rows:
            ex = s.exercise
            table.add_row(Text(s.state, style=_console.STATE_STYLES.get(s.state, "")), ex.stem, ex.difficulty,
                          str(ex.minutes), s.public_text, Text(s.full_text, style="bold" if s.full else "dim"),
                          Text(s.detail or ex.title, style="" if s.detail else "dim"))
        console.print(table)
    console.print()
    for line in _footer(progress_):
        console.print(Text(line, style="red" if line.startswith("problem:") else ""))
