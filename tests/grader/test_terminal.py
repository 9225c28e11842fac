"""Terminal output of the learner's commands (score table, status, list): rich tables and colour
on a terminal, NO_COLOR respected, and the plain text of pipes and logs exactly as before."""

from __future__ import annotations

import re

import pytest

from grader import catalog, progress
from grader.cli import main
from grader.engine.scoring import ExerciseResult, Report, TestResult
from grader.reports import formats
from grader.workflows import status

COLOUR = re.compile(r"\x1b\[[0-9;]*3[0-7](;[0-9]+)*m")  # an SGR sequence setting a foreground colour
ANSI = re.compile(r"\x1b\[")
FROM_DATA = catalog.get_exercise("pytorch.tensors.from_data")
BROADCASTING = catalog.get_exercise("pytorch.tensors.broadcasting")


def _report() -> Report:
    done = ExerciseResult(FROM_DATA.id, 2.0, 2.0, [
        TestResult("test_from_data.py::test_a", "passed", 1.0, 1.0, "visible"),
        TestResult("test_from_data_hidden.py::test_b", "passed", 1.0, 1.0, "hidden")])
    failing = ExerciseResult(BROADCASTING.id, 1.0, 3.0, [
        TestResult("test_broadcasting.py::test_c", "passed", 1.0, 1.0, "visible"),
        TestResult("test_broadcasting_hidden.py::test_d", "failed", 0.0, 2.0, "hidden",
                   "pairwise([1, 2]) gave [nan]: a [bold]markup-like[/bold] message")])
    return Report("sub", 3.0, 5.0, [done, failing], 1.5, problems=["a problem"])


def _progress() -> status.Progress:
    rows = [status.ExerciseStatus(FROM_DATA, status.DONE, progress.PublicCheck(progress.PASS, 3),
                                  progress.FullCheck(115, 115)),
            status.ExerciseStatus(BROADCASTING, status.FAILING, progress.PublicCheck(progress.PASS, 3),
                                  progress.FullCheck(7, 14, "test_d: [x] wrong"))]
    return status.Progress(catalog.KIT_ROOT / "exercises", rows, 0.5)


@pytest.fixture
def terminal(monkeypatch):
    """stdout counts as a terminal (rich honours FORCE_COLOR), wide enough for a row per line."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)


@pytest.fixture(autouse=True)
def _plain_by_default(monkeypatch, tmp_path):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv(progress.STATE_ENV, str(tmp_path / "state"))
    monkeypatch.setattr("grader.engine.scoring.score_path", lambda *args, **kwargs: _report())
    monkeypatch.setattr(status, "collect", lambda *args, **kwargs: _progress())


def test_score_table_in_a_pipe_is_the_plain_text_exactly(tmp_path, capsys):
    assert main(["score", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out == formats.render_table(_report())
    assert not ANSI.search(out)


def test_score_table_on_a_terminal_is_a_coloured_rich_table(tmp_path, capsys, terminal):
    assert main(["score", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert COLOUR.search(out) and out != formats.render_table(_report())
    plain = ANSI.sub("", re.sub(r"\x1b\[[0-9;]*m", "", out))
    for text in (FROM_DATA.id, "2/2", "1/3", "failing", "3/5", "(60.0%) in 1.5 s", "problem: a problem",
                 "a [bold]markup-like[/bold] message"):  # rich markup in messages is shown, not applied
        assert text in plain


def test_no_color_keeps_the_table_and_drops_the_colour(tmp_path, capsys, terminal, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert main(["score", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "first failure: test_broadcasting_hidden.py::test_d" in re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert not COLOUR.search(out)


def test_status_plain_and_on_a_terminal(capsys, monkeypatch):
    assert main(["status"]) == 0
    plain = capsys.readouterr().out
    assert plain == status.render(_progress()) and not ANSI.search(plain)
    assert "full 7/14" in plain and "full check 7/14; first failure: test_d: [x] wrong" in plain
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert main(["status"]) == 0
    rich = capsys.readouterr().out
    assert COLOUR.search(rich)
    stripped = re.sub(r"\x1b\[[0-9;]*m", "", rich)
    assert "115/115" in stripped and "first failure: test_d: [x] wrong" in stripped
    monkeypatch.setenv("NO_COLOR", "1")
    assert main(["status"]) == 0
    assert not COLOUR.search(capsys.readouterr().out)


def test_list_plain_and_on_a_terminal(capsys, monkeypatch):
    assert main(["list", "--topic", "tensors"]) == 0
    captured = capsys.readouterr()
    assert not ANSI.search(captured.out)
    rows = {line.split()[0]: line for line in captured.out.splitlines()}
    assert "not checked" in rows[FROM_DATA.id] and "0 done" in captured.err
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert main(["list", "--topic", "tensors"]) == 0
    assert ANSI.search(capsys.readouterr().out)


def test_a_console_forced_to_a_terminal_draws_rich_and_a_file_gets_plain_soft_wrapped_lines(monkeypatch):
    import io

    from grader.reports import console as _console

    monkeypatch.delenv("NO_COLOR", raising=False)
    forced = _console.console(io.StringIO(), force_terminal=True)
    assert forced.is_terminal and not forced.soft_wrap
    formats.print_table(_report(), forced)
    assert COLOUR.search(forced.file.getvalue())
    plain = _console.console(io.StringIO())
    assert not plain.is_terminal and plain.soft_wrap  # a log keeps a long message on one line
    plain.print("x" * 300)
    assert plain.file.getvalue() == "x" * 300 + "\n"
