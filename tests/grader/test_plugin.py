"""The pytest plugin in learner mode: not-started summary, hidden failures without test source."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from grader import catalog
from tests.helpers import KIT_ROOT, make_submission, run_python

EX = catalog.get_exercise("pytorch.tensors.broadcasting")


def _pytest(*args: str, env: dict[str, str] | None = None):
    return run_python("-m", "pytest", "-p", "no:cacheprovider", *args, env=env)


def _row(state: str) -> str:
    """The start of the progress summary's row for EX in ``state``."""
    return f"  {state:<18}  {EX.id}"


def test_untouched_stub_is_reported_as_not_started_without_tracebacks():
    result = _pytest(str(EX.public_tests))
    assert result.returncode == 1
    assert (f"{_row('not started'):<66} "
            "pytorch/tensors/broadcasting.py still raises NotImplementedError") in result.stdout
    # One line per exercise, not a failure section per test; the run still fails and ends with
    # the progress summary.
    assert "FAILURES" not in result.stdout and "short test summary" not in result.stdout
    assert result.stdout.rstrip().splitlines()[-2] == "0/1 exercises done"
    assert "3 not started" in result.stdout.splitlines()[-1]
    assert "Traceback" not in result.stdout


def test_passing_public_tests_alone_is_not_done(tmp_path, monkeypatch):
    monkeypatch.setenv("DRILLS_STATE_DIR", str(tmp_path))  # nothing remembered
    result = _pytest(str(EX.public_tests), "--impl-root", "solutions")
    assert result.returncode == 0
    assert _row("public checks pass") in result.stdout
    assert "0/1 exercises done; 1 pass their tests here, which is not done" in result.stdout
    assert "`grader status --full`" in result.stdout


def test_hidden_failure_explains_without_showing_the_test_source(tmp_path):
    root = make_submission(tmp_path, {EX: EX.wrong_solution("negative_roundoff").source()})
    result = _pytest(str(EX.hidden_tests), "--impl-root", str(root))
    assert "returned a negative distance" in result.stdout
    assert _row("failing") in result.stdout
    source = EX.hidden_tests.read_text()
    leaked = [line.strip() for line in source.splitlines()
              if len(line.strip()) > 30 and line.strip() in result.stdout]
    assert leaked == []


def test_learner_errors_show_the_learners_own_frames(tmp_path):
    text = EX.reference.read_text().replace("    return x @ weight.T + bias",
                                            "    return x @ weight.T + bias[:, None, None]")
    root = make_submission(tmp_path, {EX: text})
    result = _pytest(str(EX.hidden_tests), "--impl-root", str(root), "-k", "affine_stays")
    assert "raised in your code:" in result.stdout
    assert "bias[:, None, None]" in result.stdout


def test_torch_raising_not_implemented_is_a_failure_not_a_stub(tmp_path):
    # Boolean-mask indexing needs the data: torch raises NotImplementedError on meta. That is the
    # learner's bug to see, not an untouched stub.
    text = EX.reference.read_text() + (
        "\n\ndef batched_affine(x, weight, bias):\n"
        "    out = x @ weight.T + bias\n"
        "    return out[out == out].reshape(out.shape)\n")
    root = make_submission(tmp_path, {EX: text})
    result = _pytest(str(EX.hidden_tests), "--impl-root", str(root), "-k", "affine_stays")
    assert "not started" not in result.stdout
    assert "NotImplementedError" in result.stdout
    assert _row("failing") in result.stdout


def test_not_implemented_from_torch_on_the_learners_own_line_is_a_failure(tmp_path):
    # Copying out of a meta tensor raises NotImplementedError from C++: the last Python frame is
    # the learner's line, yet it is no stub's own `raise NotImplementedError`.
    text = EX.reference.read_text() + (
        "\n\ndef batched_affine(x, weight, bias):\n"
        "    return (x @ weight.T + bias).cpu().to(x.device)\n")
    root = make_submission(tmp_path, {EX: text})
    result = _pytest(str(EX.hidden_tests), "--impl-root", str(root), "-k", "affine_stays")
    assert "not started" not in result.stdout
    assert "NotImplementedError" in result.stdout
    assert _row("failing") in result.stdout


def test_a_missing_module_reads_as_not_started(tmp_path):
    result = _pytest(str(EX.public_tests), "--impl-root", str(tmp_path))
    assert _row("not started") in result.stdout
    assert "no file pytorch/tensors/broadcasting.py" in result.stdout


def test_a_public_failure_shows_the_message_and_the_test_line_not_the_kits_source(tmp_path):
    text = EX.reference.read_text().replace("return x @ weight.T + bias", "return x @ weight.T - bias")
    root = make_submission(tmp_path, {EX: text})
    result = _pytest(str(EX.public_tests), "--impl-root", str(root))
    assert "batched_affine(x, weight, bias): 30 of 30 values differ" in result.stdout
    assert "test_broadcasting.py, line" in result.stdout
    assert "def assert_close" not in result.stdout and "_compare.py" not in result.stdout
    assert result.stdout.rstrip().splitlines()[-2] == "0/1 exercises done"


def test_a_syntax_error_is_shown_once_with_the_learners_line(tmp_path):
    root = make_submission(tmp_path, {EX: "def pairwise_sq_dists(a, b:\n    pass\n"})
    result = _pytest(str(EX.public_tests), "--impl-root", str(root), "-k", "small_example")
    assert "raised SyntaxError" in result.stdout
    assert "pytorch/tensors/broadcasting.py, line 1" in result.stdout
    assert "def pairwise_sq_dists(a, b:" in result.stdout
    assert "During handling" not in result.stdout and "Traceback" not in result.stdout


def test_a_negative_test_timeout_is_refused():
    result = _pytest(str(EX.public_tests), "--test-timeout", "-1")
    assert result.returncode == 4
    assert "--test-timeout must be a number of seconds >= 0" in result.stderr + result.stdout


def test_a_time_limit_marker_shortens_a_tests_limit_and_a_shorter_test_timeout_still_wins(tmp_path):
    # memory_debugging's tests are marked time_limit(10): a search that never ends fails in 10 s.
    ex = catalog.get_exercise("pytorch.performance.memory_debugging")
    text = ex.reference.read_text() + (  # a search that never ends, asleep: the limit, not a core, is spent
        "\n\ndef max_batch_size(try_batch, *, start=1, limit=65536):\n"
        "    import time\n"
        "    time.sleep(3600)\n")
    root = make_submission(tmp_path, {ex: text})
    args = (str(ex.public_tests), "--impl-root", str(root), "-k", "finds_the_largest_batch")
    marked = _pytest(*args)
    assert "Timeout: the test ran longer than 10 s" in marked.stdout, marked.stdout
    shorter = _pytest(*args, "--test-timeout", "1")
    assert "Timeout: the test ran longer than 1 s" in shorter.stdout, shorter.stdout


def test_an_exercise_whose_tests_all_skip_reads_as_skipped_not_done(tmp_path):
    """onnx_export's tests skip without the onnx extra: the summary says so instead of "done"."""
    onnx_export = catalog.get_exercise("pytorch.deploy.onnx_export")
    hide = tmp_path / "site" / "onnxruntime"
    hide.mkdir(parents=True)
    (hide / "__init__.py").write_text('raise ImportError("onnxruntime is hidden by this test")\n')
    result = run_python("-c", "import sys, pytest; sys.path.insert(0, sys.argv[1]); "
                        "sys.exit(pytest.main(['-p', 'no:cacheprovider', sys.argv[2]]))",
                        str(tmp_path / "site"), str(onnx_export.public_tests))
    assert re.search(r"skipped +pytorch\.deploy\.onnx_export", result.stdout), result.stdout
    assert "needs the kit's onnx extra" in result.stdout
    assert result.stdout.rstrip().splitlines()[-2] == "0/1 exercises done"



_IMPORTED_AT_EXIT = """
import sys
from pathlib import Path


def pytest_unconfigure(config):
    Path(__file__).with_name("imported.txt").write_text(str("hypothesis" in sys.modules))
"""

_USES_HYPOTHESIS = """
from hypothesis import given, settings, strategies as st

MADE_AT_IMPORT = settings(max_examples=3)  # inherits from the profile loaded when it is made


def test_the_learner_profile_applies_to_settings_made_at_import():
    assert settings.get_current_profile_name() == "drills-learner"
    assert MADE_AT_IMPORT.deadline is None and MADE_AT_IMPORT.database is None


@given(st.integers())
def test_given_runs(x):
    assert isinstance(x, int)
"""


def _pytest_telling_if_hypothesis_was_imported(tmp_path, *args: str, autoload: bool = True) -> bool:
    """Run pytest with ``args`` (it must pass) and a plugin that notes whether hypothesis was
    imported by the end; return that."""
    (tmp_path / "drills_probe.py").write_text(_IMPORTED_AT_EXIT)
    env = {"PYTHONPATH": str(tmp_path)}
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        args = ("-p", "grader.pytest_plugin", "-p", "_hypothesis_pytestplugin", *args)
    result = _pytest("-p", "drills_probe", *args, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return (tmp_path / "imported.txt").read_text() == "True"


def test_a_learner_run_needing_no_hypothesis_never_imports_it(tmp_path):
    """Public tests take no strategies: their run leaves hypothesis's import (a third of a second) out."""
    assert not _pytest_telling_if_hypothesis_was_imported(tmp_path, str(EX.public_tests), "--impl-root", "solutions")


def test_a_learner_test_module_importing_hypothesis_gets_the_learner_profile(tmp_path):
    (tmp_path / "test_uses_hypothesis.py").write_text(_USES_HYPOTHESIS)
    assert _pytest_telling_if_hypothesis_was_imported(tmp_path, str(tmp_path / "test_uses_hypothesis.py"))


def test_the_plugin_named_with_p_loads_the_learner_profile_at_once(tmp_path):
    """Loaded other than from the installed kit (whose entry point hypothesis calls when
    imported), the plugin imports hypothesis and loads its profile when pytest starts."""
    (tmp_path / "test_uses_hypothesis.py").write_text(_USES_HYPOTHESIS)
    assert _pytest_telling_if_hypothesis_was_imported(tmp_path, str(tmp_path / "test_uses_hypothesis.py"),
                                                      autoload=False)


_DRAWS_A_CONSTANT_OF_ITS_SOURCE = """
import drills_magic
from hypothesis import given, settings, strategies as st


@settings(derandomize=True, max_examples=300)
@given(st.integers())
def test_never_draws_the_magic_number(x):
    assert x != drills_magic.MAGIC
"""


def test_grading_draws_no_constant_from_the_source_of_the_modules_loaded(tmp_path):
    """Hypothesis may draw constants found in the source of any non-library module loaded (a
    submission's among them): when grading it must not, or a verdict would hang on source text
    and on which modules the child happened to load."""
    (tmp_path / "drills_magic.py").write_text("MAGIC = 987654321\n")
    (tmp_path / "test_magic.py").write_text(_DRAWS_A_CONSTANT_OF_ITS_SOURCE)
    args = (str(tmp_path / "test_magic.py"),)
    env = {"PYTHONPATH": str(tmp_path)}
    learner = _pytest(*args, env=env)
    assert learner.returncode == 1 and "987654321" in learner.stdout, learner.stdout  # the hazard is real
    grading = _pytest(*args, "--grading", env=env)
    assert grading.returncode == 0, grading.stdout



def test_a_child_given_a_start_word_runs_no_test_and_no_submitted_code_before_it(tmp_path):
    marker, word = tmp_path / "imported", tmp_path / "word"
    root = make_submission(tmp_path / "submission", {
        EX: f"open({str(marker)!r}, 'w').close()\n" + EX.reference.read_text()})
    os.mkfifo(word)
    held = os.open(word, os.O_RDWR)  # as the grader holds it
    child = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--impl-root", str(root),
         "--start-word", str(word), str(EX.public_tests)],
        cwd=KIT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    try:
        for line in child.stdout:  # pytest's header ends with what it collected: then it waits
            if line.startswith("collected"):
                break
        time.sleep(0.5)
        assert child.poll() is None and not marker.exists()
        os.write(held, b"g")  # the word
        rest = child.stdout.read()
        assert child.wait(timeout=120) == 0, rest
    finally:
        os.close(held)
        child.kill()
    assert marker.exists() and " passed" in rest
