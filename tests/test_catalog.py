"""catalog.toml matches the files on disk, and the catalog loader rejects malformed entries."""

import ast
from pathlib import Path

import pytest

from grader import catalog
from grader.workflows.contract import defined_tests

EXERCISES = list(catalog.load_catalog().values())


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.id)
def test_every_catalog_entry_has_all_its_files(ex):
    for path in (ex.stub, ex.public_tests, ex.reference, ex.hidden_tests):
        assert path.is_file(), f"{ex.id}: missing {path.relative_to(catalog.KIT_ROOT)}"
    assert len(ex.wrong_solutions) >= 2, f"{ex.id}: needs at least two wrong solutions"
    assert "NotImplementedError" in ex.stub.read_text(), f"{ex.id}: stub does not raise NotImplementedError"


# What a test sets up in its own process: a submission graded apart runs none of it. (What the
# test's ``monkeypatch`` fixture sets on a module reaches it: ``grader.remote._patches``.)
_PROCESS_WIDE = ("setattr", "setprofile", "settrace")


@pytest.mark.parametrize("ex", [ex for ex in EXERCISES if ex.separate_process], ids=lambda e: e.id)
def test_no_suite_graded_apart_patches_or_traces_its_own_process(ex):
    """A ban (a torch function replaced by one that fails) or a profiler set in the test's
    process by hand never sees a submission graded in a process of its own: such a suite passes
    code that delegates. ``grader.checks.record_calls`` watches the call where it runs."""
    for path in (ex.public_tests, ex.hidden_tests):
        names = {node.attr if isinstance(node, ast.Attribute) else node.id
                 for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, (ast.Attribute, ast.Name)) and not _of_monkeypatch(node)}
        found = sorted(names.intersection(_PROCESS_WIDE))
        assert not found, f"{path.relative_to(catalog.KIT_ROOT)} uses {found}: use grader.checks.record_calls"


# Loaders that unpickle what they read (their own documentation warns so), or that import and call
# what a saved model's config names (Keras's), or run the graph a SavedModel holds: given a file the
# submission wrote, they would run code of its choosing in the tests' process. So does torch.load
# unless told weights_only=True, and np.load when told allow_pickle.
_UNPICKLING = {("jit", "load"), ("export", "load"), ("pickle", "load"), ("pickle", "loads"), ("saving", "load_model"),
               ("models", "load_model"), ("saved_model", "load")}


@pytest.mark.parametrize("ex", [ex for ex in EXERCISES if ex.separate_process], ids=lambda e: e.id)
def test_no_suite_graded_apart_unpickles_in_its_own_process(ex):
    """A suite graded apart loads TorchScript and exported programs and Keras models where the
    submission lives (``grader.checks.where_the_submission_lives``), and checkpoints with
    ``weights_only=True``."""
    for path in (ex.public_tests, ex.hidden_tests):
        found = []
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner = node.func.value
            name = (owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None), node.func.attr)
            keywords = {k.arg: getattr(k.value, "value", k.value) for k in node.keywords}
            if (name in _UNPICKLING or (name == ("torch", "load") and keywords.get("weights_only") is not True)
                    or (name[1] == "load" and name[0] in ("np", "numpy") and keywords.get("allow_pickle", False)
                        is not False)):
                found.append(f"line {node.lineno}: {'.'.join(name)}")
        assert not found, (f"{path.relative_to(catalog.KIT_ROOT)} unpickles in the tests' process ({found}): "
                           "use grader.checks.where_the_submission_lives, or torch.load(..., weights_only=True)")


def _of_monkeypatch(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "monkeypatch"


def test_every_exercise_file_on_disk_is_in_the_catalog():
    known = {ex.stub for ex in EXERCISES} | {ex.public_tests for ex in EXERCISES}
    on_disk = set((catalog.KIT_ROOT / "exercises").rglob("*.py"))
    assert sorted(map(str, on_disk - known)) == []
    known_solutions = {p for ex in EXERCISES
                       for p in (ex.reference, ex.hidden_tests, *(w.path for w in ex.wrong_solutions))}
    solutions = catalog.KIT_ROOT / "solutions"
    on_disk = set(solutions.rglob("*.py")) | set(solutions.glob("**/wrong/*/*.toml"))
    assert sorted(map(str, on_disk - known_solutions)) == []


DECLARED = [w for ex in EXERCISES for w in ex.wrong_solutions if w.declared]


@pytest.mark.parametrize("mistake", DECLARED, ids=lambda w: f"{w.path.parent.name}/{w.name}")
def test_every_declared_mistake_applies_to_todays_reference(mistake):
    source = mistake.source()  # raises when an edit's `old` text no longer occurs `count` times
    ast.parse(source)
    assert source != mistake.reference.read_text(encoding="utf-8")
    assert ast.get_docstring(ast.parse(source)).startswith("Wrong: ")


@pytest.mark.parametrize("ex", [ex for ex in EXERCISES if any(w.declared for w in ex.wrong_solutions)],
                         ids=lambda e: e.id)
def test_every_caught_by_name_is_a_test_that_exists(ex):
    tests = defined_tests(ex.hidden_tests) | defined_tests(ex.public_tests)
    for mistake in ex.wrong_solutions:
        missing = [t for t in mistake.caught_by if t.split("[", 1)[0] not in tests]
        assert not missing, f"{mistake.path.name}: caught_by names no test of {ex.id}: {missing}"


def test_catalog_fields_are_sane():
    for ex in EXERCISES:
        assert ex.minutes > 0 and ex.seeds, ex.id
        assert all("#" in s for s in ex.seeds), f"{ex.id}: seed references look like '004#51'"


def test_catalog_extras_are_the_kits_optional_extras():
    import tomllib

    extras = tomllib.loads((catalog.KIT_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for ex in EXERCISES:
        assert set(ex.extras) <= set(extras), f"{ex.id}: extras {ex.extras} not all in pyproject's {sorted(extras)}"


@pytest.mark.parametrize("text, message", [
    ('[[exercise]]\nid = "a.b.c"\n', "missing field"),
    ('[[exercise]]\nid = "pytorch.x.y"\ntitle = "t"\nframework = "jax"\ntopic = "x"\n'
     'difficulty = "easy"\nminutes = 1\nseeds = []\n', "framework"),
    ('[[exercise]]\nid = "pytorch.x.y"\ntitle = "t"\nframework = "pytorch"\ntopic = "z"\n'
     'difficulty = "easy"\nminutes = 1\nseeds = []\n', "matching its fields"),
    ("not toml = = 1", "not valid TOML"),
    ('[[exercise]]\nid = "pytorch.x.y"\ntitle = "t"\nframework = "pytorch"\ntopic = "x"\n'
     'difficulty = "easy"\nminutes = 1\nseeds = []\nextras = "tensorboard"\n', "extras"),
])
def test_malformed_catalog_is_rejected_with_a_clear_message(tmp_path: Path, text, message):
    path = tmp_path / "catalog.toml"
    path.write_text(text)
    with pytest.raises(catalog.CatalogError, match=message):
        catalog.load_catalog(path)


def test_crossframework_ids_have_no_topic_level(tmp_path: Path):
    path = tmp_path / "catalog.toml"
    path.write_text('[[exercise]]\nid = "crossframework.port_weights"\ntitle = "t"\n'
                    'framework = "crossframework"\ntopic = "interop"\ndifficulty = "hard"\n'
                    'minutes = 30\nseeds = ["000#Compare"]\n')
    ex = catalog.load_catalog(path)["crossframework.port_weights"]
    assert ex.relpath.as_posix() == "crossframework/port_weights.py"


def test_unknown_id_names_the_id():
    with pytest.raises(catalog.CatalogError, match="'pytorch.nope.nothing'"):
        catalog.get_exercise("pytorch.nope.nothing")
