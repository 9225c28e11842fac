"""Remembered progress: what the public and the full check said about each exercise's content.

``grader status``, ``grader list``, ``grader watch`` and the learner's pytest summary show done
marks without running everything again: every check's result is kept in the kit's
``.grader/progress.json`` (git-ignored; ``$DRILLS_STATE_DIR`` moves the folder), keyed by a
digest of the exercise module's bytes and of the tests it ran against (and the grader's
version). A result counts only for exactly that
content: edit the module, or update the kit's tests, and the exercise reads "changed since last
check" until it is checked again. A few results are kept per exercise, so reverting a file
finds its verdict again.

A *public check* runs the public tests (``exercises/.../test_<name>.py``); the *full check* runs
the public and the hidden tests in the grader's sandbox, as ``grader score`` does. An exercise is
*done* only when the full check of its current content gave full marks.

This module imports neither torch nor TensorFlow.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from grader import __version__, catalog
from grader.outcomes import NOT_STARTED_PREFIX, CheckState, State, TestStatus, Visibility, classify

STATE_DIR = ".grader"
PROGRESS_FILE = "progress.json"
FORMAT = 1
KEPT_PER_EXERCISE = 8  # results kept per exercise and kind (public, full), newest first
MESSAGE_CHARS = 2000  # of a first failure's message

# The public check's outcome for one module's content.
PASS, FAIL, NOT_STARTED, ERROR = CheckState.PASS, CheckState.FAIL, CheckState.NOT_STARTED, CheckState.ERROR


STATE_ENV = "DRILLS_STATE_DIR"


def state_dir() -> Path:
    """The folder of the grader's learner state (progress, kept attempts): ``$DRILLS_STATE_DIR``
    when set, else the kit's own ``.grader/``."""
    return Path(os.environ[STATE_ENV]) if os.environ.get(STATE_ENV) else catalog.KIT_ROOT / STATE_DIR


def ensure_state_dir() -> Path:
    """The state folder, made if needed, with a ``.gitignore`` that keeps it out of the kit's git.

    Raises:
        OSError: it cannot be made.
    """
    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# The grader's learner state: never part of the kit.\n*\n", encoding="utf-8")
    return folder


def file_digest(path: Path) -> str | None:
    """SHA-256 of the file's bytes; None when there is no such file."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _tests_digest(files: list[Path]) -> str:
    h = hashlib.sha256(__version__.encode())
    for path in files:
        h.update(b"\0" + (file_digest(path) or "absent").encode())
    return h.hexdigest()


def public_tests_digest(ex: catalog.Exercise) -> str:
    """What a public check's result depends on besides the module: the public tests, the grader."""
    return _tests_digest([ex.public_tests])


def full_tests_digest(ex: catalog.Exercise) -> str:
    """What a full check's result depends on besides the module: both test files, the grader."""
    return _tests_digest([ex.public_tests, ex.hidden_tests])


def has_full_check(ex: catalog.Exercise) -> bool:
    """Whether this kit holds the exercise's hidden tests (a take-home bundle does not)."""
    return ex.hidden_tests.is_file()


@dataclass(frozen=True)
class PublicCheck:
    state: str  # pass | fail | not started | error
    passed: int = 0
    failed: int = 0
    detail: str = ""  # the first failing test and what it said, or why no test ran
    message: str = ""  # the first failure's whole message (the learner's frames included)


@dataclass(frozen=True)
class FullCheck:
    score: float
    max_score: float
    first_failure: str = ""  # "test name: first line of its message"
    message: str = ""  # the first failure's whole message, as grader score shows it

    @property
    def done(self) -> bool:
        return self.max_score > 0 and self.score >= self.max_score

    @property
    def points(self) -> str:
        return f"{self.score:g}/{self.max_score:g}"


class Store:
    """The remembered results, read from and written to ``path`` (default: the kit's state file).

    A missing or unreadable file is an empty store; writes are atomic and merge with what another
    process (a ``grader watch`` beside a ``grader status``) wrote in the meantime.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else state_dir() / PROGRESS_FILE
        self._data = self._read()
        self._changed: list[tuple[str, str, dict]] = []

    def _read(self) -> dict:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return {}
        exercises = data.get("exercises")
        return exercises if isinstance(exercises, dict) else {}

    def _entries(self, ex_id: str, kind: str) -> list[dict]:
        entries = self._data.get(ex_id, {}).get(kind, [])
        return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []

    def _find(self, ex_id: str, kind: str, module: str | None, tests: str) -> dict | None:
        return next((e for e in self._entries(ex_id, kind)
                     if module is not None and e.get("module") == module and e.get("tests") == tests), None)

    def public(self, ex: catalog.Exercise, module: str | None) -> PublicCheck | None:
        """The public check remembered for this module digest and the kit's public tests."""
        entry = self._find(ex.id, "public", module, public_tests_digest(ex))
        try:
            return PublicCheck(**entry["result"]) if entry else None
        except (TypeError, KeyError):
            return None

    def full(self, ex: catalog.Exercise, module: str | None) -> FullCheck | None:
        """The full check remembered for this module digest and the kit's tests."""
        entry = self._find(ex.id, "full", module, full_tests_digest(ex))
        try:
            return FullCheck(**entry["result"]) if entry else None
        except (TypeError, KeyError):
            return None

    def ever_fully_checked(self, ex: catalog.Exercise) -> bool:
        """Whether some content of this exercise was fully checked (maybe not the current one)."""
        return bool(self._entries(ex.id, "full"))

    def remember_public(self, ex: catalog.Exercise, module: str, check: PublicCheck) -> None:
        self._remember(ex.id, "public", {"module": module, "tests": public_tests_digest(ex),
                                         "result": asdict(check)})

    def remember_full(self, ex: catalog.Exercise, module: str, check: FullCheck) -> None:
        self._remember(ex.id, "full", {"module": module, "tests": full_tests_digest(ex),
                                       "result": asdict(check)})

    def _remember(self, ex_id: str, kind: str, entry: dict) -> None:
        entry["checked_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self._put(self._data, ex_id, kind, entry)
        self._changed.append((ex_id, kind, entry))

    @staticmethod
    def _put(data: dict, ex_id: str, kind: str, entry: dict) -> None:
        record = data.setdefault(ex_id, {})
        if not isinstance(record, dict):
            record = data[ex_id] = {}
        old = [e for e in record.get(kind, []) if isinstance(e, dict)
               and (e.get("module"), e.get("tests")) != (entry["module"], entry["tests"])]
        record[kind] = [entry, *old][:KEPT_PER_EXERCISE]

    def save(self) -> bool:
        """Write what was remembered since loading; False (nothing written) when the kit's state
        folder cannot be written, which only costs re-running checks later."""
        if not self._changed:
            return True
        merged = self._read()
        for ex_id, kind, entry in self._changed:
            self._put(merged, ex_id, kind, entry)
        try:
            if self.path.parent == state_dir():
                ensure_state_dir()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".progress-", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"format": FORMAT, "exercises": merged}, handle, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
        except OSError:
            return False
        self._data, self._changed = merged, []
        return True


def full_check_of(result) -> FullCheck:
    """A ``scoring.ExerciseResult`` as a remembered full check."""
    first = next((t for t in result.tests if t.status not in (TestStatus.PASSED, TestStatus.NOT_RUN)), None)
    if first is None:
        return FullCheck(result.score, result.max_score)
    lines = (first.message or first.status).strip().splitlines()
    gist = f"{first.name}: {lines[0][:160] if lines else first.status}"
    return FullCheck(result.score, result.max_score, gist, first.message[:MESSAGE_CHARS])


def public_check_of(result) -> PublicCheck:
    """The public tests' part of a ``scoring.ExerciseResult`` as a remembered public check."""
    public = [t for t in result.tests if t.visibility == Visibility.VISIBLE
              and t.status not in (TestStatus.NOT_RUN, TestStatus.SKIPPED)]
    failed = [t for t in public if t.status != TestStatus.PASSED]
    if not public:
        return PublicCheck(ERROR, detail="no public test ran")
    not_started = sum(t.message.startswith(NOT_STARTED_PREFIX) for t in failed)
    if classify(len(public) - len(failed), len(failed), not_started) == State.NOT_STARTED:
        return PublicCheck(NOT_STARTED, failed=len(failed))
    if failed:
        lines = (failed[0].message or failed[0].status).strip().splitlines()
        detail = f"{failed[0].name.split('::', 1)[-1]}: {lines[0][:120] if lines else failed[0].status}"
        return PublicCheck(FAIL, len(public) - len(failed), len(failed), detail,
                           failed[0].message[:MESSAGE_CHARS])
    return PublicCheck(PASS, len(public))


def remember_report(report, digests: dict[str, str | None], store: Store | None = None) -> Store:
    """Remember a ``grader score`` report of the learner's modules, whose digests were taken
    before the run (a file saved during the run keeps no verdict it did not get)."""
    store = store or Store()
    for result in report.exercises:
        digest = digests.get(result.id)
        if digest is None or not result.tests or report.problems:
            continue
        ex = catalog.get_exercise(result.id)
        store.remember_public(ex, digest, public_check_of(result))
        if has_full_check(ex):
            store.remember_full(ex, digest, full_check_of(result))
    store.save()
    return store


def module_digests(root: Path, exercises: list[catalog.Exercise]) -> dict[str, str | None]:
    """Each exercise's module digest under ``root`` (None where the module is missing)."""
    return {ex.id: file_digest(Path(root) / ex.relpath) for ex in exercises}
