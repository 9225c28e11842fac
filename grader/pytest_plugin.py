"""The kit's pytest plugin, registered through the ``pytest11`` entry point.

Learner mode (plain ``pytest exercises/``): stubs that still raise ``NotImplementedError`` are
reported as *not started* in one line, hidden-test failures show the message without the test's
source, and the run ends with a per-exercise progress summary.

Grading mode (``--grading``, used by ``grader score``): hypothesis is derandomized with fixed
example counts and no database, and every test result is streamed as JSON lines to the file
descriptor given by ``--report-fd`` (a pipe owned by the grader).

This module imports neither torch nor TensorFlow; collecting a TensorFlow exercise's tests
imports ``grader.tfchecks`` first (see ``pytest_collect_file``).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import faulthandler
import gc
import importlib
import json
import os
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from grader import _canary, catalog, defaults, feedback
from grader import _records as records
from grader._loader import ImplementationError, MissingImplementation, load_implementation
from grader._preload import warm
from grader._timelimit import time_limit
from grader._until_failed import UntilFailed
from grader.outcomes import State, TestStatus, Visibility, classify

CUDA_SKIP_REASON = "needs CUDA, which this machine does not have"

_EXERCISE = pytest.StashKey["catalog.Exercise | None"]()
_VISIBILITY = pytest.StashKey[Visibility]()
_COLLECTED_RECORD = pytest.StashKey[str]()  # an exercise test's "collected" record, encoded
_ABSENT_RECORD = pytest.StashKey[str]()  # its "not started" result when its module is absent, encoded
_GROUPS = pytest.StashKey["list[_ExerciseTests]"]()  # a fork server's session, by exercise (``index_session``)
_IMPL_ROOT = pytest.StashKey[Path]()
_PROGRESS = pytest.StashKey[dict]()
_REPORT = pytest.StashKey["object"]()
_TEST_TIMEOUT = pytest.StashKey[float]()
_EXECUTOR = pytest.StashKey["object"]()  # grader.remote.Executors of a grading session, or None
_UNTIL_FAILED = pytest.StashKey["UntilFailed | None"]()  # --until-failed's groups, or None
_MAIN_PID = os.getpid()  # reset in pytest_configure: the process that runs this session


@dataclass
class _Progress:
    """Outcomes per exercise, for the learner summary."""

    passed: int = 0
    failed: int = 0
    not_started: int = 0
    skipped: int = 0
    first_failure: str = ""
    not_started_because: str = ""
    skipped_because: str = ""
    ran: set[Visibility] = field(default_factory=set)  # the visibilities of the tests that ran


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tensor-drills")
    group.addoption("--impl-root", metavar="DIR", default=None,
                    help="directory holding the modules under test, laid out like exercises/ "
                         "(default: the kit's exercises/)")
    group.addoption("--grading", action="store_true", default=False,
                    help="grading mode: derandomized hypothesis, no example database")
    group.addoption("--test-timeout", type=float, default=defaults.TEST_TIMEOUT_S, metavar="S",
                    help="limit per exercise test in seconds, 0 for none (default: %(default)s)")
    group.addoption("--report-fd", type=int, default=None, metavar="FD",
                    help=argparse.SUPPRESS)
    group.addoption("--report-key-fd", type=int, default=None, metavar="FD",
                    help=argparse.SUPPRESS)
    group.addoption("--warm-import", action="append", default=[], metavar="MODULE",
                    help=argparse.SUPPRESS)  # imported before any test's time starts
    group.addoption("--select-test", action="append", default=[], metavar="EXERCISE::TEST",
                    help="run only these tests of EXERCISE (a test function, or one case "
                         "'name[case]'); its other tests are deselected. Exercises never named "
                         "run all their tests. May be repeated.")
    group.addoption("--until-failed", default=None, metavar="JSON",
                    help=argparse.SUPPRESS)  # grader._until_failed: exercise id -> groups of test names
    group.addoption("--no-shrink", action="store_true", default=False,
                    help=argparse.SUPPRESS)  # only the verdict is read (feedback.report_first_failing_examples)
    group.addoption("--start-word", default=None, metavar="FIFO",
                    help=argparse.SUPPRESS)  # no test before the grader's word (wait_for_word)


def pytest_configure(config: pytest.Config) -> None:
    global _MAIN_PID
    _MAIN_PID = os.getpid()
    # At exit, after the handlers registered later (TensorFlow's among them) ran: the interpreter
    # would then collect every object the run made (0.3 s after importing torch, 0.5 s after
    # TensorFlow). Objects still alive at exit need no collecting (nor does Python promise their
    # finalizers run).
    atexit.register(gc.freeze)
    defaults.quiet_tensorflow()  # before any test module imports TensorFlow
    for line in ("points(n): points a test is worth (default 1)",
                 "cuda: needs a CUDA device; skipped, never failed, without one",
                 "time_limit(s): a shorter limit than --test-timeout for this exercise test (one whose "
                 "likely wrong answers loop forever)"):
        config.addinivalue_line("markers", line)
    grading = config.getoption("grading")
    feedback.configure_hypothesis(grading=grading, on_import=not grading and _installed_with_hypothesis_hook(config))
    root = config.getoption("impl_root")
    config.stash[_IMPL_ROOT] = Path(root).resolve() if root else catalog.KIT_ROOT / "exercises"
    config.stash[_PROGRESS] = {}
    test_timeout = config.getoption("test_timeout")
    if not test_timeout >= 0 or test_timeout == float("inf"):
        raise pytest.UsageError(f"--test-timeout must be a number of seconds >= 0 (0 for no limit), "
                                f"got {test_timeout}")
    config.stash[_TEST_TIMEOUT] = test_timeout
    until_failed = config.getoption("until_failed")
    config.stash[_UNTIL_FAILED] = UntilFailed(json.loads(until_failed)) if until_failed else None
    fd, key_fd = config.getoption("report_fd"), config.getoption("report_key_fd")
    warm(config.getoption("warm_import"))
    config.stash[_EXECUTOR] = (_start_executor(config, [fd, key_fd], _exercises_of_args(config.args))
                               if fd is not None else None)
    config.stash[_REPORT] = records.writer(fd, key_fd) if fd is not None else None
    _emit(config, {"event": records.Event.SANDBOX, **_sandbox_facts()})
    if config.getoption("grading") and not config.pluginmanager.has_plugin("faulthandler"):
        # A crash's traceback goes to the child's output (fd 2, whatever it is when it crashes).
        faulthandler.enable(sys.__stderr__)


def _installed_with_hypothesis_hook(config: pytest.Config) -> bool:
    """Whether pytest loaded this plugin from an installed kit that registers
    ``feedback.on_hypothesis_import`` with hypothesis (an install older than that entry point, or a
    plugin named with ``-p``, does not)."""
    for plugin, dist in config.pluginmanager.list_plugin_distinfo():
        if plugin is sys.modules[__name__]:
            return any(ep.group == "hypothesis" and ep.value == f"{feedback.__name__}:on_hypothesis_import"
                       for ep in dist.entry_points)
    return False


def _exercises_of_args(args: list[str]) -> list[catalog.Exercise]:
    """The exercises whose test files the command line names; every exercise when it names
    anything else (a folder), whose tests could be any."""
    found = [catalog.exercise_for_test_file(Path(arg)) for arg in args]
    return list(catalog.load_catalog().values()) if not found or None in found else found


def _start_executor(config: pytest.Config, close: list[int | None], exercises: list[catalog.Exercise]):
    """The process that will import the submissions of ``separate_process`` exercises among
    ``exercises``, forked before this one reads its key (``grader.remote``); None when grading
    none of them, or outside grading."""
    if not config.getoption("grading") or not any(ex.separate_process for ex in exercises):
        return None
    from grader.remote import Executors

    return Executors.start(close=[fd for fd in close if fd is not None])


def pytest_unconfigure(config: pytest.Config) -> None:
    executor = config.stash.get(_EXECUTOR, None)
    if executor is not None and os.getpid() == _MAIN_PID:
        executor.close()


def _sandbox_facts() -> dict:
    """What isolation took effect in this process, as the grader's report states it."""
    import socket

    try:
        interfaces = [name for _, name in socket.if_nameindex()]
    except OSError:
        interfaces = []
    solutions = Path(__file__).resolve().parent.parent / "solutions"
    try:
        solutions_hidden = not any(solutions.iterdir())
    except OSError:
        solutions_hidden = True
    try:
        status = Path("/proc/self/status").read_text()
        cap_eff = int(next(line.split()[1] for line in status.splitlines() if line.startswith("CapEff")), 16)
    except (OSError, StopIteration, ValueError):
        cap_eff = -1
    return {"uid": os.getuid(), "capabilities": cap_eff != 0,
            "network_isolated": interfaces in ([], ["lo"]), "solutions_hidden": solutions_hidden,
            "kit_writable": os.access(Path(__file__).resolve().parent, os.W_OK)}


def _emit(config: pytest.Config, record: dict | list[dict] | records.Encoded) -> None:
    """Send ``record`` (or a list of records, as one signed line) to the grader, when grading."""
    write = config.stash.get(_REPORT, None)
    if write is not None:
        write(record)


def exercise_of(item: pytest.Item) -> catalog.Exercise | None:
    return item.stash.get(_EXERCISE, None)


def points_of(item: pytest.Item) -> float:
    marker = item.get_closest_marker("points")
    return float(marker.args[0]) if marker else 1.0


def _visibility(ex: catalog.Exercise, item: pytest.Item) -> Visibility:
    """Whether ``item``, a test of ``ex``, is one of its public or hidden tests (found once, at
    collection: a whole-catalog child reports thousands)."""
    found = item.stash.get(_VISIBILITY, None)
    if found is None:
        found = item.stash[_VISIBILITY] = (Visibility.HIDDEN if feedback.resolved(str(item.path)) == ex.hidden_tests
                                           else Visibility.VISIBLE)
    return found


def _check_libraries(ex: catalog.Exercise) -> tuple[str, ...]:
    """The frameworks whose check libraries ``ex``'s tests use (``grader._canary.FRAMEWORKS``)."""
    return _canary.FRAMEWORKS if ex.framework == "crossframework" else (ex.framework,)


def pytest_collect_file(file_path: Path) -> None:
    """Before the first test module of a TensorFlow exercise is imported (and could run an op at
    import): import the TensorFlow checks, which split the CPU into logical devices, possible
    only while no TensorFlow op has run (see ``grader.tfchecks._env``). PyTorch tests never
    import TensorFlow here."""
    ex = catalog.exercise_for_test_file(file_path)
    if ex is not None and ex.uses_tensorflow and "grader.tfchecks" not in sys.modules:
        with contextlib.suppress(ImportError):  # without TensorFlow, its test module says so itself
            importlib.import_module("grader.tfchecks")


def _selected_tests(config: pytest.Config) -> dict[str, set[str]]:
    """``--select-test`` as exercise id -> the test names chosen for it."""
    chosen: dict[str, set[str]] = {}
    for value in config.getoption("select_test"):
        ex_id, sep, name = value.partition("::")
        if not sep or not name:
            raise pytest.UsageError(f"--select-test {value!r}: expected EXERCISE::TEST")
        chosen.setdefault(ex_id, set()).add(name)
    return chosen


def _names_of(item: pytest.Item) -> set[str]:
    """The names a test goes by: its own and, for one case of a parametrized test, its function's."""
    return {item.name, getattr(item, "originalname", item.name)}


@dataclass(eq=False)  # one group is one group: `in` and `==` by identity
class _ExerciseTests:
    """One exercise's tests, in the session's order, with their records encoded once: a fork
    server groups its whole session so (``_by_exercise``), and each child narrows it an
    exercise at a time, not a test at a time (whole catalog: 40 ms a child)."""

    exercise: catalog.Exercise
    items: list[pytest.Item]
    collected: str  # the tests' "collected" records, encoded and comma-joined
    absent: str  # their "not started" results when the exercise's module is absent, likewise

    @classmethod
    def of(cls, ex: catalog.Exercise, items: list[pytest.Item]) -> _ExerciseTests:
        for item in items:
            if _COLLECTED_RECORD not in item.stash:
                unavailable = CUDA_SKIP_REASON if any(
                    m.kwargs.get("reason") == CUDA_SKIP_REASON for m in item.iter_markers("skip")) else ""
                item.stash[_COLLECTED_RECORD] = json.dumps(
                    {"event": records.Event.COLLECTED, "nodeid": item.nodeid, "exercise": ex.id,
                     "points": points_of(item), "visibility": _visibility(ex, item), "unavailable": unavailable})
                item.stash[_ABSENT_RECORD] = json.dumps(
                    {"event": records.Event.RESULT, "nodeid": item.nodeid, "exercise": ex.id,
                     "status": TestStatus.ERROR, "not_started": True, "duration": 0.0, "checked_in_executor": False,
                     "message": feedback.not_started(f"no file {ex.relpath} in the submission")})
        return cls(ex, items, ",".join(i.stash[_COLLECTED_RECORD] for i in items),
                   ",".join(i.stash[_ABSENT_RECORD] for i in items))

    def narrowed(self, names: set[str] | None, dropped: set[str]) -> tuple[_ExerciseTests, list[pytest.Item]]:
        """These tests but those whose names ``names`` (``--select-test``'s for this exercise;
        None: every test) does not hold and those whose node ids ``dropped`` holds; and the ones
        ``names`` left out."""
        if names is None and not dropped:
            return self, []
        kept, left_out = [], []
        for item in self.items:
            if item.nodeid in dropped:
                continue
            (kept if names is None or _names_of(item) & names else left_out).append(item)
        return (self if len(kept) == len(self.items) else _ExerciseTests.of(self.exercise, kept)), left_out


def _by_exercise(items: list[pytest.Item]) -> list[_ExerciseTests]:
    """The exercise tests among ``items``, one group per exercise, in the order of each
    exercise's first test."""
    grouped: dict[str, tuple[catalog.Exercise, list[pytest.Item]]] = {}
    for item in items:
        if (ex := exercise_of(item)) is not None:
            grouped.setdefault(ex.id, (ex, []))[1].append(item)
    return [_ExerciseTests.of(ex, its) for ex, its in grouped.values()]


def index_session(session: pytest.Session) -> None:
    """Group a fork server's collected session by exercise, with every test's records encoded,
    once for all its children (``start_forked_session`` narrows the groups)."""
    session.stash[_GROUPS] = _by_exercise(session.items)


def _narrow(config: pytest.Config, groups: list[_ExerciseTests], select: dict[str, set[str]],
            dropped: set[str] = frozenset()) -> list[_ExerciseTests]:
    """``groups`` but the tests ``select`` (exercise id -> test names, ``--select-test``; an
    exercise it does not name keeps every test) leaves out, which are deselected, and those
    ``dropped`` names by node id. Reports the rest as collected and returns them; in a grading
    child (one with a report channel), reports those of exercises whose module the submission
    lacks as not started, unrun, and leaves them out (a whole-catalog grading of a submission
    that attempts a few exercises would otherwise run thousands of tests only to see each fail
    at its first line)."""
    kept, left_out = [], []
    for group in groups:
        narrowed, out = group.narrowed(select.get(group.exercise.id), dropped)
        left_out += out
        if narrowed.items:
            kept.append(narrowed)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
    if kept:
        _emit(config, records.encoded_list(group.collected for group in kept))
    if config.stash.get(_REPORT, None) is None:
        return kept
    root = config.stash[_IMPL_ROOT]
    absent = [group for group in kept if not (root / group.exercise.relpath).is_file()]
    if absent:
        _emit(config, records.encoded_list(group.absent for group in absent))
    return [group for group in kept if group not in absent]


def _alone_first(config: pytest.Config, groups: list[_ExerciseTests]) -> list[_ExerciseTests]:
    """``groups``, each exercise's tests that ``--until-failed`` names alone first (``UntilFailed.alone``),
    each part in the session's order. Only the selected tests of such a run run (``--select-test``),
    so none runs in its grading order anyway: a test must fail, or pass, on its own."""
    until_failed = config.stash[_UNTIL_FAILED]
    if until_failed is None:
        return groups
    ordered = []
    for group in groups:
        alone = [until_failed.alone(group.exercise.id, _names_of(item)) for item in group.items]
        items = ([item for item, first in zip(group.items, alone) if first]
                 + [item for item, first in zip(group.items, alone) if not first])
        ordered.append(group if items == group.items else _ExerciseTests.of(group.exercise, items))
    return ordered


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cuda = None
    # Loaded by its entry point or named with -p; not in a grading child.
    timed_by_pytest_timeout = any(map(config.pluginmanager.has_plugin, ("timeout", "pytest_timeout")))
    grading = config.getoption("grading")
    for item in items:
        ex = catalog.exercise_for_test_file(Path(str(item.path)))
        item.stash[_EXERCISE] = ex
        if ex is not None:
            _visibility(ex, item)
            if grading:
                item.repr_failure = _brief_failure
        if item.get_closest_marker("cuda") is not None:
            if cuda is None:
                cuda = _cuda_available()
            if not cuda:
                item.add_marker(pytest.mark.skip(reason=CUDA_SKIP_REASON))
        if ex is not None and timed_by_pytest_timeout:
            # The plugin times exercise tests itself (see TestTimeout); pytest-timeout stands down.
            item.add_marker(pytest.mark.timeout(0))
    kept = _narrow(config, _by_exercise(items), _selected_tests(config))
    if config.stash[_UNTIL_FAILED] is None:  # in the order given
        chosen = {id(i) for group in kept for i in group.items}
        items[:] = [item for item in items if exercise_of(item) is None or id(item) in chosen]
    else:  # a grading child's (grader verify's)
        items[:] = ([item for item in items if exercise_of(item) is None]
                    + [item for group in _alone_first(config, kept) for item in group.items])
    if config.getoption("no_shrink"):
        feedback.report_first_failing_examples(item.obj for item in items if isinstance(item, pytest.Function))


def start_forked_session(session: pytest.Session, *, impl_root: str, report_fd: int, key_fd: int,
                         exercises: list[str], select: dict[str, list[str]], deselect: list[str],
                         exitfirst: bool, until_failed: dict[str, list[list[str]]], shrink: bool,
                         test_timeout: float, start_word: str | None = None) -> None:
    """Make the session a fork server collected (every exercise it serves, nothing run yet) one
    grading child's, in the child forked for it, before its tests run: the submission in
    ``impl_root``, records to ``report_fd`` signed with the key on ``key_fd``, only the tests of
    ``exercises`` that ``select`` (as ``--select-test``) keeps and ``deselect`` (node ids, as
    ``--deselect``) does not name, pytest's ``--exitfirst`` when ``exitfirst``, and
    ``until_failed``'s groups (as ``--until-failed``), failing examples shrunk unless ``shrink``
    is false (as ``--no-shrink``), each test within ``test_timeout`` seconds (as
    ``--test-timeout``), and no test before the word on ``start_word`` (as ``--start-word``)."""
    global _MAIN_PID
    _MAIN_PID = os.getpid()
    config = session.config
    config.stash[_IMPL_ROOT] = Path(impl_root).resolve()
    config.stash[_EXECUTOR] = _start_executor(config, [report_fd, key_fd],
                                              [catalog.get_exercise(ex_id) for ex_id in exercises])
    config.stash[_REPORT] = records.writer(report_fd, key_fd)
    config.option.maxfail = 1 if exitfirst else 0
    config.stash[_TEST_TIMEOUT] = test_timeout
    config.stash[_UNTIL_FAILED] = UntilFailed(until_failed) if until_failed else None
    _emit(config, {"event": records.Event.SANDBOX, **_sandbox_facts()})
    wanted = set(exercises)
    groups = [group for group in session.stash.get(_GROUPS, None) or _by_exercise(session.items)
              if group.exercise.id in wanted]
    kept = _alone_first(config, _narrow(config, groups, {ex_id: set(names) for ex_id, names in select.items()},
                                        set(deselect)))
    session.items[:] = [item for group in kept for item in group.items]
    session.testscollected = len(session.items)
    if not shrink:
        feedback.report_first_failing_examples(item.obj for item in session.items if isinstance(item, pytest.Function))
    collector = config.pluginmanager.get_plugin("drills-collector")
    if collector is not None:
        collector.pytest_collection_finish(session)
    if start_word is not None:
        wait_for_word(start_word)


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.fixture(scope="module")
def impl(request: pytest.FixtureRequest):
    """The learner's module for the exercise this test file checks, loaded from ``--impl-root``."""
    ex = catalog.exercise_for_test_file(Path(str(request.path)))
    if ex is None:
        raise pytest.UsageError(f"{request.path} is not the test file of a catalog exercise")
    executor = request.config.stash.get(_EXECUTOR, None)
    try:
        if ex.separate_process and executor is not None:
            return executor.load(ex.id, request.config.stash[_IMPL_ROOT])
        if request.config.getoption("grading") and not _canary.taken():
            # Before any submitted code runs in this process: what the canaries compare against
            # later. A process whose exercises are all graded apart never takes it, and its
            # canaries never run: no submitted code ran here that could have changed a check.
            test_modules = {id(i.module): i.module for i in request.session.items if getattr(i, "module", None)}
            _canary.snapshot(request.config.pluginmanager, list(test_modules.values()))
        module = load_implementation(ex, request.config.stash[_IMPL_ROOT])
    except MissingImplementation:
        _leave_if_forked()
        raise  # reported as not started
    except ImplementationError as exc:
        _leave_if_forked()
        pytest.fail(str(exc), pytrace=False)
    _leave_if_forked()
    return module


def _leave_if_forked() -> None:
    """A copy of the test process forked by submitted code stops here instead of running the
    rest of the suite beside the real one."""
    if os.getpid() != _MAIN_PID:
        os._exit(0)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """A fresh grading child given ``--start-word`` waits for it before its first test. A
    grading child's first test starts with what the imports and the collection made frozen
    (``gc.freeze``), as a fork server's child does: a ``gc.collect()`` a test or a submission
    makes (after each failed try of a search) then walks only what the tests made, not torch."""
    if (fifo := session.config.getoption("start_word")) is not None:
        wait_for_word(fifo)
    if session.config.getoption("grading"):
        gc.freeze()


def wait_for_word(fifo: str) -> None:
    """Wait, collected and with the frameworks imported, until the grader writes to the named
    pipe ``fifo`` (or closes it): a grading child started while another grades the same
    submission runs no test, and so no submitted code, before that one has ended
    (``grader.engine.sandbox``)."""
    with open(fifo, "rb") as stream:
        stream.read(1)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    with time_limit(_time_limit(item)):
        yield


def _time_limit(item: pytest.Item) -> float:
    """How long ``item`` may run, in seconds (0: no limit): an exercise test's ``--test-timeout``,
    or its ``time_limit`` marker's when that is shorter; no limit when ``--test-timeout`` is 0."""
    limit = item.config.stash[_TEST_TIMEOUT] if exercise_of(item) is not None else 0.0
    marker = item.get_closest_marker("time_limit") if limit else None
    return min(limit, float(marker.args[0])) if marker is not None else limit


def _is_skip(exc: BaseException) -> bool:
    """Whether a test phase raised a skip (alone, or a group of nothing but skips)."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(pytest.skip.Exception)[1] is None
    return isinstance(exc, pytest.skip.Exception)


def _brief_failure(excinfo: pytest.ExceptionInfo) -> str:
    """An exercise test's ``repr_failure`` when grading: the failure's message alone. Only
    hypothesis asks for it, twice per failing test, for the notes of a failure it could not
    reproduce; pytest's own rendering (each frame's source, its statement found by parsing its
    file) costs, and no report reads it (``pytest_runtest_makereport`` builds the learner's
    message instead)."""
    return feedback.message_text(excinfo.value)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport | None:
    """An exercise test's failure is reported with the learner's message, built here instead of
    pytest's traceback rendering (which it would replace: that rendering was most of the cost of
    grading an untouched stub)."""
    _leave_if_forked()
    ex = exercise_of(item)
    if ex is None or call.excinfo is None or _is_skip(call.excinfo.value):
        return None  # pytest's own report
    if feedback.stub_untouched(call.excinfo.value, item.config.stash[_IMPL_ROOT]):
        missing = call.excinfo.errisinstance(MissingImplementation)
        longrepr = feedback.not_started(str(call.excinfo.value) if missing else
                                        f"{ex.relpath} still raises NotImplementedError")
        item.user_properties.append(("not_started", True))
    else:
        public = feedback.resolved(str(item.path)) if _visibility(ex, item) == Visibility.VISIBLE else None
        longrepr = feedback.learner_message(call.excinfo.value, call.excinfo.tb, item.config.stash[_IMPL_ROOT],
                                            public, plain=(pytest.fail.Exception,))
    sections = [(f"Captured {key} {when}", content) for when, key, content in item._report_sections]
    return pytest.TestReport(item.nodeid, item.location, dict.fromkeys(item.keywords, 1), "failed", longrepr,
                             call.when, sections, call.duration, call.start, call.stop,
                             user_properties=item.user_properties)


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    """An untouched stub's failures are their own category: they still fail the run, but stay out
    of pytest's failure sections (the progress summary lists each such exercise once)."""
    if report.failed and dict(getattr(report, "user_properties", ())).get("not_started"):
        return "not started", "N", "NOT STARTED"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """In grading mode every test starts from the same random state, so the same code always gets
    the same verdict and the same numbers in its messages."""
    if item.config.getoption("grading") and (ex := exercise_of(item)) is not None:
        _seed_everything(zlib.crc32(item.nodeid.encode()))
        executors = item.config.stash.get(_EXECUTOR, None)
        if executors is not None:
            executors.revive(ex.id)  # after a test that overran, a fresh process; the other exercises' stopped
            executors.follow(item)


def _seed_everything(seed: int) -> None:
    import random
    import sys

    random.seed(seed)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(seed)
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        # Not torch.manual_seed: it also queues a lazy seeding of every accelerator kind, each
        # recording a formatted stack (milliseconds per test).
        torch.default_generator.manual_seed(seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)
    if "tensorflow" in sys.modules:
        sys.modules["tensorflow"].random.set_seed(seed)


def _final_outcome(reports: list[pytest.TestReport]) -> tuple[str, str]:
    """Fold setup/call/teardown reports into one outcome and a message."""
    for rep in reports:
        if rep.failed:
            status = TestStatus.FAILED if rep.when == "call" else TestStatus.ERROR
            return status, str(rep.longrepr) if rep.longrepr else ""
    for rep in reports:
        if rep.skipped:
            reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
            return TestStatus.SKIPPED, reason.removeprefix("Skipped: ")
    return TestStatus.PASSED, ""


class _ReportCollector:
    """Gathers each test's phase reports and emits one result per test when it finishes.

    A test's records (its result, and any tamper record) go out in one signed line with the
    next test's ``started`` record, written before that test's protocol starts (before any
    teardown ``--until-failed`` does for it: no test code runs between a result and its
    sending), or with ``finished``: one line a test, not two (the writes, a whole-catalog child's
    next largest cost after pytest's terminal)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.pending: dict[str, list[pytest.TestReport]] = {}
        self.held: list[dict] = []  # the last test's records, not yet sent
        self.items: dict[str, pytest.Item] = {}
        self.evidence_before = 0  # the executor's evidence_taken when the last test ended
        self.next_item: dict[str, pytest.Item] = {}
        self.deselected: set[str] = set()  # exercises some of whose tests -k/-m/--deselect left out

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        for item in items:
            ex = catalog.exercise_for_test_file(Path(str(item.path)))
            if ex is not None:
                self.deselected.add(ex.id)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.items = {item.nodeid: item for item in session.items}
        self.next_item = {a.nodeid: b for a, b in zip(session.items, session.items[1:])}

    def _last_of_exercise(self, item: pytest.Item) -> bool:
        """Whether ``item`` is the last test of its exercise to run (behavioural canaries run
        there): no test of it follows, or ``--until-failed`` leaves out every one that does."""
        until_failed, ex = self.config.stash[_UNTIL_FAILED], exercise_of(item)
        following = self.next_item.get(item.nodeid)
        while following is not None and exercise_of(following) == ex:
            if until_failed is None or until_failed.needed(ex.id, _names_of(following)):
                return False
            following = self.next_item.get(following.nodeid)
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
        """A test ``--until-failed`` leaves out does not run: only what the test before it kept
        set up for it (its module's fixtures) and ``nextitem`` does not need is torn down, as
        pytest's own teardown of it would."""
        until_failed, ex = self.config.stash[_UNTIL_FAILED], exercise_of(item)
        if until_failed is None or ex is None or until_failed.needed(ex.id, _names_of(item)):
            if ex is not None:
                # The grader's own clock for this test starts here (see grader.engine.sandbox._supervise).
                self._send({"event": records.Event.STARTED, "nodeid": item.nodeid})
            return None
        self._send()
        item.session._setupstate.teardown_exact(nextitem)  # pytest's runner does the same at teardown
        return True

    def _send(self, record: dict | None = None) -> None:
        """Emit the held records, and ``record`` after them, as one line."""
        line, self.held = [*self.held, *([record] if record else [])], []
        if line:
            _emit(self.config, line if len(line) > 1 else line[0])

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.pending.setdefault(report.nodeid, []).append(report)
        if report.when != "teardown":
            return
        reports = self.pending.pop(report.nodeid)
        item = self.items.get(report.nodeid)
        ex = exercise_of(item) if item is not None else None
        if ex is None:
            return
        status, message = _final_outcome(reports)
        executor = self.config.stash.get(_EXECUTOR, None)
        evidence = executor.evidence_taken if executor is not None else 0
        checked_in_executor = evidence > self.evidence_before
        self.evidence_before = evidence
        if status in (TestStatus.FAILED, TestStatus.ERROR) and self.config.stash[_UNTIL_FAILED] is not None:
            self.config.stash[_UNTIL_FAILED].failed(ex.id, _names_of(item))  # before: it may end the exercise
        last = self._last_of_exercise(item)
        # After each test, the globals of its own module (a test runs with those alone); after an
        # exercise's last test, every test module's and the behavioural canaries.
        tampered = (_canary.check(self.config.pluginmanager, behaviour=_check_libraries(ex) if last else (),
                                  module=None if last else getattr(item, "module", None))
                    if self.config.getoption("grading") else [])
        if tampered and status != TestStatus.SKIPPED:
            status, message = TestStatus.FAILED, "tampering detected: " + "; ".join(tampered)
            self.held.append({"event": records.Event.TAMPER, "exercise": ex.id, "reason": "; ".join(tampered)})
        not_started = any(dict(r.user_properties).get("not_started") for r in reports)
        duration = sum(r.duration for r in reports)
        self.held.append({"event": records.Event.RESULT, "nodeid": report.nodeid, "exercise": ex.id,
                          "status": status, "message": message[:4000],
                          "not_started": not_started, "duration": round(duration, 4),
                          "checked_in_executor": checked_in_executor})
        progress = self.config.stash[_PROGRESS].setdefault(ex.id, _Progress())
        progress.ran.add(_visibility(ex, item))
        if status == TestStatus.PASSED:
            progress.passed += 1
        elif status == TestStatus.SKIPPED:
            progress.skipped += 1
            progress.skipped_because = progress.skipped_because or message
        else:
            progress.failed += 1
            progress.not_started += not_started
            if not_started and not progress.not_started_because:
                progress.not_started_because = message.removeprefix(feedback.not_started(""))
            progress.first_failure = progress.first_failure or report.nodeid.split("::", 1)[-1]

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, exitstatus: int) -> None:
        """The session's last record, after a grading child's end mark (a grading session has
        no terminal to print after it: ``grader.engine.sandbox._session``)."""
        if self.config.stash.get(_REPORT, None) is None:
            return
        if self.config.getoption("grading"):
            sys.stdout.flush()
            sys.stderr.flush()
            with contextlib.suppress(OSError):  # an output the submission closed
                os.write(1, records.OUTPUT_END)
        self._send({"event": records.Event.FINISHED, "exitstatus": int(exitstatus)})

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter):
        try:
            return (yield)
        finally:
            # Outermost wrapper: the progress summary comes after pytest's own short summary.
            if not self.config.getoption("grading"):
                # Test ids named on the command line (file.py::test_x) leave the rest out too.
                named = {ex.id for arg in self.config.args if "::" in arg
                         if (ex := catalog.exercise_for_test_file(Path(arg.split("::")[0]).resolve()))}
                _print_progress(terminalreporter, self.config.stash[_PROGRESS], self.config.stash[_IMPL_ROOT],
                                partial=self.deselected | named)


def _print_progress(tr, progress: dict[str, _Progress], impl_root: Path, partial: set[str]) -> None:
    """Per exercise: done, passing, failing or not started. Passing tests alone never make an
    exercise *done*: only full marks in the remembered full check (``grader.progress``) of the
    module's current content do, or every public and hidden test of it passing in this run
    (none of them left out: ``partial`` names the exercises some of whose tests were)."""
    if not progress:
        return
    from grader import progress as remembered

    store = remembered.Store()
    tr.section("tensor-drills progress", sep="─")
    done = passing = 0
    hidden_absent = False
    width = len(State.PUBLIC_PASS)
    for ex_id, p in progress.items():
        total = p.passed + p.failed
        state = classify(p.passed, p.failed, p.not_started)
        if total == 0 and p.skipped:
            # Every test skipped (a library the tests need is missing): not done, and not failing.
            tr.write_line(f"  {State.SKIPPED:<{width}}  {ex_id:<44} {p.skipped_because}", yellow=True)
        elif state is None:
            ex = catalog.get_exercise(ex_id)
            full = store.full(ex, remembered.file_digest(impl_root / ex.relpath))
            whole_suite = set(Visibility) <= p.ran and ex_id not in partial
            if (full is not None and full.done) or whole_suite:
                done += 1
                how = "public and hidden" if whole_suite else f"full check {full.points}"
                tr.write_line(f"  {State.DONE:<{width}}  {ex_id:<44} {p.passed}/{total} tests, {how}", green=True)
                continue
            passing += 1
            hidden_absent |= not remembered.has_full_check(ex)
            label = "tests pass" if Visibility.HIDDEN in p.ran else State.PUBLIC_PASS
            tr.write_line(f"  {label:<{width}}  {ex_id:<44} {p.passed}/{total} tests", cyan=True)
        elif state == State.NOT_STARTED:
            tr.write_line(f"  {state:<{width}}  {ex_id:<44} {p.not_started_because}", yellow=True)
        else:
            tr.write_line(f"  {state:<{width}}  {ex_id:<44} {p.passed}/{total} tests  "
                          f"(first failure: {p.first_failure})", red=True)
    summary = f"{done}/{len(progress)} exercises done"
    if passing:
        summary += (f"; {passing} pass their tests here, which is not done: "
                    + ("the hidden tests run when your work is graded" if hidden_absent
                       else "`grader status --full` runs the full check (hidden tests too)"))
    tr.write_line(summary, bold=True)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Before the terminal summary: hypothesis's pytest plugin imports hypothesis there (a third of
    a second) even in a run where nothing imported it. Such a run (a learner's public tests) goes
    without it, unless a report carries something for it to show (one from a pytest-xdist worker
    that did run hypothesis)."""
    hypothesis_plugin = sys.modules.get("_hypothesis_pytestplugin")
    manager = session.config.pluginmanager
    if hypothesis_plugin is None or "hypothesis" in sys.modules or not manager.is_registered(hypothesis_plugin):
        return
    keys = {getattr(hypothesis_plugin, "STATS_KEY", None), getattr(hypothesis_plugin, "FAILING_EXAMPLES_KEY", None)}
    reporter = manager.get_plugin("terminalreporter")
    reports = [r for found in (reporter.stats.values() if reporter else ()) for r in found]
    if None not in keys and not any(keys & getattr(r, "__dict__", {}).keys() for r in reports):
        manager.unregister(hypothesis_plugin)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if not config.pluginmanager.has_plugin("drills-collector"):
        config.pluginmanager.register(_ReportCollector(config), "drills-collector")
