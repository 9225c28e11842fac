"""Load an exercise's module under test from an implementation root, at test time only.

Collection never imports submitted code: test modules receive the module through the ``impl``
fixture (see ``grader.pytest_plugin``), which calls ``load_implementation``.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

from grader.catalog import Exercise


class ImplementationError(Exception):
    """The module under test is missing or raised while being imported."""


class MissingImplementation(ImplementationError, NotImplementedError):
    """The submission has no module for this exercise: it reads as not started, not as failing."""


class StubRaised(NotImplementedError):
    """An untouched stub's ``raise NotImplementedError`` ran in the executor (``grader.remote``):
    the trusted process raises this in its place."""


def module_name(exercise: Exercise) -> str:
    # A private, dotted-free name: it can never shadow an installed package, and classes defined
    # in the module stay picklable within the process because the name is in sys.modules.
    return "_drills_impl_" + exercise.id.replace(".", "__")


def load_implementation(exercise: Exercise, root: Path) -> ModuleType:
    """Import ``root/<exercise path>`` as a fresh module.

    Raises:
        MissingImplementation: the file does not exist.
        ImplementationError: importing it raised; the message names the file and the lines of the
            submitted file that raised.
    """
    path = Path(root) / exercise.relpath
    if not path.is_file():
        raise MissingImplementation(f"no file {exercise.relpath} in {root}")
    name = module_name(exercise)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - any failure of submitted code is reported
        sys.modules.pop(name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        if isinstance(exc, SyntaxError):
            where = f"  {exercise.relpath}, line {exc.lineno}\n    {(exc.text or '').strip()}"
            what = exc.msg
        else:
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
            where = "\n".join(f"  {exercise.relpath}, line {f.lineno}, in {f.name}\n    {f.line}"
                              for f in frames[-3:])
            what = str(exc)
        raise ImplementationError(
            f"importing {exercise.relpath} raised {type(exc).__name__}: {what}\n{where}".rstrip()
        ) from None
    return module
