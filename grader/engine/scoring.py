"""Score a submission: run its exercises' public and hidden tests in a sandboxed child.

The child (see ``grader.engine.sandbox``) is ``python -m pytest`` with the kit's own configuration, a
staged copy of the submission's exercise modules as ``--impl-root`` and grading mode on. It
streams signed JSON records (collected tests, results) over a pipe the grader owns. The score
counts only tests the child reported as passed: a test that was collected but never reported (a
crash, an early exit, a timeout) scores 0 with a reason. Tests that need CUDA on a machine
without it are left out of ``max_score``.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from grader import _records, catalog
from grader._records import Event
from grader._until_failed import FailureGroups
from grader.engine import redact, similarity
from grader.engine.intake import SubmissionError, open_submission
from grader.engine.sandbox import MAX_MODULE_BYTES, ChildRun, Limits, run_tests
from grader.outcomes import NOT_STARTED_PREFIX, State, TestStatus, classify

__all__ = ["Report", "SubmissionError", "candidate_name", "score_path", "score_submission"]

# The submitted module is kept in the report (for the hiring report and the batch's comparison of
# submissions with each other) up to this many characters.
MAX_CODE_CHARS = 100_000


@dataclass
class TestResult:
    __test__ = False  # not a pytest test class, despite the name
    name: str
    status: str  # a TestStatus
    score: float
    max_score: float
    visibility: str  # a Visibility
    message: str = ""
    # A check of this test took its evidence from the submission's own process (the op counts of
    # an exercise graded in a separate process): the submission could have changed that evidence.
    checked_in_executor: bool = False


@dataclass
class ExerciseResult:
    id: str
    score: float = 0.0
    max_score: float = 0.0
    tests: list[TestResult] = field(default_factory=list)
    # The module as it was graded (None: none was submitted), at most MAX_CODE_CHARS characters.
    code: str | None = None
    # Its similarity to the reference solution (``grader.engine.similarity.Similarity.to_dict``).
    similarity: dict | None = None

    @property
    def status(self) -> State:
        """done, failing, not started (stub untouched) or not run (no test could run here)."""
        counted = [t for t in self.tests if t.status != TestStatus.NOT_RUN]
        if not counted:
            return State.NOT_RUN
        passed = sum(t.status == TestStatus.PASSED for t in counted)
        not_started = sum(t.status != TestStatus.PASSED and t.message.startswith(NOT_STARTED_PREFIX)
                          for t in counted)
        return classify(passed, len(counted) - passed, not_started) or State.DONE


@dataclass
class Report:
    submission: str
    score: float
    max_score: float
    exercises: list[ExerciseResult]
    duration_s: float
    problems: list[str] = field(default_factory=list)
    ignored_files: list[str] = field(default_factory=list)
    sandbox: dict = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)  # for human review; tampering also zeroes
    test_time_s: float = 0.0  # time spent inside the tests themselves (the rest is overhead)
    candidate: str = ""  # who handed it in, for people (``candidate_name``); never a staging path

    def to_dict(self) -> dict:
        """The stable JSON shape: score, max_score, exercises[{id, score, max_score, tests[...]}]."""
        data = asdict(self)
        for ex, raw in zip(self.exercises, data["exercises"]):
            raw["status"] = ex.status
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Report:
        """The report that ``to_dict`` wrote (fields an older kit did not write take their defaults)."""
        known = {f.name for f in fields(cls)} - {"exercises"}
        exercises = []
        for raw in data.get("exercises", []):
            tests = [TestResult(**{k: t[k] for k in t if k in _TEST_FIELDS}) for t in raw.get("tests", [])]
            exercises.append(ExerciseResult(raw["id"], raw.get("score", 0.0), raw.get("max_score", 0.0), tests,
                                            raw.get("code"), raw.get("similarity")))
        return cls(**{k: v for k, v in data.items() if k in known}, exercises=exercises)


_TEST_FIELDS = {f.name for f in fields(TestResult)}


def candidate_name(path: Path, manifest: dict | None = None) -> str:
    """Who handed in ``path``: the take-home manifest's ``candidate`` when it names one, else the
    submission's own name (a zip's without ``.zip``; for a folder named ``exercises``, the folder
    it was handed in as)."""
    named = manifest.get("candidate") if manifest else None
    if isinstance(named, str) and named.strip():
        return named.strip()
    path = Path(path).absolute()
    if path.name == "exercises" and path.parent.name:
        path = path.parent
    return path.stem if path.suffix.lower() in (".zip", ".ipynb") else path.name


def submitted_code(path: Path) -> str | None:
    """The module at ``path`` as the grader stages it, cut at ``MAX_CODE_CHARS``; None when it is
    not staged (missing, a symbolic link, larger than the sandbox takes)."""
    if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_MODULE_BYTES:
        return None
    text = path.read_text(encoding="utf-8", errors="replace")
    if len(text) > MAX_CODE_CHARS:
        text = text[:MAX_CODE_CHARS] + f"\n# [{len(text) - MAX_CODE_CHARS} more characters not kept in the report]\n"
    return text


_KILLED = {
    "time": "the test run was stopped at the wall-clock limit of {wall:g} s",
    "output": "the test run was stopped for flooding its output (over {out} bytes)",
    "report": "the test run was stopped for flooding the grader's report channel",
    "test": "the test run was stopped after tests ran past their time limit again and again",
}


def _fold(run: ChildRun, exercises: list[catalog.Exercise],
          limits: Limits) -> tuple[list[ExerciseResult], list[str]]:
    by_id = {ex.id: ExerciseResult(ex.id) for ex in exercises}
    records = run.records
    results: dict[str, dict] = {}
    for r in _records.of(records, Event.RESULT):
        results.setdefault(r["nodeid"], r)  # first report wins; pytest reports each test once
    finished = bool(_records.of(records, Event.FINISHED))
    problems: list[str] = []
    if run.killed_for:
        problems.append(_KILLED[run.killed_for].format(wall=limits.wall_s, out=limits.output_bytes))
    elif not finished:
        problems.append(f"the test run ended early (exit code {run.exit_code}) before reporting "
                        "all results")
    if run.forged:
        problems.append(f"{run.forged} forged record(s) on the report channel were rejected")
    if not _records.of(records, Event.COLLECTED):
        problems.append("no tests were collected: the kit's test files could not be loaded")
    missing_reason = problems[0] if problems else "the test never reported a result"
    redact_message = redact.redactor([ex.hidden_tests for ex in exercises],
                                     [ex.public_tests for ex in exercises])
    for rec in _records.of(records, Event.COLLECTED):
        ex = by_id.get(rec["exercise"])
        if ex is None:
            continue
        points = float(rec["points"])
        name = rec["nodeid"].rsplit("/", 1)[-1]
        res = results.get(rec["nodeid"])
        if rec.get("unavailable"):
            test = TestResult(name, TestStatus.NOT_RUN, 0.0, 0.0, rec["visibility"], rec["unavailable"])
        elif res is None:
            test = TestResult(name, TestStatus.MISSING, 0.0, points, rec["visibility"], missing_reason)
        else:
            status = res["status"]
            score = points if status == TestStatus.PASSED else 0.0
            message = redact_message(res["message"] or ("skipped" if status == TestStatus.SKIPPED else ""))
            test = TestResult(name, status, score, points, rec["visibility"], message,
                              res.get("checked_in_executor") is True)
        ex.tests.append(test)
        ex.score += test.score
        ex.max_score += test.max_score
    for rec in _records.of(records, Event.TAMPER):
        ex = by_id.get(rec["exercise"])
        if ex is not None:
            ex.score = 0.0
            for test in ex.tests:
                test.score = 0.0
        problems.append(f"tampering detected while testing {rec['exercise']}: {rec['reason']} "
                        "(the exercise scores 0)")
    return list(by_id.values()), problems


def score_submission(submission: Path | str, exercise_ids: list[str] | None = None, *,
                     limits: Limits | None = None, hide: list[Path] = (), fork: bool = False,
                     stop_at_first_failure: bool = False,
                     select: Mapping[str, Collection[str]] | None = None,
                     until_failed: FailureGroups | None = None, shrink: bool = True) -> Report:
    """Grade ``submission`` (a directory laid out like ``exercises/``) on the chosen exercises.

    ``hide``: further directories the child must not see (e.g. the other submissions of a batch).
    ``fork``: fork the grading child from a fork server that has preloaded the frameworks (fast
    when grading many submissions; see ``grader.engine.forkserver``).
    ``stop_at_first_failure``: stop at the first test that does not pass; the tests after it read
    as missing. The score then says only whether the submission loses a point (mutation testing).
    ``select``: exercise id -> the only tests of it to run (function names, or ``name[case]``); the
    others are left out of the report, so its score is out of the selected tests' points.
    ``until_failed``: exercise id -> groups of its tests (names as for ``select``); a test every
    group naming which already has a failing test does not run and reads as missing
    (``grader._until_failed``). The score then says only which groups fail (``grader verify``).
    ``shrink``: False reports a failing hypothesis test's first failing example, unshrunk: for a
    run that needs only which tests fail (which does not change), not the simplest example.

    Raises:
        SubmissionError: ``submission`` is not a directory.
        catalog.CatalogError: an exercise id is unknown.
    """
    submission = Path(submission)
    if not submission.is_dir():
        raise SubmissionError(f"submission must be a directory laid out like exercises/: {submission}")
    return _score(submission, catalog.select(exercise_ids), limits or Limits(), list(hide), fork,
                  stop_at_first_failure, select, until_failed, shrink)


def _score(submission: Path, exercises: list[catalog.Exercise], limits: Limits, hide: list[Path],
           fork: bool, stop_at_first_failure: bool = False,
           select: Mapping[str, Collection[str]] | None = None,
           until_failed: FailureGroups | None = None, shrink: bool = True) -> Report:
    started = time.monotonic()
    code = {ex.id: submitted_code(submission / ex.relpath) for ex in exercises}
    comparing: list[Future] = []
    with ThreadPoolExecutor(1) as helper:
        run = run_tests(submission.resolve(), exercises, limits, hide=hide, fork=fork,
                        stop_at_first_failure=stop_at_first_failure, select=select, until_failed=until_failed,
                        shrink=shrink, on_start=lambda: comparing.append(helper.submit(similarity.to_references, code)))
    results, problems = _fold(run, exercises, limits)
    for result in results:
        result.code = code[result.id]
    if problems and not any(t.status == TestStatus.PASSED for ex in results for t in ex.tests):
        problems.append("last output of the test run:\n"
                        + redact.redact(run.output[-3000:], [ex.hidden_tests for ex in exercises],
                                        [ex.public_tests for ex in exercises]))
    sandbox = _records.first(run.records, Event.SANDBOX)
    sandbox = {**run.isolation, **{k: v for k, v in sandbox.items() if k != "event"}}
    flags = [str(f) for f in run.findings]
    test_time = sum(r.get("duration", 0.0) for r in _records.of(run.records, Event.RESULT))
    report = Report(str(submission), sum(e.score for e in results), sum(e.max_score for e in results),
                    results, round(time.monotonic() - started, 2), problems, run.ignored, sandbox,
                    flags, round(test_time, 3), candidate_name(submission))
    similarity.flag_near_copies(report, comparing[0].result())
    return report


def score_path(path: Path | str, exercise_ids: list[str] | None = None, *, limits: Limits | None = None,
               hide: list[Path] = (), fork: bool = False) -> Report:
    """Grade what was handed in at ``path``: a folder or a ``.zip``, wrapped in any folders.

    The exercises graded are ``exercise_ids``, else those of the take-home manifest the
    submission carries (``grader.engine.intake``), else the whole catalog. Problems of the intake (no
    exercise module found, zip entries left out) head the report's problems; near copies of the
    reference solutions are flagged (``score_submission``). ``report.submission`` is ``path`` as given,
    ``report.candidate`` is ``candidate_name`` of it.

    Raises:
        SubmissionError: ``path`` is missing, neither a folder nor a zip, or an unusable zip.
        catalog.CatalogError: an exercise id (given or in the manifest) is unknown.
    """
    wanted = catalog.select(exercise_ids) if exercise_ids else None
    with open_submission(Path(path), wanted) as opened:
        exercises = wanted
        if exercises is None and opened.manifest is not None:
            ids = opened.manifest["exercises"]
            unknown = [i for i in ids if i not in catalog.load_catalog()]
            if unknown:
                raise catalog.CatalogError(
                    f"the submission's take-home manifest lists {', '.join(unknown)}, which this "
                    f"kit does not have (the bundle came from kit version "
                    f"{opened.manifest.get('kit_version', 'unknown')}); grade with --exercise ID")
            exercises = catalog.select(ids)
        report = _score(opened.root, exercises or catalog.select(), limits or Limits(), list(hide), fork)
    report.problems[:0] = opened.problems
    report.submission = str(path)
    report.candidate = candidate_name(path, opened.manifest)
    return report
