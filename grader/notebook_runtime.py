"""Run the kit's pytest-style tests inside a notebook kernel (used by exported nbgrader notebooks).

A notebook made by ``grader nbgrader export`` holds the exercise's test files as text. A setup cell
turns one into a ``TestModule`` (executed in its own namespace, so test helpers never overwrite the
learner's functions), and each grade cell runs one test::

    public_tests.run("test_pairwise_small_example", globals())
    hidden_tests.run("test_pairwise_stays_on_device", globals(), params={"device": 0})

``run`` builds the ``impl`` object from the notebook's globals (the learner's answer), supplies the
test's parameters and the fixtures the kit's tests use (``impl``, ``monkeypatch``, ``tmp_path``,
``tmp_path_factory``),
grades hypothesis tests with the kit's derandomized settings, and enforces the per-test time limit.
A failing test raises ``AssertionError`` with the learner-facing message ``grader score`` gives (no
test source); a passing test prints one line and returns ``None``. Warnings and anything written to
stderr during the test are echoed on stdout instead: nbgrader gives 0 points to a test cell with
any stderr output, and a harmless warning must not cost a correct answer its points.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import linecache
import os
import re
import sys
import tempfile
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader import defaults, feedback
from grader._timelimit import TestTimeout, time_limit

_NOT_STARTED = feedback.not_started("your answer still raises NotImplementedError")
# Fixtures that kit tests take besides ``impl`` and their parameters.
SUPPORTED_FIXTURES = ("impl", "monkeypatch", "tmp_path", "tmp_path_factory")
# Names the notebook (IPython) itself defines; they are not part of the learner's answer.
_NOTEBOOK_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}
_IPYTHON_HISTORY = re.compile(r"_+|_i{1,3}|_i?\d+|_oh|_ih|_dh")


def answer_namespace(namespace: dict) -> types.ModuleType:
    """The learner's answer as a module object: what the kit's tests receive as ``impl``."""
    module = types.ModuleType("notebook_answer")
    for name, value in namespace.items():
        if name in _NOTEBOOK_NAMES or _IPYTHON_HISTORY.fullmatch(name) or (
                name.startswith("__") and name.endswith("__")):
            continue
        if isinstance(value, TestModule):
            continue
        setattr(module, name, value)
    return module


class TestModule:
    """One of the kit's test files, executed in a private namespace inside the notebook."""

    __test__ = False  # not a pytest test class

    def __init__(self, exercise_id: str, kind: str, source: str) -> None:
        # Hypothesis keeps a cache folder (``.hypothesis/``, with this machine's paths) in the
        # working directory, the notebook's folder, which nbgrader copies into the student's
        # feedback. It reads this variable when it first stores something.
        if "HYPOTHESIS_STORAGE_DIRECTORY" not in os.environ:
            os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = tempfile.mkdtemp(prefix="drills-hypothesis-")
        feedback.configure_hypothesis(grading=True)
        self.exercise_id, self.kind = exercise_id, kind
        self.module = types.ModuleType(f"_drills_notebook_{kind}_tests_{exercise_id.replace('.', '__')}")
        self.module.__file__ = f"<{kind} tests of {exercise_id}>"
        sys.modules[self.module.__name__] = self.module  # classes defined in tests stay picklable
        # Tools that read a function's source (TensorFlow's AutoGraph, inspect) need the text; the
        # learner never sees it, since a failure is re-raised from the runner without its frames.
        linecache.cache[self.module.__file__] = (len(source), None, source.splitlines(True),
                                                 self.module.__file__)
        exec(compile(source, self.module.__file__, "exec"), self.module.__dict__)  # noqa: S102 - the kit's own tests

    @classmethod
    def from_kit(cls, exercise_id: str, kind: str) -> TestModule:
        """The exercise's ``public`` or ``hidden`` test file, read from the kit on this machine
        (``$DRILLS_KIT_ROOT``, see ``grader.catalog.find_kit_root``): a notebook then holds no
        hidden test source that nbgrader's feedback could show.

        Raises:
            RuntimeError: the kit or the test file is not on this machine.
        """
        from grader import catalog

        try:
            ex = catalog.get_exercise(exercise_id)
        except catalog.CatalogError as exc:
            raise RuntimeError(f"cannot load the {kind} tests of {exercise_id}: {exc}") from None
        path = ex.hidden_tests if kind == "hidden" else ex.public_tests
        if not path.is_file():
            raise RuntimeError(f"the {kind} tests of {exercise_id} are not on this machine (no "
                               f"{path}); set DRILLS_KIT_ROOT to the tensor-drills kit that holds them")
        return cls(exercise_id, kind, path.read_text(encoding="utf-8"))

    def run(self, test_name: str, namespace: dict, params: dict[str, int] | None = None,
            timeout: float = defaults.TEST_TIMEOUT_S) -> None:
        """Run test ``test_name`` against the answer in ``namespace``; raise AssertionError on failure.

        ``params``: for a parametrized test, the index of the chosen case in each of its
        ``parametrize`` marks, keyed by the mark's first argument name.
        """
        from _pytest.outcomes import OutcomeException

        __tracebackhide__ = True  # IPython leaves this frame out of the failure's traceback
        fn = getattr(self.module, test_name)
        values = _parametrized_args(fn, params or {})
        label = test_name + (f"[{'-'.join(str(values[k]) for k in params)}]" if params else "")
        stderr_text, failure = io.StringIO(), None
        with _quiet_stderr(stderr_text), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                # Fixtures are set up (and torn down) inside the time limit and the capture, as
                # pytest does; a fixture that fails fails the test.
                with time_limit(timeout), contextlib.ExitStack() as stack:
                    fn(**{name: self._value(name, values, namespace, stack)
                          for name in _arguments(fn)})
            except NotImplementedError:
                failure = _NOT_STARTED
            except (Exception, TestTimeout, OutcomeException) as exc:  # noqa: BLE001 - reported to the learner
                failure = _learner_message(exc)
        notes = dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught)
        for note in list(notes)[:5]:
            print(f"note: warning during the test: {note}")
        if stderr_text.getvalue().strip():
            print("note: the test wrote to stderr:\n" + stderr_text.getvalue().rstrip()[-2000:])
        if failure is not None:
            raise AssertionError(f"{self.exercise_id} {label} failed: {failure}") from None
        print(f"passed: {label}")

    def _value(self, name: str, values: dict[str, Any], namespace: dict,
               stack: contextlib.ExitStack) -> Any:
        """The value pytest would give argument ``name``: a parameter or a fixture."""
        if name not in values:
            values[name] = self._fixture(name, values, namespace, stack)
        return values[name]

    def _fixture(self, name: str, values: dict[str, Any], namespace: dict,
                 stack: contextlib.ExitStack) -> Any:
        if name == "impl":
            return answer_namespace(namespace)
        if name == "monkeypatch":
            import pytest

            return stack.enter_context(pytest.MonkeyPatch.context())
        if name == "tmp_path":
            return Path(stack.enter_context(tempfile.TemporaryDirectory()))
        if name == "tmp_path_factory":
            return _TempPathFactory(Path(stack.enter_context(tempfile.TemporaryDirectory())))
        fixture = module_fixtures(self.module).get(name)
        if fixture is None:
            raise RuntimeError(f"fixture {name!r} is not available in notebooks")
        result = fixture(**{arg: self._value(arg, values, namespace, stack) for arg in _arguments(fixture)})
        if inspect.isgenerator(result):
            value = next(result)
            stack.callback(next, result, None)  # the code after ``yield``: the teardown
            return value
        return result


class _TempPathFactory:
    """pytest's ``tmp_path_factory`` as the kit's tests use it: fresh folders under one base."""

    def __init__(self, base: Path) -> None:
        self._base = base

    def getbasetemp(self) -> Path:
        return self._base

    def mktemp(self, basename: str, numbered: bool = True) -> Path:
        if not numbered:
            path = self._base / basename
            path.mkdir()
            return path
        return Path(tempfile.mkdtemp(prefix=f"{basename}-", dir=self._base))


def module_fixtures(module: types.ModuleType) -> dict[str, Callable]:
    """The fixtures a test module defines, by name, as plain functions."""
    found = {}
    for attr, obj in vars(module).items():
        if hasattr(obj, "_get_wrapped_function"):  # pytest >= 8.4
            found[getattr(obj, "name", None) or attr] = obj._get_wrapped_function()
        elif hasattr(obj, "__pytest_wrapped__"):  # older pytest
            marker = getattr(obj, "_pytestfixturefunction", None)
            found[getattr(marker, "name", None) or attr] = obj.__pytest_wrapped__.obj
    return found


def _arguments(fn: Callable) -> list[str]:
    """The arguments pytest would have filled in (hypothesis' ``@given`` hides its own ones)."""
    return list(inspect.signature(fn).parameters)


def _parametrized_args(fn: Callable, indices: dict[str, int]) -> dict[str, Any]:
    """The arguments of the parametrized case ``indices`` picks, from the test's own marks."""
    kwargs: dict[str, Any] = {}
    for mark in getattr(fn, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        argnames, argvalues = mark.args[0], mark.args[1]
        names = [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
        if names[0] not in indices:
            raise RuntimeError(f"no case chosen for the parameter {names[0]!r} of {fn.__name__}")
        value = list(argvalues)[indices[names[0]]]
        values = value.values if hasattr(value, "values") and hasattr(value, "marks") else (
            (value,) if len(names) == 1 else tuple(value))
        kwargs.update(zip(names, values))
    return kwargs


def _learner_message(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    if not isinstance(exc, (AssertionError, TestTimeout)) and isinstance(cause, NotImplementedError):
        return _NOT_STARTED
    return feedback.message_text(exc) or "an assertion failed"


@contextlib.contextmanager
def _quiet_stderr(sink: io.StringIO):
    """Send Python-level and file-descriptor-level stderr to ``sink`` for the duration."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        saved = None
    with tempfile.TemporaryFile(mode="w+b") as raw:
        if saved is not None:
            os.dup2(raw.fileno(), 2)
        try:
            with contextlib.redirect_stderr(sink):
                yield
        finally:
            if saved is not None:
                os.dup2(saved, 2)
                os.close(saved)
            raw.seek(0)
            sink.write(raw.read().decode("utf-8", "replace"))
