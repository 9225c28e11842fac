"""Every option of the grader's commands is checked before any work starts: a bad value is a
clear error naming the option, exit status 2, and no traceback."""

from __future__ import annotations

import pytest

from grader import catalog
from grader.cli import main

EX = catalog.get_exercise("pytorch.tensors.broadcasting")


def _run(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


@pytest.mark.parametrize("option, value", [
    ("--test-timeout", "-1"), ("--test-timeout", "0"), ("--test-timeout", "nan"),
    ("--timeout", "0"), ("--timeout", "-5"), ("--timeout", "inf"), ("--timeout", "soon"),
    ("--memory-mb", "0"), ("--memory-mb", "-1"), ("--memory-mb", "1023"), ("--memory-mb", "1.5"),
    ("--fail-under", "-1"), ("--fail-under", "101"),
])
def test_score_refuses_bad_numbers(option, value, capsys):
    code, err = _run(["score", str(catalog.KIT_ROOT / "solutions"), "-e", EX.id, f"{option}={value}"], capsys)
    assert code == 2 and option in err, err


@pytest.mark.parametrize("option, value", [("--jobs", "0"), ("--jobs", "-2"), ("--memory-mb", "0"),
                                           ("--test-timeout", "-1"), ("--timeout", "0")])
def test_batch_refuses_bad_numbers(option, value, tmp_path, capsys):
    (tmp_path / "class" / "a").mkdir(parents=True)
    code, err = _run(["batch", str(tmp_path / "class"), "--out", str(tmp_path / "out"),
                      f"{option}={value}"], capsys)
    assert code == 2 and option in err, err
    assert not (tmp_path / "out").exists()  # nothing started


@pytest.mark.parametrize("argv", [["release", "OUT", "--minutes", "0"], ["list", "--max-minutes", "-3"],
                                  ["verify", "--jobs", "0"]])
def test_other_commands_refuse_bad_numbers(argv, tmp_path, capsys):
    code, err = _run([a.replace("OUT", str(tmp_path / "b")) for a in argv], capsys)
    assert code == 2 and argv[-2] in err, err


def test_the_included_ends_are_accepted(capsys):
    code, err = _run(["list", "--max-minutes", "1"], capsys)
    assert code == 0
    from grader._options import MEMORY_MB, MIN_MEMORY_MB, PERCENT

    assert MEMORY_MB(str(MIN_MEMORY_MB)) == MIN_MEMORY_MB
    assert PERCENT("0") == 0 and PERCENT("100") == 100


def test_score_output_in_a_missing_folder_is_refused_before_grading(tmp_path, capsys):
    target = tmp_path / "missing" / "dir" / "r.json"
    code, err = _run(["score", str(catalog.KIT_ROOT / "solutions"), "-e", EX.id, "-o", str(target)], capsys)
    assert code == 2 and "does not exist" in err
    code, err = _run(["score", str(catalog.KIT_ROOT / "solutions"), "-e", EX.id, "-o", str(tmp_path)], capsys)
    assert code == 2 and "is a folder" in err


def test_batch_out_that_is_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "class" / "a").mkdir(parents=True)
    (tmp_path / "results.txt").write_text("x")
    code, err = _run(["batch", str(tmp_path / "class"), "--out", str(tmp_path / "results.txt")], capsys)
    assert code == 2 and "is a file" in err


def test_a_missing_submission_or_a_stray_file_is_a_clear_error(tmp_path, capsys):
    code, err = _run(["score", str(tmp_path / "nope"), "-e", EX.id], capsys)
    assert code == 2 and "submission not found" in err
    (tmp_path / "notes.txt").write_text("hello")
    code, err = _run(["score", str(tmp_path / "notes.txt"), "-e", EX.id], capsys)
    assert code == 2 and "not this file" in err
