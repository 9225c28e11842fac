"""grader hint and grader reset: hints and the pristine stub survive the learner's edits."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from grader import catalog, progress
from grader.cli import main
from grader.workflows import stubs
from tests.helpers import make_submission

EX = catalog.get_exercise("pytorch.tensors.broadcasting")
OTHER = catalog.get_exercise("pytorch.tensors.from_data")
STUB = EX.stub.read_text()


def test_every_kit_stub_looks_like_a_stub_and_no_reference_does():
    for ex in catalog.load_catalog().values():
        if ex.stub.is_file():
            assert stubs.looks_like_stub(ex.stub.read_text()), ex.id
        if ex.reference.is_file():
            assert not stubs.looks_like_stub(ex.reference.read_text()), ex.id


def test_hint_prints_the_hints_title_and_minutes(capsys):
    assert main(["hint", EX.id]) == 0
    out = capsys.readouterr().out
    assert EX.title in out and f"about {EX.minutes} min" in out
    assert "derivative of ``sqrt`` at 0" in out
    assert "Contract" not in out  # only the Hints section


def test_hint_of_an_unknown_id_names_it(capsys):
    assert main(["hint", "pytorch.tensors.nope"]) == 2
    assert "'pytorch.tensors.nope'" in capsys.readouterr().err


@pytest.fixture(autouse=True)
def _state(tmp_path, monkeypatch):
    """Kept attempts go to a fresh state folder, never the kit's own."""
    monkeypatch.setenv(progress.STATE_ENV, str(tmp_path / "state"))


def _work(tmp_path):
    return make_submission(tmp_path / "work", {EX: "# my attempt\n", OTHER: "# my other attempt\n"})


KIT_STUBS = ["--from", str(catalog.KIT_ROOT / "exercises")]


def test_reset_restores_one_module_and_keeps_the_learners_version(tmp_path, capsys):
    root = _work(tmp_path)
    assert main(["reset", EX.id, str(root), "--yes", *KIT_STUBS]) == 0
    assert (root / EX.relpath).read_text() == STUB
    assert (root / OTHER.relpath).read_text() == "# my other attempt\n"
    [kept] = stubs.attempts(EX)
    assert kept.number == 1 and kept.path.read_text() == "# my attempt\n"
    assert kept.path.is_relative_to(tmp_path / "state" / "attempts" / EX.id)
    assert (tmp_path / "state" / ".gitignore").read_text().splitlines()[-1] == "*"  # never committed
    out = capsys.readouterr().out
    assert f"your version is kept as attempt 1: {kept.path}" in out
    assert f"grader restore {EX.id} 1" in out


def test_every_reset_keeps_its_own_version_and_none_is_overwritten(tmp_path):
    root = _work(tmp_path)
    for text in ("# first try\n", "# second try\n", "# first try\n", "# third try\n"):
        (root / EX.relpath).write_text(text)
        stubs.reset(EX, root, catalog.KIT_ROOT / "exercises")
    # A version already kept is not kept twice; resetting the stub itself keeps nothing.
    stubs.reset(EX, root, catalog.KIT_ROOT / "exercises")
    kept = stubs.attempts(EX)
    assert [a.number for a in kept] == [1, 2, 3]
    assert [a.path.read_text() for a in kept] == ["# first try\n", "# second try\n", "# third try\n"]


def test_restore_brings_back_an_attempt_and_keeps_the_replaced_version(tmp_path, capsys):
    root = _work(tmp_path)
    stubs.reset(EX, root, catalog.KIT_ROOT / "exercises")
    (root / EX.relpath).write_text("# started over\n")
    assert main(["restore", EX.id, "1", str(root), "--yes"]) == 0
    assert (root / EX.relpath).read_text() == "# my attempt\n"
    assert [a.path.read_text() for a in stubs.attempts(EX)] == ["# my attempt\n", "# started over\n"]
    assert "kept as attempt 2" in capsys.readouterr().out
    # The newest by default; the untouched stub it replaces is not kept as an attempt.
    (root / EX.relpath).write_text(STUB)
    module, chosen, kept = stubs.restore(EX, root)
    assert chosen.number == 2 and kept is None and module.read_text() == "# started over\n"


def test_restore_and_attempts_say_what_is_missing(tmp_path, capsys):
    root = _work(tmp_path)
    assert main(["restore", EX.id, "1", str(root), "--yes"]) == 2
    assert f"no kept attempt of {EX.id}" in capsys.readouterr().err
    stubs.reset(EX, root, catalog.KIT_ROOT / "exercises")
    assert main(["restore", EX.id, "7", str(root), "--yes"]) == 2
    assert "has no attempt 7 (kept: 1" in capsys.readouterr().err
    assert main(["attempts", EX.id]) == 0
    listed = capsys.readouterr().out
    assert EX.id in listed and "    1  " in listed and "1 lines" in listed
    assert main(["attempts", OTHER.id]) == 0
    assert "no kept attempts of" in capsys.readouterr().err


def test_a_version_that_cannot_be_kept_is_not_reset(tmp_path, monkeypatch, capsys):
    root = _work(tmp_path)
    blocker = tmp_path / "state-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(progress.STATE_ENV, str(blocker))
    assert main(["reset", EX.id, str(root), "--yes", *KIT_STUBS]) == 2
    assert "cannot keep your version" in capsys.readouterr().err
    assert (root / EX.relpath).read_text() == "# my attempt\n"


def test_reset_asks_first(tmp_path, monkeypatch, capsys):
    root = _work(tmp_path)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert main(["reset", EX.id, str(root), *KIT_STUBS]) == 1
    assert (root / EX.relpath).read_text() == "# my attempt\n"
    assert stubs.attempts(EX) == []
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert main(["reset", EX.id, str(root), *KIT_STUBS]) == 0
    assert (root / EX.relpath).read_text() == STUB


def test_packaged_stubs_are_used_without_git(tmp_path, monkeypatch):
    monkeypatch.setattr(stubs, "_from_git", lambda ex: None)
    monkeypatch.setattr(stubs, "PACKAGED_STUBS", tmp_path / "_stubs")
    with pytest.raises(stubs.StubError, match="--from"):
        stubs.pristine_stub(EX)
    make_submission(tmp_path / "_stubs", {EX: STUB})
    text, origin = stubs.pristine_stub(EX)
    assert text == STUB and "_stubs" in origin


def test_without_any_pristine_copy_reset_fails_cleanly(tmp_path, monkeypatch, capsys):
    root = _work(tmp_path)
    monkeypatch.setattr(stubs, "_from_git", lambda ex: None)
    monkeypatch.setattr(stubs, "PACKAGED_STUBS", tmp_path / "none")
    assert main(["reset", EX.id, str(root), "--yes"]) == 2
    assert "--from" in capsys.readouterr().err
    assert (root / EX.relpath).read_text() == "# my attempt\n"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_history_gives_the_newest_stub_even_after_the_learner_commits(tmp_path, monkeypatch):
    repo = tmp_path / "kit"
    make_submission(repo / "exercises", {EX: STUB})

    def git(*args):
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com",
                        *args], check=True, capture_output=True)

    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "stub")
    (repo / "exercises" / EX.relpath).write_text(EX.reference.read_text())
    git("commit", "-qam", "my solution")
    monkeypatch.setattr(catalog, "KIT_ROOT", repo)
    text, origin = stubs.pristine_stub(EX)
    assert text == STUB and origin.startswith("git ")


def test_the_kits_own_checkout_resets_from_git(tmp_path):
    if stubs._from_git(EX) is None:
        pytest.skip("the kit is not a git checkout with this stub committed")
    root = _work(tmp_path)
    stubs.reset(EX, root)
    assert stubs.looks_like_stub((root / EX.relpath).read_text())


def test_functions_a_stub_names_in_given_are_part_of_it():
    given = ('GIVEN = ("buggy",)\n\ndef buggy(x):\n    def inner():\n        return 1\n    return x + inner()\n\n'
             'def task(x):\n    raise NotImplementedError\n')
    assert stubs.looks_like_stub(given)
    assert not stubs.looks_like_stub(given.replace('GIVEN = ("buggy",)', 'GIVEN = ()'))
    solved = given.replace("    raise NotImplementedError", "    return buggy(x)")
    assert not stubs.looks_like_stub(solved), "a module whose task is solved is not a stub, GIVEN or not"
    assert not stubs.looks_like_stub('GIVEN = ("buggy",)\n\ndef buggy(x):\n    return x\n'), "nothing left to write"
