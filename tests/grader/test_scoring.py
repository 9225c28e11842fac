"""grader score: points, JSON shape, and submissions that are missing, crash, exit or hang."""

from __future__ import annotations

import json
import os

import pytest

from grader import _records, catalog
from grader._records import Event
from grader.cli import main
from grader.engine import sandbox, scoring
from grader.engine.redact import DUMP_REMOVED
from grader.engine.sandbox import Limits, run_tests
from grader.engine.scoring import SubmissionError, score_submission
from tests.helpers import make_submission, run_python

EX = catalog.get_exercise("pytorch.tensors.broadcasting")
REFERENCE = EX.reference.read_text()


def _grade(tmp_path, module_text: str, **kwargs):
    root = make_submission(tmp_path / "sub", {EX: module_text})
    return score_submission(root, [EX.id], **kwargs).exercises[0]


def test_reference_gets_full_marks_and_cuda_is_left_out(tmp_path):
    result = _grade(tmp_path, REFERENCE)
    assert result.score == result.max_score > 0
    not_run = [t for t in result.tests if t.status == "not_run"]
    assert not_run and all(t.max_score == 0 for t in not_run)
    assert {t.visibility for t in result.tests} == {"visible", "hidden"}


@pytest.mark.parametrize("fork", [False, True], ids=["fresh", "forkserver"])
def test_a_missing_module_scores_zero_with_a_reason_and_its_tests_do_not_run(tmp_path, fork):
    # A whole-catalog grading of a submission that attempts one exercise: the others' tests are
    # reported, each not started, without running; the one attempted is graded as ever.
    other = catalog.get_exercise("pytorch.tensors.creation_ops")
    root = make_submission(tmp_path / "sub", {EX: REFERENCE})
    run = run_tests(root.resolve(), [EX, other], Limits(), fork=fork)
    started = {r["nodeid"] for r in _records.of(run.records, Event.STARTED)}
    assert started and not any("creation_ops" in nodeid for nodeid in started)
    (attempted, missing), _ = scoring._fold(run, [EX, other], Limits())  # what score_submission reports of the run
    assert attempted.score == attempted.max_score > 0
    assert missing.score == 0 and missing.max_score > 0
    counted = [t for t in missing.tests if t.status != "not_run"]
    assert counted and all(t.status == "error" and t.message == "not started: no file "
                           "pytorch/tensors/creation_ops.py in the submission" for t in counted)


def test_import_crash_scores_zero_and_names_the_error(tmp_path):
    result = _grade(tmp_path, "raise RuntimeError('boom at import')\n")
    assert result.score == 0
    assert any("boom at import" in t.message for t in result.tests)


@pytest.mark.parametrize("exit_call", ["import os; os._exit(0)", "import sys; sys.exit(0)"])
def test_exiting_early_cannot_turn_into_points(tmp_path, exit_call):
    text = REFERENCE.replace("def pairwise_sq_dists(a: Tensor, b: Tensor) -> Tensor:\n",
                             f"def pairwise_sq_dists(a: Tensor, b: Tensor) -> Tensor:\n    {exit_call}\n")
    result = _grade(tmp_path, text)
    failed_pairwise = [t for t in result.tests if "pairwise" in t.name and t.status != "not_run"]
    assert failed_pairwise and all(t.score == 0 for t in failed_pairwise)


def test_a_hanging_function_times_out_and_the_rest_is_graded(tmp_path):
    text = "import time\n" + REFERENCE.replace("    return x @ weight.T + bias", "    time.sleep(3600)")
    # Two of the affine tests that would hang, and pairwise tests around them (every affine test
    # would wait out its limit).
    chosen = ["test_pairwise_small_example", "test_batched_affine_matches_linear",
              "test_affine_gradients_match_finite_differences", "test_pairwise_never_negative"]
    result = _grade(tmp_path, text, limits=Limits(test_s=2), select={EX.id: chosen})
    affine = [t for t in result.tests if "affine" in t.name and "rejects" not in t.name
              and t.status != "not_run"]
    assert affine and all(t.score == 0 for t in affine)
    assert any("Timeout" in t.message for t in affine)
    assert any(t.status == "passed" for t in result.tests if "pairwise" in t.name)


def test_not_a_directory_is_a_clear_error(tmp_path):
    with pytest.raises(SubmissionError, match="must be a directory"):
        score_submission(tmp_path / "nope", [EX.id])


def test_json_report_shape(tmp_path, capsys):
    make_submission(tmp_path / "sub", {EX: REFERENCE})
    out = tmp_path / "report.json"
    assert main(["score", str(tmp_path / "sub"), "-e", EX.id, "--format", "json", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert set(data) >= {"score", "max_score", "exercises"}
    ex = data["exercises"][0]
    assert set(ex) >= {"id", "score", "max_score", "tests", "status"}
    assert set(ex["tests"][0]) >= {"name", "status", "score", "max_score", "message", "visibility"}
    assert data["score"] == data["max_score"] == ex["max_score"]


def test_cli_errors_exit_2_with_a_message():
    result = run_python("-m", "grader", "score", "--exercise", "pytorch.nope.x")
    assert result.returncode == 2 and "unknown exercise id 'pytorch.nope.x'" in result.stderr
    result = run_python("-m", "grader", "score", "/no/such/dir", "-e", EX.id)
    assert result.returncode == 2 and "submission not found: /no/such/dir" in result.stderr


def test_help_lists_the_commands():
    result = run_python("-m", "grader", "--help")
    assert result.returncode == 0 and "score" in result.stdout and "list" in result.stdout


def test_hidden_test_source_echoed_by_the_submission_is_cut_from_the_report(tmp_path):
    # The submission reads the calling test's file and sends it back as its failure message, and
    # prints it before crashing the run: neither may reach the report.
    thief = REFERENCE + '''

def pairwise_sq_dists(a, b):
    import inspect
    frame = inspect.currentframe().f_back
    source = open(frame.f_code.co_filename).read()
    print(source)
    raise AssertionError(source)
'''
    result = _grade(tmp_path, thief)
    source = [line.strip() for line in EX.hidden_tests.read_text().splitlines() if len(line.strip()) > 30]
    report_text = "\n".join(t.message for t in result.tests)
    assert [line for line in source if line in report_text] == []
    assert DUMP_REMOVED in report_text  # replaced whole, short lines and all
    assert all(len(t.message) <= 2000 for t in result.tests)


def test_select_runs_only_the_named_tests_and_reports_only_them(tmp_path):
    # grader verify runs a wrong solution's caught_by tests only: a function name selects all
    # its cases, a name with [case] one case; an exercise not named runs every test.
    function, case = "test_pairwise_never_negative", "test_affine_rejects_bad_weight_and_bias[bias-4]"
    for fork in (False, True):
        result = _grade(tmp_path / str(fork), REFERENCE, fork=fork, select={EX.id: [function, case]})
        names = {t.name.split("::", 1)[1] for t in result.tests}
        assert names == {function, case}, names
        assert result.score == result.max_score > 0


def test_stop_at_first_failure_ends_the_run_there(tmp_path):
    # Mutation testing needs one lost point, not every one: the stub's first failure ends its run.
    stub = (catalog.KIT_ROOT / "exercises" / EX.relpath).read_text()
    result = _grade(tmp_path, stub, fork=True, stop_at_first_failure=True)
    counted = [t for t in result.tests if t.status != "not_run"]
    assert [t.status for t in counted].count("failed") == 1, [(t.name, t.status) for t in counted]
    assert {t.status for t in counted} == {"failed", "missing"} and result.score == 0


@pytest.mark.parametrize("fork", [False, True], ids=["fresh", "forkserver"])
def test_until_failed_leaves_out_the_tests_whose_groups_all_failed_and_nothing_else(tmp_path, fork):
    # grader verify's wrong solutions: each group needs one failing test. Every test of the stub
    # fails, so a group's first test decides it and the rest of it is left out; a test named by
    # no group runs whatever failed; the exercise after it runs in full, its module set up anew.
    other = catalog.get_exercise("pytorch.tensors.creation_ops")
    stub = (catalog.KIT_ROOT / "exercises" / EX.relpath).read_text()
    root = make_submission(tmp_path / "sub", {EX: stub, other: other.reference.read_text()})
    first, mismatch, devices, ungrouped = ("test_pairwise_small_example", "test_pairwise_rejects_feature_mismatch",
                                           "test_affine_stays_on_device", "test_affine_rejects_bad_weight_and_bias")
    groups = [{mismatch}, {first, devices}]
    stub_result, other_result = score_submission(
        root, [EX.id, other.id], fork=fork, select={EX.id: {first, mismatch, devices, ungrouped}},
        until_failed={EX.id: groups}).exercises
    status = {t.name.split("::", 1)[1]: t.status for t in stub_result.tests}
    by_function = {}
    for name, found in status.items():
        by_function.setdefault(name.split("[", 1)[0], []).append(found)
    assert status[first] == "failed"
    assert by_function[mismatch][0] == "failed" and set(by_function[mismatch][1:]) == {"missing"}
    # not_run: a CUDA case, on a machine without CUDA
    assert "missing" in by_function[devices] and set(by_function[devices]) <= {"missing", "not_run"}
    assert set(by_function[ungrouped]) == {"failed"} and len(by_function[ungrouped]) > 1
    assert other_result.score == other_result.max_score > 0


@pytest.mark.parametrize("fork", [False, True], ids=["fresh", "forkserver"])
def test_until_failed_runs_first_the_tests_a_group_names_alone(tmp_path, fork):
    # The one test of a group of one must run; its failure here also decides the larger group,
    # whose other test (the first of the file, which would otherwise run first) is left out.
    stub = (catalog.KIT_ROOT / "exercises" / EX.relpath).read_text()
    root = make_submission(tmp_path / "sub", {EX: stub})
    first, mismatch = "test_pairwise_small_example", "test_pairwise_rejects_feature_mismatch"
    [result] = score_submission(root, [EX.id], fork=fork, select={EX.id: {first, mismatch}},
                                until_failed={EX.id: [{first, mismatch}, {mismatch}]}).exercises
    status = {t.name.split("::", 1)[1].split("[", 1)[0]: set() for t in result.tests}
    for t in result.tests:
        status[t.name.split("::", 1)[1].split("[", 1)[0]].add(t.status)
    assert status == {first: {"missing"}, mismatch: {"failed", "missing"}}, status


@pytest.mark.parametrize("fork", [False, True], ids=["fresh", "forkserver"])
def test_without_shrinking_a_failing_test_fails_on_its_first_failing_example(tmp_path, fork):
    # grader verify and mutants need only whether a test fails: a hypothesis test then stops at
    # the first failing example it finds, where shrinking would call the submission on and on.
    # The submission numbers its calls in the message of the error it raises when d >= 2.
    test = "test_pairwise_matches_brute_force_over_broadcast_shapes"
    counting = REFERENCE + (
        "\n_calls = [0]\n_pairwise = pairwise_sq_dists\n\n\n"
        "def pairwise_sq_dists(a, b):\n"
        "    _calls[0] += 1\n"
        "    if a.shape[-1] >= 2:\n"
        "        raise ValueError(f'call {_calls[0]} failed')\n"
        "    return _pairwise(a, b)\n")
    calls = {}
    for shrink in (True, False):
        result = _grade(tmp_path / str(shrink), counting, fork=fork, shrink=shrink, select={EX.id: [test]})
        [failed] = result.tests
        assert failed.status == "failed" and result.score == 0, failed
        calls[shrink] = int(failed.message.split("call ", 1)[1].split()[0])
    assert calls[False] < calls[True], calls


def test_a_failure_hypothesis_cannot_reproduce_is_told_by_its_message_alone(tmp_path):
    # Hypothesis notes the failure it expected when its replay passes; that note is the failure's
    # message, never pytest's rendering of the hidden test's frames (nor their source).
    test = "test_pairwise_matches_brute_force_over_broadcast_shapes"
    first_call_fails = REFERENCE + (
        "\n_calls = [0]\n_pairwise = pairwise_sq_dists\n\n\n"
        "def pairwise_sq_dists(a, b):\n"
        "    _calls[0] += 1\n"
        "    if _calls[0] == 1:\n"
        "        raise ValueError('only the first call fails')\n"
        "    return _pairwise(a, b)\n")
    [failed] = _grade(tmp_path, first_call_fails, fork=True, select={EX.id: [test]}).tests
    assert failed.status == "failed", failed
    assert "Failed to reproduce exception. Expected: \nValueError: only the first call fails" in failed.message
    hidden_source = EX.hidden_tests.read_text()
    lines = [line.strip() for line in failed.message.splitlines()]
    assert not [line for line in lines if len(line) > 12 and line in hidden_source]


def test_a_signed_line_carries_one_record_or_a_list_and_a_forged_one_none(tmp_path):
    key = _records.new_key()
    read_end, write_end = os.pipe()
    write = _records.writer(write_end, _records.key_pipe(key))
    write({"event": "finished", "exitstatus": 0})
    write([{"event": "collected", "nodeid": "a"}, {"event": "collected", "nodeid": "b"}])
    lines = os.read(read_end, 1 << 16).decode().splitlines()
    assert _records.verify(key, lines[0]) == [{"event": "finished", "exitstatus": 0}]
    assert [r["nodeid"] for r in _records.verify(key, lines[1])] == ["a", "b"]
    assert _records.verify(_records.new_key(), lines[1]) is None  # another key: forged
    body = json.dumps(["not a record"])
    assert _records.verify(key, json.dumps({"sig": _records._sign(key, body), "body": body})) is None


@pytest.mark.parametrize("fork", [False, True], ids=["fresh", "forkserver"])
def test_the_output_kept_ends_where_the_session_said_it_ends(tmp_path, fork):
    """What the child printed before its end mark is kept whole (here, what a submission graded
    apart wrote at import, in its executor, which pytest does not capture); the mark itself is
    not, and pytest prints no progress or summary."""
    apart = catalog.get_exercise("pytorch.tensors.from_data")
    assert apart.separate_process
    printing = apart.reference.read_text() + "\nimport os\nos.write(1, b'written at import\\n' * 3)\n"
    root = make_submission(tmp_path / "sub", {apart: printing})
    run = run_tests(root.resolve(), [apart], Limits(), fork=fork)
    assert _records.of(run.records, Event.FINISHED)
    assert "written at import\n" * 3 in run.output  # once per test module that loads it
    assert _records.OUTPUT_END.decode().strip() not in run.output
    assert "%]" not in run.output and " passed" not in run.output


def test_a_child_left_to_end_in_the_background_is_gone_when_the_block_is_left(tmp_path):
    root = make_submission(tmp_path / "sub", {EX: REFERENCE})
    with sandbox.ending_in_background():
        run = run_tests(root.resolve(), [EX], Limits(), fork=True)
    uid = _records.first(run.records, Event.SANDBOX).get("uid")
    assert not sandbox._background["threads"] and not sandbox._RUNNING
    if isinstance(uid, int):  # jailed as a uid of its own: nothing of it is left
        assert not [p for p in os.listdir("/proc") if p.isdigit() and _uid_of(p) == uid]


def _uid_of(pid: str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None
