"""What a learner reads when a test fails, wherever the test runs (pytest, a notebook).

- Not-started detection: a test of an untouched stub fails only because the stub's own ``raise
  NotImplementedError`` statement ran (or the module is missing). ``NotImplementedError`` raised
  by torch (an op the ``meta`` device cannot run) is an ordinary failure.
- Messages: the failure's own message (a hidden test's failing expression left out), the
  learner's frames with paths as the learner knows them and, for a public test, its failing
  line; never the kit's internals or a hidden test's source.
- Hypothesis profiles: derandomized with no database when grading, fresh each run for a learner;
  a run that needs only the verdict reports a test's first failing example, unshrunk.

Framework-free and engine-free: imported by the pytest plugin and the notebook runtime.
"""

from __future__ import annotations

import functools
import linecache
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

from grader import catalog
from grader._loader import MissingImplementation, StubRaised
from grader._timelimit import TestTimeout
from grader.outcomes import NOT_STARTED_PREFIX

HYPOTHESIS_GRADING = "drills-grading"
HYPOTHESIS_LEARNER = "drills-learner"
_profile: str | None = None  # the one configure_hypothesis chose

_STUB_RAISE = re.compile(r"raise\s+NotImplementedError\b")


def configure_hypothesis(*, grading: bool, on_import: bool = False) -> None:
    """Load the grading or the learner hypothesis profile for every test module imported after
    this call: now, or with ``on_import`` (when the installed kit registers
    ``on_hypothesis_import`` as a ``hypothesis`` entry point, see pyproject.toml) when hypothesis
    is first imported, before that module builds any settings. A learner's run that needs no
    hypothesis (no public test does) then never pays for its import, a third of a second."""
    global _profile
    _profile = HYPOTHESIS_GRADING if grading else HYPOTHESIS_LEARNER
    # With HYPOTHESIS_NO_PLUGINS set, hypothesis calls no entry point.
    if not on_import or "hypothesis" in sys.modules or os.environ.get("HYPOTHESIS_NO_PLUGINS"):
        _load_profile(_profile)


def on_hypothesis_import() -> None:
    """Hypothesis's ``hypothesis`` entry point: called at the end of ``import hypothesis`` in any
    process where the kit is installed; does nothing unless ``configure_hypothesis`` chose a
    profile first."""
    if _profile is not None:
        _load_profile(_profile)


def _load_profile(name: str) -> None:
    from hypothesis import HealthCheck, Phase, settings

    # No explain phase: it re-runs a failing example many times (slow, and it would point the
    # learner at hidden test lines). One failure per test: "found 2 distinct failures" with two
    # tracebacks reads worse than the simplest failing example alone.
    phases = tuple(phase for phase in Phase if phase is not Phase.explain)
    common = dict(deadline=None, print_blob=False, phases=phases, report_multiple_bugs=False,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    settings.register_profile(HYPOTHESIS_GRADING, derandomize=True, database=None,
                              max_examples=25, **common)
    settings.register_profile(HYPOTHESIS_LEARNER, max_examples=25, database=None, **common)
    settings.load_profile(name)
    if name == HYPOTHESIS_GRADING:
        _without_local_constants()


def report_first_failing_examples(tests: Iterable[Callable]) -> None:
    """Have each hypothesis test among ``tests`` (test functions, or methods) fail with the first
    failing example it finds, not shrink it to the simplest one first: for a run that needs only
    whether a test fails (``grader verify``'s stubs and wrong solutions, mutants). Which tests
    fail does not change; shrinking only looks for a simpler example of a failure already found.
    Only the process that calls it is changed (a forked grading child, never its server)."""
    from hypothesis import Phase, settings

    for test in tests:
        test = getattr(test, "__func__", test)
        if not getattr(test, "is_hypothesis_test", False):
            continue
        chosen = test._hypothesis_internal_use_settings
        if Phase.shrink in chosen.phases:
            test._hypothesis_internal_use_settings = settings(
                chosen, phases=tuple(phase for phase in chosen.phases if phase is not Phase.shrink))


def _without_local_constants() -> None:
    """Have hypothesis draw no constant from the source of the modules loaded.

    Hypothesis (since 6.131) sometimes draws a constant it found in the source of a "local" module
    (one outside the standard library and site-packages) that the process has imported: the
    submission's own, and whichever of the kit's modules happen to be loaded. A verdict would then
    hang on the submission's source text, not only on what its code does, and on how its child was
    started (a fork server holds every exercise's test modules, a fresh child only its own); and
    every forked child parsed all those modules again. Its global constants (0, 1, inf, nan, the
    limits of each width...) stay, and the tests name their own special values."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # a hypothesis from before local constants
        return
    none = Constants()
    providers._get_local_constants = lambda: none


def not_started(what: str) -> str:
    """The message of a test that fails because ``what`` is not started (still a stub, or missing)."""
    return f"{NOT_STARTED_PREFIX}: {what}"


def stub_untouched(exc: BaseException, impl_root: Path) -> bool:
    """Whether ``exc`` (or the exception a wrapper raised it from) says the learner has not
    started: the module is missing, or a ``raise NotImplementedError`` statement of a module
    under ``impl_root`` raised it."""
    if not isinstance(exc, NotImplementedError):
        # hypothesis or pytest may wrap the learner's exception; look one level down.
        exc = exc.__cause__ or exc.__context__
        if not isinstance(exc, NotImplementedError):
            return False
    if isinstance(exc, (MissingImplementation, StubRaised)):
        return True
    frames = list(traceback.walk_tb(exc.__traceback__))  # no source read, unlike extract_tb
    if not frames:
        return False
    frame, line = frames[-1]  # where it was raised
    filename = frame.f_code.co_filename
    return inside(Path(filename), impl_root) and bool(_STUB_RAISE.match(linecache.getline(filename, line).strip()))


def message_text(exc: BaseException, plain: tuple[type[BaseException], ...] = ()) -> str:
    """The failure's message: pytest's assertion rewriting appends the failing expression after a
    test's own message, which is dropped so a hidden test's source stays hidden. Prefixed with
    the exception's type unless it is an assertion, a time-out or one of ``plain``."""
    text = str(exc).strip()
    head, sep, _ = text.partition("\nassert ")
    if sep and head.strip():
        text = head.strip()
    if isinstance(exc, (AssertionError, TestTimeout, *plain)):
        return text
    return f"{type(exc).__name__}: {text}"


def learner_message(exc: BaseException, tb, impl_root: Path, public_test: Path | None = None,
                    plain: tuple[type[BaseException], ...] = ()) -> str:
    """``message_text``, then for a public test the line of it that failed, then the learner's
    own frames of traceback ``tb`` (those under ``impl_root``, test files left out) and the
    exception's notes."""
    lines = [message_text(exc, plain)]
    frames = _frames(tb)
    if public_test is not None:
        here = [(name, line) for name, line, _ in frames if resolved(name) == public_test]
        if here:
            lines.append(f"in {shown_path(public_test, public_test.parent)}, line {here[-1][1]}: "
                         f"{_source_line(*here[-1])}")
    lines.extend(where_in_learner_code(tb, impl_root))
    lines.extend(getattr(exc, "__notes__", []))
    return "\n".join(lines)


def where_in_learner_code(tb, impl_root: Path) -> list[str]:
    """The lines that show where in the learner's code an exception was raised: the last frames
    of traceback ``tb`` in files under ``impl_root``, test files left out."""
    # Test files are never the learner's code, even when the root holds them (``--impl-root
    # solutions`` in the kit itself): a hidden test's path and line stay out of the message.
    mine = [f for f in _frames(tb) if inside(Path(f[0]), impl_root)
            and catalog.exercise_for_test_file(Path(f[0])) is None]
    lines = ["raised in your code:"] if mine else []
    for filename, line, function in mine[-4:]:
        lines.append(f"  {shown_path(Path(filename), impl_root)}, line {line}, in {function}")
        if source := _source_line(filename, line):
            lines.append(f"    {source}")
    return lines


def _frames(tb) -> list[tuple[str, int, str]]:
    """Each frame of traceback ``tb`` as (file, line number, function), its source not read: a
    failure's message shows the lines of a few (``traceback.extract_tb`` read every frame's,
    stat-ing each file, 0.1 ms a failing test)."""
    return [(frame.f_code.co_filename, line, frame.f_code.co_name) for frame, line in traceback.walk_tb(tb)]


def _source_line(filename: str, line: int) -> str:
    linecache.checkcache(filename)  # a file the learner changed since it was last read
    return linecache.getline(filename, line).strip()


@functools.lru_cache(maxsize=4096)  # per frame of every failure, and per test: resolving lstat-s each part
def resolved(path: str) -> Path:
    """``path`` resolved, remembered: source files do not move while tests run."""
    return Path(path).resolve()


def shown_path(path: Path, root: Path) -> str:
    """``path`` as the learner knows it: from the working directory when it lies below it, else
    from the implementation root (a grading run's staging folder means nothing to a learner)."""
    path = path.resolve()
    for base in (Path.cwd(), root):
        try:
            return str(path.relative_to(base))
        except ValueError:
            continue
    return path.name


def inside(path: Path, root: Path) -> bool:
    return resolved(str(path)).is_relative_to(root)
