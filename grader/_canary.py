"""Canaries: prove, after submitted code has run, that the checks grading it still work.

``snapshot()`` records the identity of every function that decides a verdict (comparisons,
gradient checks, builtins, pytest's reporting, this kit's plugin) before the first submitted
module is imported. ``check()`` then reports any that were replaced, any plugin registered
since, and any check that no longer fails on inputs that must fail. Submitted code runs in the
same process as its tests, so this is how a patched comparison or report is caught.
"""

from __future__ import annotations

import builtins
import gc
import importlib
import operator
import sys
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

FRAMEWORKS = ("pytorch", "tensorflow")  # whose check libraries' behaviour ``check`` can prove

_WATCHED: dict[str, tuple[str, ...]] = {
    "builtins": ("isinstance", "AssertionError", "__import__", "abs", "all", "any", "float", "len",
                 "max", "min", "sum", "getattr", "hasattr", "type"),
    "os": ("_exit", "kill", "fork"),
    "sys": ("exit",),
    "json": ("dumps",),
    "hmac": ("new", "compare_digest"),
    "_pytest.runner": ("call_and_report", "pytest_runtest_call", "pytest_runtest_makereport",
                       "check_interactive_exception"),
    "_pytest.reports": ("TestReport",),
    "_pytest.python": ("pytest_pyfunc_call",),
    "_pytest.outcomes": ("skip", "xfail", "fail", "exit"),
    "grader.pytest_plugin": ("pytest_runtest_makereport", "_final_outcome", "_emit",
                             "_ReportCollector"),
    "grader.feedback": ("learner_message", "message_text", "stub_untouched"),
    "grader._records": ("writer", "_sign"),
    "grader.checks._compare": ("assert_close", "assert_shape", "assert_device", "assert_tensor"),
    "grader.checks._gradients": ("check_gradients", "_explain"),
    "grader._errors": ("assert_raises_naming",),
    "grader.checks._opcount": ("count_aten_ops", "record_aten_ops"),
    "grader.checks._held": ("tensors_held_by",),
    "grader.checks._loading": ("load_batches",),
    "grader.checks._saved": ("count_saved_tensors",),
    "grader.checks._ranks": ("run_ranks", "Ranks", "_raise_rank_error"),
    "grader.tfchecks._compare": ("assert_close", "assert_shape", "assert_dtype"),
    "grader.tfchecks._gradients": ("check_gradients", "central_differences"),
    "grader.tfchecks._tracing": ("retrace_counter", "_tracing_count"),
    "torch": ("allclose", "isclose", "equal", "eq", "testing"),
    "torch.testing": ("assert_close",),
    "torch.autograd": ("gradcheck", "gradgradcheck", "grad", "backward"),
    "torch.Tensor": ("__eq__", "__ne__", "__sub__", "__rsub__", "__gt__", "__lt__", "__abs__",
                     "allclose", "equal", "abs", "sub", "any", "all", "backward", "item", "tolist",
                     "isnan", "isinf", "to", "detach"),
    "tensorflow": ("debugging", "GradientTape"),
    "tensorflow.test": ("compute_gradient",),
    "numpy": ("allclose", "testing"),
    "numpy.testing": ("assert_allclose",),
}
_METHODS_OF = {"_pytest.reports.TestReport": ("from_item_and_call",),
               "grader.checks._ranks.Ranks": ("run", "_collect")}

# (owner path, name) -> the value then, and its code where it had one (a Python function's code
# can be swapped in place; a builtin's cannot be given one).
_snapshot: dict[tuple[str, str], tuple[Any, Any]] = {}
_plugins: set[int] = set()
_module_globals: list[tuple[Any, dict[str, Any]]] = []


@dataclass(frozen=True)
class _Quick:
    """The snapshot laid out for one pass of C-level identity comparisons (``_unchanged``):
    after every test, ``check`` spends a few microseconds where nothing changed, not a Python
    loop over every watched name (0.2 ms a test in a grading child, its caches cold). Anything
    it does not find as it was sends ``check`` to its full comparison, which says what changed."""

    module_paths: tuple[str, ...]  # owners found in sys.modules, and those modules then
    modules: tuple[Any, ...]
    # Other owners, not in sys.modules then (nor may they be now): (path, module, attribute, the owner then)
    attributes: tuple[tuple[str, str, str, Any], ...]
    mros: tuple[tuple[type, tuple[type, ...]], ...]  # class owners and their MRO then
    # Per watched name: the namespace that holds it (a module's dict, or the dict of the class
    # of its owner's MRO that defines it), the name, and its value then.
    namespaces: tuple[dict[str, Any], ...]
    names: tuple[str, ...]
    values: tuple[Any, ...]
    shadows: tuple[tuple[dict[str, Any], frozenset[str]], ...]  # an MRO's classes before the definer: none of the names
    functions: tuple[Any, ...]  # watched Python functions, and their code then
    codes: tuple[Any, ...]
    slow: bool  # some watched name lies outside its owner's namespace (a module __getattr__)
    module_globals: dict[int, tuple[dict[str, Any], tuple[str, ...], tuple[Any, ...]]]  # by id(test module)


def _namespace(owner: Any) -> dict[str, Any] | None:
    """The dict that holds ``owner``'s attributes: a class's ``vars`` is a read-only view of it,
    which ``dict.get`` cannot take."""
    found = vars(owner)
    if not isinstance(found, dict):
        found = next((r for r in gc.get_referents(found) if isinstance(r, dict)), None)
    return found


_quick: _Quick | None = None


def _resolve(path: str) -> Any:
    module_name, _, attr = path.rpartition(".")
    if path in sys.modules:
        return sys.modules[path]
    if module_name in sys.modules and attr:
        return getattr(sys.modules[module_name], attr, None)
    return None


def _lookup(owner: Any, name: str) -> Any:
    """The attribute as stored (no descriptor binding, so the same object each time)."""
    if isinstance(owner, type):
        return next((k.__dict__[name] for k in owner.__mro__ if name in k.__dict__), None)
    return getattr(owner, name, None)


def _importable(owner_path: str) -> bool:
    """Kit and pytest modules are imported to be watched, except the framework check packages:
    importing those imports torch or TensorFlow (seconds), and a run whose tests never imported
    one does not use it to decide anything."""
    framework = owner_path.startswith(("grader.checks", "grader.tfchecks"))
    return owner_path.startswith(("grader", "_pytest")) and not framework


def taken() -> bool:
    """Whether ``snapshot()`` has run in this process."""
    return bool(_snapshot)


def snapshot(pluginmanager: Any, test_modules: list[Any] = ()) -> None:
    """Record the watched functions, the registered pytest plugins and the globals of
    ``test_modules`` as they are now (before any submitted code has run)."""
    if _snapshot:
        return
    _module_globals.extend((m, dict(vars(m))) for m in test_modules)
    for owner_path, names in {**_WATCHED, **_METHODS_OF}.items():
        owner = builtins if owner_path == "builtins" else _resolve(owner_path)
        if owner is None:
            try:
                owner = importlib.import_module(owner_path) if _importable(owner_path) else None
            except ImportError:
                owner = None
        if owner is None:
            continue
        for name in names:
            value = _lookup(owner, name)
            if value is not None:
                _snapshot[(owner_path, name)] = (value, getattr(value, "__code__", None))
    _plugins.update(id(p) for p in pluginmanager.get_plugins())
    global _quick
    _quick = _lay_out()


def _lay_out() -> _Quick:
    owners = {path: builtins if path == "builtins" else _resolve(path) for path, _ in _snapshot}
    in_modules = {path: owner for path, owner in owners.items() if sys.modules.get(path) is owner}
    attributes = tuple((path, *path.rpartition(".")[::2], owner)
                       for path, owner in owners.items() if path not in in_modules and path != "builtins")
    namespaces, names, values, slow = [], [], [], False
    shadows: dict[int, tuple[dict[str, Any], set[str]]] = {}
    for (path, name), (value, _) in _snapshot.items():
        owner = owners[path]
        mro = owner.__mro__ if isinstance(owner, type) else (owner,)
        defining = next((k for k in mro if name in vars(k)), None)
        namespace = _namespace(defining) if defining is not None else None
        if namespace is None or namespace.get(name) is not value:
            slow = True
            continue
        namespaces.append(namespace)
        names.append(name)
        values.append(value)
        for before in mro[:mro.index(defining)]:
            if (held := _namespace(before)) is None:
                slow = True  # a class whose dict cannot be watched: the full comparison, every time
            else:
                shadows.setdefault(id(before), (held, set()))[1].add(name)
    with_code = [(value, code) for value, code in _snapshot.values() if code is not None]
    return _Quick(
        module_paths=tuple(in_modules), modules=tuple(in_modules.values()), attributes=attributes,
        mros=tuple((o, o.__mro__) for o in owners.values() if isinstance(o, type)),
        namespaces=tuple(namespaces), names=tuple(names), values=tuple(values),
        shadows=tuple((namespace, frozenset(names)) for namespace, names in shadows.values()),
        functions=tuple(f for f, _ in with_code), codes=tuple(c for _, c in with_code), slow=slow,
        module_globals={id(m): (vars(m), tuple(names), tuple(names.values())) for m, names in _module_globals})


def _same(now, then) -> bool:
    return len(now) == len(then) and all(map(operator.is_, now, then))


def _unchanged(quick: _Quick, pluginmanager: Any, module: Any) -> bool:
    """Whether every watched name, the globals of the test module ``module`` (None: of every
    test module) and the registered plugins are as ``snapshot()`` found them."""
    is_ = operator.is_
    if not (not quick.slow
            and all(map(is_, map(sys.modules.get, quick.module_paths), quick.modules))
            and all(path not in sys.modules and getattr(sys.modules.get(m), a, None) is o
                    for path, m, a, o in quick.attributes)
            and all(_same(o.__mro__, mro) for o, mro in quick.mros)
            and all(map(is_, map(dict.get, quick.namespaces, quick.names), quick.values))
            and not any(any(map(namespace.__contains__, names)) for namespace, names in quick.shadows)
            and all(map(is_, map(operator.attrgetter("__code__"), quick.functions), quick.codes))
            and _plugins.issuperset(map(id, pluginmanager.get_plugins()))):
        return False
    tested = quick.module_globals.values() if module is None else [quick.module_globals.get(id(module))]
    return all(entry is None or all(map(is_, map(entry[0].get, entry[1]), entry[2])) for entry in tested)


def _behaviour(frameworks: Collection[str]) -> list[str]:
    problems = []
    torch = sys.modules.get("torch")
    if torch is not None and "pytorch" in frameworks:
        a, b = torch.zeros(3), torch.ones(3)
        if torch.allclose(a, b) or torch.equal(a, b) or bool((a == b).all()):
            problems.append("torch comparisons report different tensors as equal")
        from grader.checks import assert_close

        try:
            assert_close(a, b)
            problems.append("grader.checks.assert_close accepts different tensors")
        except AssertionError:
            pass
        try:
            torch.testing.assert_close(a, b)
            problems.append("torch.testing.assert_close accepts different tensors")
        except AssertionError:
            pass
        x = torch.tensor([1.5], dtype=torch.float64, requires_grad=True)
        wrong = _wrong_gradient_function(torch)
        if torch.autograd.gradcheck(wrong.apply, (x,), raise_exception=False):
            problems.append("torch.autograd.gradcheck accepts a wrong gradient")
    if "grader.tfchecks" in sys.modules and "tensorflow" in frameworks:
        problems.extend(_tf_behaviour())
    return problems


def _tf_behaviour() -> list[str]:
    from grader.tfchecks import assert_close, check_gradients
    from grader.tfchecks._env import tf

    problems = []
    try:
        assert_close(tf.zeros(3), tf.ones(3))
        problems.append("grader.tfchecks.assert_close accepts different tensors")
    except AssertionError:
        pass

    @tf.custom_gradient
    def wrong(x):
        return x * x, lambda dy: dy  # the derivative of x*x is 2x: this is wrong on purpose

    try:
        check_gradients(wrong, tf.constant([1.5], tf.float64))
        problems.append("grader.tfchecks.check_gradients accepts a wrong gradient")
    except AssertionError:
        pass
    return problems


def _wrong_gradient_function(torch):
    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, grad):
            return grad  # the derivative of x*x is 2x: this is wrong on purpose

    return Wrong


def check(pluginmanager: Any, *, behaviour: Collection[str] = FRAMEWORKS, module: Any = None) -> list[str]:
    """What was tampered with since ``snapshot()``: an empty list when nothing was (or no
    snapshot was taken, i.e. no submitted code has run).

    The identity checks are cheap and meant for after every test; ``behaviour`` adds the
    behavioural canaries of the check libraries of those frameworks (``FRAMEWORKS``; tens of
    milliseconds), meant for the end of each exercise's tests, whose checks they prove (a library
    tampered with while another framework's exercise ran is caught after the next exercise that
    uses it). ``module``: compare the globals of that test module only (after one of its tests),
    not of all.
    """
    if not _snapshot:
        return []
    unchanged = _quick is not None and _unchanged(_quick, pluginmanager, module)
    problems = [] if unchanged else _changed(pluginmanager, module)
    if not behaviour:
        return problems
    try:
        problems.extend(_behaviour(behaviour))
    except Exception as exc:  # noqa: BLE001 - a broken check is itself tampering
        problems.append(f"a canary check raised {type(exc).__name__}: {exc}")
    return problems


def _changed(pluginmanager: Any, module: Any) -> list[str]:
    """What ``check`` reports changed since ``snapshot()``, behaviour aside."""
    problems = []
    owners: dict[str, Any] = {}  # after every test: each owner resolved once, not once per name
    for (owner_path, name), (value, code) in _snapshot.items():
        if owner_path not in owners:
            owners[owner_path] = builtins if owner_path == "builtins" else _resolve(owner_path)
        owner = owners[owner_path]
        now = _lookup(owner, name) if owner is not None else None
        if now is not value:
            problems.append(f"{owner_path}.{name} was replaced")
        elif code is not None and value.__code__ is not code:
            problems.append(f"the code of {owner_path}.{name} was replaced")
    for test_module, names in _module_globals:
        if module is not None and test_module is not module:
            continue
        now = vars(test_module)
        changed = [n for n, v in names.items() if now.get(n, None) is not v]
        if changed:
            problems.append(f"globals of test module {test_module.__name__} were replaced: {', '.join(changed[:5])}")
    added = [type(p).__name__ for p in pluginmanager.get_plugins() if id(p) not in _plugins]
    if added:
        problems.append(f"pytest plugin(s) registered by submitted code: {', '.join(added)}")
    return problems


__all__ = ["check", "snapshot", "taken"]
