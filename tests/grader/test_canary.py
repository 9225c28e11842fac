"""Every name the canaries watch exists: a renamed module or function would otherwise be left
out of the snapshot silently, and tampering with it would go unseen."""

from __future__ import annotations

import builtins
import functools
import importlib
import sys

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


@pytest.fixture
def fresh_snapshot(monkeypatch):
    """The canaries as in a process that has taken no snapshot yet (this one's is put back after)."""
    for name, empty in (("_snapshot", {}), ("_module_globals", []), ("_plugins", set()), ("_quick", None)):
        monkeypatch.setattr(_canary, name, empty)


def test_a_replaced_function_and_a_swapped_code_are_reported(monkeypatch, fresh_snapshot):
    import torch

    from grader.checks import _compare

    _canary.snapshot(_Plugins())
    assert _canary.check(_Plugins(), behaviour=()) == []
    monkeypatch.setattr(_compare.assert_close, "__code__", (lambda *a, **k: None).__code__)
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    assert sorted(_canary.check(_Plugins(), behaviour=())) == [
        "the code of grader.checks._compare.assert_close was replaced", "torch.allclose was replaced"]


def _tamper(kind: str, monkeypatch, test_module) -> str:
    """Tamper as ``kind`` says; return what ``check`` must then report. What pytest itself calls
    is swapped for a stand-in that behaves the same: only its identity changes."""
    import types

    import _pytest.reports
    import torch

    if kind == "builtin":  # a stand-in that behaves the same: pytest itself goes on using it
        monkeypatch.setattr(builtins, "sum", functools.partial(builtins.sum))
        return "builtins.sum was replaced"
    if kind == "classmethod":
        same = vars(_pytest.reports.TestReport)["from_item_and_call"].__func__  # pytest goes on using it
        monkeypatch.setattr(_pytest.reports.TestReport, "from_item_and_call", classmethod(same))
        return "_pytest.reports.TestReport.from_item_and_call was replaced"
    if kind == "shadowed in a subclass":  # Tensor.__sub__ is TensorBase's: Tensor's own now comes first
        monkeypatch.setattr(torch.Tensor, "__sub__", lambda self, other: torch.zeros(()), raising=False)
        return "torch.Tensor.__sub__ was replaced"
    if kind == "owner replaced in sys.modules":
        from grader.checks import _compare

        fake = types.ModuleType(_compare.__name__)
        fake.__dict__.update({**vars(_compare), "assert_close": lambda *a, **k: None})
        monkeypatch.setitem(sys.modules, _compare.__name__, fake)
        return "grader.checks._compare.assert_close was replaced"
    if kind == "owner put in sys.modules":  # what `_resolve` finds first for torch.Tensor
        monkeypatch.setitem(sys.modules, "torch.Tensor", type("Tensor", (torch.Tensor,), {"__eq__": lambda *a: True}))
        return "torch.Tensor.__eq__ was replaced"
    if kind == "owner class replaced":
        monkeypatch.setattr(torch, "Tensor", type("Tensor", (torch.Tensor,), {"__eq__": lambda *a: True}))
        return "torch.Tensor.__eq__ was replaced"
    if kind == "code swapped":
        from grader.checks import _compare

        monkeypatch.setattr(_compare.assert_shape, "__code__", (lambda *a, **k: None).__code__)
        return "the code of grader.checks._compare.assert_shape was replaced"
    if kind == "base class inserted":  # what a watched class inherits now comes from elsewhere
        owner = sys.modules["drills_test_owner"]

        class Evil(owner.Base):
            def method(self):
                return None

        owner.Child.__bases__ = (Evil,)  # the class is this test's own: nothing to put back
        return "drills_test_owner.Child.method was replaced"
    if kind == "test module global":
        monkeypatch.setattr(test_module, "assert_close", lambda *a, **k: None)
        return f"globals of test module {test_module.__name__} were replaced: assert_close"
    if kind == "plugin":
        return "pytest plugin(s) registered by submitted code: _Plugin"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["builtin", "classmethod", "shadowed in a subclass", "owner replaced in sys.modules",
                                  "owner put in sys.modules", "owner class replaced", "code swapped",
                                  "base class inserted", "test module global", "plugin"])
def test_the_quick_pass_after_each_test_misses_no_kind_of_tampering(kind, monkeypatch, fresh_snapshot):
    import types

    import torch  # noqa: F401 - its Tensor is watched

    from grader.checks import _compare  # noqa: F401 - watched

    test_module = types.ModuleType("test_hidden_example")
    test_module.assert_close = _compare.assert_close
    owner = types.ModuleType("drills_test_owner")  # a watched class whose method is inherited

    class Base:
        def method(self):
            return 1

    owner.Base, owner.Child = Base, type("Child", (Base,), {})
    monkeypatch.setitem(sys.modules, owner.__name__, owner)
    monkeypatch.setattr(_canary, "_METHODS_OF", {**_canary._METHODS_OF, "drills_test_owner.Child": ("method",)})

    class _Plugin:
        pass

    plugins = _Plugins()
    _canary.snapshot(plugins, [test_module])
    assert _canary.check(plugins, behaviour=(), module=test_module) == []
    expected = _tamper(kind, monkeypatch, test_module)
    if kind == "plugin":
        plugins.get_plugins = lambda: {_Plugin()}
    assert expected in _canary.check(plugins, behaviour=(), module=test_module)
