"""A test's monkeypatches, in the executor too: around each call the test makes while they are
in place.

A test that stands in for a library function (``monkeypatch.setattr(torch.cuda, "is_available",
lambda: True)``, a ``torch.save`` that fails halfway) or sets an environment variable
(``monkeypatch.setenv``) through its ``monkeypatch`` fixture means the submission to see it, as
it would in one process. ``follow`` names the running test; ``changes`` lists what its fixture
patched, attributes of modules and items of ``os.environ``, for the executor to rebuild
(``decoded``), apply around the call and undo after (``patched``). The value crosses as any
argument does (a lambda as a callback). This process's own work for a call (pickling the test's
objects, which uses ``torch.save`` for tensors) runs ``unpatched``.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

from _pytest.monkeypatch import NOTSET

# The running test's MonkeyPatch, when it has one (the plugin sets this for each test).
_monkeypatch_of_test: list[Callable[[], Any]] = [lambda: None]
_MISSING = object()  # an attribute a module did not have


def follow(monkeypatch_of_test: Callable[[], Any]) -> None:
    """From now on, the monkeypatches to carry are those of ``monkeypatch_of_test()`` (the
    running test's ``monkeypatch`` fixture, or None)."""
    _monkeypatch_of_test[0] = monkeypatch_of_test


def _module_attributes(monkeypatch: Any) -> list[tuple[types.ModuleType, str, Any]]:
    """(module, attribute, value before) of each attribute of a module ``monkeypatch`` set."""
    return [(target, name, before) for target, name, before in getattr(monkeypatch, "_setattr", ())
            if isinstance(target, types.ModuleType)]


def changes(encode: Callable[[Any], Any]) -> dict | None:
    """What the running test's monkeypatch changed, each value as ``encode`` makes it: module
    attributes as ``[module name, attribute, value]`` and environment variables by name (None
    where it deleted one). None when it changed nothing. ``TypeError`` for a change that would
    not reach the executor (an attribute of a class or an object, an item of another dict, a
    working directory or ``sys.path``): the test would check a submission that never saw it."""
    monkeypatch = _monkeypatch_of_test[0]()
    if monkeypatch is None:
        return None
    unreached = [f"{target.__qualname__}.{name}" if isinstance(target, type) else f"{name} of a {type(target).__name__}"
                 for target, name, _ in getattr(monkeypatch, "_setattr", ())
                 if not isinstance(target, types.ModuleType)]
    unreached += [f"an item {key!r} of a {type(mapping).__name__}"
                  for mapping, key, _ in getattr(monkeypatch, "_setitem", ()) if mapping is not os.environ]
    if getattr(monkeypatch, "_cwd", None) is not None:
        unreached.append("the working directory")
    if getattr(monkeypatch, "_savesyspath", None) is not None:
        unreached.append("sys.path")
    if unreached:
        raise TypeError(f"this test's monkeypatch changed {', '.join(unreached)}, which does not reach the "
                        "submission's process (graded apart, it sees a test's patches of module attributes "
                        "and environment variables only)")
    attributes: dict[tuple[str, str], Any] = {}
    for module, name, _ in _module_attributes(monkeypatch):
        if name in module.__dict__:
            attributes[module.__name__, name] = module.__dict__[name]
    environ = {key: os.environ.get(key) for mapping, key, _ in getattr(monkeypatch, "_setitem", ())
               if mapping is os.environ and isinstance(key, str)}
    if not attributes and not environ:
        return None
    return {"attributes": [[module, name, encode(value)] for (module, name), value in attributes.items()],
            "environ": environ}


@contextlib.contextmanager
def unpatched() -> Iterator[None]:
    """The attributes the running test's monkeypatch set, as they were before it, inside the
    block: this process's own use of them (``torch.save`` pickling a tensor) is not the test's."""
    monkeypatch = _monkeypatch_of_test[0]()
    patched = [] if monkeypatch is None else _module_attributes(monkeypatch)
    now = [(module, name, module.__dict__.get(name, _MISSING)) for module, name, _ in patched]
    try:
        for module, name, before in reversed(patched):
            _set(module, name, _MISSING if before is NOTSET else before)
        yield
    finally:
        for module, name, value in now:
            _set(module, name, value)


def _set(module: types.ModuleType, name: str, value: Any) -> None:
    if value is _MISSING:
        module.__dict__.pop(name, None)
    else:
        setattr(module, name, value)



def decoded(entries: Any, decode: Callable[[Any], Any]) -> tuple[list, dict]:
    """The trusted side's ``changes`` (executor side; None: none) as ``patched`` applies them:
    ``(module, attribute, value)`` triples, each value as ``decode`` rebuilds it, and the
    environment variables. ``WireError`` for what is not such changes."""
    from grader.remote._wire import WireError, as_list

    if entries is None:
        return [], {}
    if not isinstance(entries, dict):
        raise WireError("monkeypatches that are not a dict")
    attributes = []
    for entry in as_list(entries.get("attributes", [])):
        module_name, name, node = as_list(entry, 3)
        if type(module_name) is not str or type(name) is not str:
            raise WireError("a monkeypatch that names no module attribute")
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
        attributes.append((module, name, decode(node)))
    environ = entries.get("environ", {})
    if not isinstance(environ, dict) or not all(
            type(k) is str and (v is None or type(v) is str) for k, v in environ.items()):
        raise WireError("environment variables that are not strings")
    return attributes, environ


@contextlib.contextmanager
def patched(changes: tuple[list, dict]) -> Iterator[None]:
    """Inside the block, the ``decoded`` changes (executor side); undone after."""
    attributes, environ = changes
    undo: list[Callable[[], None]] = []
    try:
        for module, name, value in attributes:
            before = module.__dict__.get(name, _MISSING)
            setattr(module, name, value)
            undo.append(lambda m=module, n=name, b=before: _set(m, n, b))
        for key, value in environ.items():
            before = os.environ.get(key)
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
            undo.append(lambda k=key, b=before: (
                os.environ.pop(k, None) if b is None else os.environ.__setitem__(k, b)))
        yield
    finally:
        for step in reversed(undo):
            step()
