"""``grader new ID``: the files of a new exercise, shaped as the kit's rules want them."""

from __future__ import annotations

import ast

import pytest

from grader import catalog
from grader.cli import main
from grader.workflows.stubs import looks_like_stub


@pytest.fixture
def kit(tmp_path, monkeypatch):
    (tmp_path / "exercises").mkdir()
    (tmp_path / "catalog.toml").write_text("# a kit with no exercise yet\n")
    previous = catalog.KIT_ROOT
    # `--kit` sets $DRILLS_KIT_ROOT for this process's children; the tests after these get back
    # the environment they had (a kit found from the working directory, not named).
    monkeypatch.setenv(catalog.KIT_ENV, str(previous))
    yield tmp_path
    catalog.use_kit(previous)


def test_new_writes_every_file_and_a_catalog_entry(kit, capsys):
    assert main(["--kit", str(kit), "new", "pytorch.demo.add", "--title", "Add two tensors",
                 "--difficulty", "easy", "--minutes", "10"]) == 0
    ex = catalog.get_exercise("pytorch.demo.add")
    assert (ex.title, ex.difficulty, ex.minutes) == ("Add two tensors", "easy", 10)
    for path in (ex.stub, ex.public_tests, ex.reference, ex.hidden_tests,
                 ex.reference.with_name("add.contract.toml")):
        assert path.is_file(), path
        if path.suffix == ".py":
            ast.parse(path.read_text())
    assert (ex.reference.parent / "wrong" / "add").is_dir()
    stub = ex.stub.read_text()
    assert looks_like_stub(stub)  # reads as not started
    doc = ast.get_docstring(ast.parse(stub))
    assert "Contract\n--------" in doc and "Hints\n-----" in doc
    assert "pytorch/demo/add.py" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["pytorch.add"], "an id is"),
    (["keras.demo.add"], "an id is"),
    (["pytorch.demo.not-a-name"], "identifier"),
])
def test_new_refuses_bad_ids_with_status_2(kit, capsys, args, message):
    assert main(["--kit", str(kit), "new", *args, "--title", "T"]) == 2
    assert message in capsys.readouterr().err
    assert not list((kit / "exercises").rglob("*.py"))


def test_new_never_overwrites(kit, capsys):
    assert main(["--kit", str(kit), "new", "crossframework.swap", "--title", "Swap"]) == 0
    assert catalog.get_exercise("crossframework.swap").topic == "interop"
    assert main(["--kit", str(kit), "new", "crossframework.swap", "--title", "Swap"]) == 2
    assert "already in the catalog" in capsys.readouterr().err
