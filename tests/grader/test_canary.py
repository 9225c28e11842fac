"""Every name the canaries watch exists: a renamed module or function would otherwise be left
out of the snapshot silently, and tampering with it would go unseen."""

from __future__ import annotations

import builtins
import importlib

import pytest

from grader import _canary

WATCHED = {**_canary._WATCHED, **_canary._METHODS_OF}


def _owner(path: str):
    """The module, or the class inside a module, that ``path`` names."""
    if path == "builtins":
        return builtins
    if path.startswith("tensorflow"):
        pytest.importorskip("tensorflow")
    try:
        return importlib.import_module(path)
    except ImportError:
        module_name, _, attr = path.rpartition(".")
        return getattr(importlib.import_module(module_name), attr)


@pytest.mark.parametrize("owner_path", sorted(WATCHED))
def test_every_watched_name_resolves(owner_path):
    owner = _owner(owner_path)
    missing = [name for name in WATCHED[owner_path] if _canary._lookup(owner, name) is None]
    assert not missing, f"{owner_path} has no {', '.join(missing)}: update grader._canary._WATCHED"
