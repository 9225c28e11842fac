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


class _Plugins:
    def get_plugins(self) -> set:
        return set()


def test_a_replaced_function_and_a_swapped_code_are_reported(monkeypatch):
    import torch

    from grader.checks import _compare

    for name, empty in (("_snapshot", {}), ("_module_globals", []), ("_plugins", set())):
        monkeypatch.setattr(_canary, name, empty)
    _canary.snapshot(_Plugins())
    assert _canary.check(_Plugins(), behaviour=()) == []
    monkeypatch.setattr(_compare.assert_close, "__code__", (lambda *a, **k: None).__code__)
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    assert sorted(_canary.check(_Plugins(), behaviour=())) == [
        "the code of grader.checks._compare.assert_close was replaced", "torch.allclose was replaced"]
