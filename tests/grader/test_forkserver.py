"""The fork server: children forked from it grade exactly like fresh interpreters, in the same
jail, and one that hangs or dies does not take the server (or the next submission) with it. It
serves the grader alone, and its jail is its own."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from grader import catalog
from grader.engine import forkserver, jail, sandbox
from grader.engine.sandbox import Limits, _session, forking_kit, outside_limit, preload_modules, server_modules
from grader.engine.scoring import score_submission
from grader.workflows.batch import run_batch
from tests.helpers import make_submission, run_python

BROADCASTING = catalog.get_exercise("pytorch.tensors.broadcasting")
HANGS = '''
import time


def pairwise_sq_dists(a, b):
    time.sleep(3600)  # hangs without spending a core on it


def batched_affine(x, weight, bias):
    return x @ weight.T + bias
'''


@pytest.fixture(autouse=True, scope="module")
def own_servers():
    """The servers this module's tests start, and no other's: one serves them all, as one serves
    a batch. The process's servers wait aside meanwhile, for the test files after this one
    (stopping them meant starting them again, 4-9 s of CPU each)."""
    with forkserver._lock:
        others = dict(forkserver._servers)
        forkserver._servers.clear()
    yield
    forkserver.close_all()
    with forkserver._lock:
        forkserver._servers.update(others)


def _summary(report):
    return [(ex.id, ex.score, ex.max_score, [(t.name, t.status) for t in ex.tests])
            for ex in report.exercises]


def test_forked_and_fresh_children_grade_alike():
    for root in (catalog.KIT_ROOT / "solutions", catalog.KIT_ROOT / "exercises"):
        fresh = score_submission(root, [BROADCASTING.id])
        forked = score_submission(root, [BROADCASTING.id], fork=True)
        assert _summary(forked) == _summary(fresh)
        # Every child runs as a uid of its own: the same facts otherwise.
        assert {**forked.sandbox, "uid": 0} == {**fresh.sandbox, "uid": 0}
        assert forked.problems == fresh.problems == []


def test_a_child_that_rewrites_the_collected_test_modules_leaves_the_next_child_untouched(tmp_path):
    """The server imports the test modules once, before forking: a submission that rewrites their
    globals (the checks a hidden test calls) changes its own child's copy, never the next one's."""
    corpus = Path(__file__).with_name("adversarial")
    patcher = make_submission(tmp_path / "patcher", {BROADCASTING: (corpus / "patch_test_globals.py").read_text()})
    assert score_submission(patcher, [BROADCASTING.id], fork=True).score == 0
    returns_zeros = BROADCASTING.wrong_solution("returns_zeros").source()
    wrong = make_submission(tmp_path / "wrong", {BROADCASTING: returns_zeros})
    after = score_submission(wrong, [BROADCASTING.id], fork=True)
    assert len(forkserver._servers) == 1  # the same server forked both
    assert _summary(after) == _summary(score_submission(wrong, [BROADCASTING.id]))
    assert after.score < after.max_score


def test_a_batchs_server_outlives_it_and_serves_the_next_batch_of_the_process(tmp_path):
    folder = tmp_path / "class"
    make_submission(folder / "alice", {BROADCASTING: BROADCASTING.reference})
    servers = []
    for out in (tmp_path / "first", tmp_path / "second"):
        run_batch(folder, out, exercise_ids=[BROADCASTING.id], log=lambda message: None)
        result = json.loads((out / "results" / "alice.json").read_text())
        assert result["score"] == result["max_score"] > 0
        servers.append(list(forkserver._servers.values()))
    assert len(servers[0]) == 1 and servers[0] == servers[1] and servers[1][0].alive()


def test_a_hanging_child_is_killed_and_the_server_serves_the_next(tmp_path):
    hanging = make_submission(tmp_path / "hangs", {BROADCASTING: HANGS})
    # Two tests that hang, one between them that passes (the whole suite would wait out a dozen).
    chosen = ["test_pairwise_small_example", "test_batched_affine_matches_linear", "test_pairwise_float32_keeps_dtype"]
    report = score_submission(hanging, [BROADCASTING.id], fork=True, limits=Limits(wall_s=60, test_s=1),
                              select={BROADCASTING.id: chosen})
    assert {t.name.split("::")[-1]: (t.status, "Timeout" in t.message) for t in report.exercises[0].tests} == {
        chosen[0]: ("failed", True), chosen[1]: ("passed", False), chosen[2]: ("failed", True)}
    assert forkserver._servers and all(s.alive() for s in forkserver._servers.values())
    again = score_submission(catalog.KIT_ROOT / "solutions", [BROADCASTING.id], fork=True)
    assert again.score == again.max_score > 0
    assert len(forkserver._servers) == 1  # the default limits, from the same server


def test_each_child_of_one_server_is_jailed_by_the_limits_its_grading_names(tmp_path):
    # The jail travels with each request, not with the server: one server, two process budgets.
    threads = BROADCASTING.reference.read_text() + (
        "\nimport threading, time\n"
        "_SLEEPERS = [threading.Thread(target=time.sleep, args=(2,), daemon=True) for _ in range(48)]\n"
        "for _t in _SLEEPERS:\n    _t.start()\n")
    submission = make_submission(tmp_path / "threads", {BROADCASTING: threads})
    tight = score_submission(submission, [BROADCASTING.id], fork=True, limits=Limits(nproc=24))
    roomy = score_submission(submission, [BROADCASTING.id], fork=True, limits=Limits(nproc=128))
    assert len(forkserver._servers) == 1
    assert tight.score == 0 and "thread" in " ".join(t.message for t in tight.exercises[0].tests)
    assert roomy.score == roomy.max_score > 0


SAYS_WHAT_IT_SEES = """
import os
import time

time.sleep(3)  # long enough for the other child to be running too
_SEEN = f"pid {os.getpid()}, processes {sorted(int(p) for p in os.listdir('/proc') if p.isdigit())}"


def pairwise_sq_dists(a, b):
    raise RuntimeError(_SEEN)
"""


@pytest.mark.skipif(jail.level() != "full", reason="PID namespaces need the full jail (root with CAP_SYS_ADMIN)")
def test_children_of_one_server_running_at_once_each_are_the_first_process_of_a_pid_namespace_of_their_own(
        tmp_path):
    # The server forks each child into a new PID namespace, then goes back to its own: were a
    # child forked into another's, it would not be pid 1, and would see the other's processes;
    # one forked into a namespace whose first process has ended could not be forked at all.
    submissions = [make_submission(tmp_path / f"sub{i}", {BROADCASTING: SAYS_WHAT_IT_SEES}) for i in range(2)]
    reports = []

    def grade(submission: Path) -> None:
        reports.append(score_submission(submission, [BROADCASTING.id], fork=True,
                                        select={BROADCASTING.id: ["test_pairwise_small_example"]}))

    graders = [threading.Thread(target=grade, args=(s,)) for s in submissions]
    for t in graders:
        t.start()
    for t in graders:
        t.join()
    grade(submissions[0])  # and after they ended (their namespaces gone), the next child as well
    assert len(forkserver._servers) == 1 and len(reports) == 3
    for report in reports:
        assert [t.message.splitlines()[0] for t in report.exercises[0].tests if t.status == "failed"] == [
            "RuntimeError: pid 1, processes [1]"]


def test_a_child_killed_at_the_wall_clock_limit_scores_zero_with_the_reason(tmp_path):
    hanging = make_submission(tmp_path / "hangs", {BROADCASTING: HANGS})
    report = score_submission(hanging, [BROADCASTING.id], fork=True,
                              limits=Limits(wall_s=2, test_s=600))
    assert any("wall-clock limit" in p for p in report.problems)
    assert report.score < report.max_score


def test_the_server_preloads_only_the_frameworks_in_use():
    torch_only = preload_modules([BROADCASTING])
    assert "torch" in torch_only and "tensorflow" not in torch_only
    mixed = [ex for ex in catalog.load_catalog().values() if ex.framework == "crossframework"]
    if mixed:
        assert {"torch", "tensorflow"} <= set(preload_modules(mixed))


def test_a_grader_process_starts_one_server_for_the_pytorch_exercises_and_one_for_the_rest():
    exercises = list(catalog.load_catalog().values())
    kinds = {server_modules([ex]) for ex in exercises}
    assert len(kinds) == 2, kinds
    for ex in exercises:
        assert set(preload_modules([ex])) <= set(server_modules([ex])), ex.id
        # TensorFlow never enters a PyTorch-only grading; an extra may load it (tensorboard does).
        loads_tensorflow = ex.framework != "pytorch" or "tensorboard" in ex.extras
        assert ("tensorflow" in server_modules([ex])) == loads_tensorflow, ex.id
    assert server_modules(exercises) == max(kinds, key=len)


def test_pytorch_exercises_graded_apart_and_beside_their_tests_share_one_server():
    apart = catalog.get_exercise("pytorch.tensors.from_data")
    assert apart.separate_process and not BROADCASTING.separate_process
    for ex in (BROADCASTING, apart):
        report = score_submission(catalog.KIT_ROOT / "solutions", [ex.id], fork=True)
        assert report.score == report.max_score > 0, ex.id
    assert len(forkserver._servers) == 1


def test_a_tensorflow_exercise_graded_apart_preloads_what_crossings_use():
    # Both sides of a crossing read torch's state (grad mode, autocast, the RNG): otherwise the
    # first test of a TensorFlow exercise graded apart imported torch twice, seconds of its time.
    apart = [ex for ex in catalog.load_catalog().values() if ex.framework == "tensorflow" and ex.separate_process]
    alone = [ex for ex in catalog.load_catalog().values() if ex.framework == "tensorflow" and not ex.separate_process]
    assert apart and alone
    assert {"torch", "grader.remote._executor"} <= set(preload_modules(apart[:1]))
    assert "torch" not in preload_modules(alone[:1])


def test_an_installed_extra_an_exercise_needs_is_preloaded_and_no_other():
    # torch.utils.tensorboard imports TensorFlow: seconds of the first test's time otherwise
    # (twice when graded apart).
    tensorboard = catalog.get_exercise("pytorch.training.tensorboard_logging")
    assert "tensorboard" in tensorboard.extras
    assert "torch.utils.tensorboard" in preload_modules([tensorboard])
    assert "torch.utils.tensorboard" not in preload_modules([BROADCASTING])
    # torch.onnx.export's first call imports ONNX Script's torchlib (a second and more of CPU);
    # onnxruntime's import starts a thread, which a process that forks must not have.
    onnx = catalog.get_exercise("pytorch.deploy.onnx_export")
    assert "onnx" in onnx.extras
    assert {"onnx", "onnxscript.function_libs.torch_lib.ops"} <= set(preload_modules([onnx]))
    assert "onnxruntime" not in preload_modules([onnx])
    assert "onnx" not in preload_modules([BROADCASTING])


def test_preloading_an_extra_starts_no_thread():
    """A process that forks while another thread of its runs can hang in the child (a lock that
    thread held stays taken): what a server preloads for onnx_export leaves it with the threads
    torch's import starts."""
    onnx = catalog.get_exercise("pytorch.deploy.onnx_export")
    probe = ("import sys\nfrom grader import _preload\n"
             "threads = lambda: open('/proc/self/status').read().split('Threads:')[1].split()[0]\n"
             "_preload.warm(['torch'])\nbefore = threads()\n_preload.warm(sys.argv[1:])\n"
             "print(before, threads())\n")
    result = run_python("-c", probe, *preload_modules([onnx]))
    assert result.returncode == 0 and "not preloading" not in result.stderr, result.stderr[-2000:]
    before, after = result.stdout.split()[-2:]
    assert after == before, result.stdout


def _server() -> forkserver.ForkServer:
    """A fork server for one exercise, started as the grader starts them."""
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # the plugins are named
    return forkserver.ForkServer(preload_modules([BROADCASTING]), env, _session(catalog.KIT_ROOT, [BROADCASTING], 0.0))


def test_the_server_exits_when_the_grader_goes_away():
    server = _server()
    server._proc.stdin.close()  # what the grader's death does to the pipe
    assert server._proc.wait(timeout=10) == 0
    server.close()


def _links(folder: str) -> list[str]:
    """What each descriptor in ``/proc/PID/fd`` names, leaving out any closed between the listing and
    its reading (one CI run met one: the server's own files come and go)."""
    links = []
    for fd in os.listdir(folder):
        try:
            links.append(os.readlink(f"{folder}/{fd}"))
        except FileNotFoundError:
            pass
    return links


def test_the_server_has_no_socket_file_and_refuses_a_work_directory_it_did_not_stage(tmp_path):
    server = _server()
    try:
        inodes = {link[8:-1] for link in _links(f"/proc/{server._proc.pid}/fd") if link.startswith("socket:[")}
        table = [line.split() for line in Path("/proc/net/unix").read_text().splitlines()[1:]]
        named = [row[7] for row in table if len(row) > 7 and row[6] in inodes]
        assert inodes and not named, named  # a socket pair: nothing anyone could connect to
        for workdir in (Path("/"), tmp_path):
            report_r, report_w = os.pipe()
            key_r, key_w = os.pipe()
            with pytest.raises(ConnectionError):
                server.spawn({}, workdir, {}, report_w, key_r)
            for fd in (report_r, report_w, key_r, key_w):
                os.close(fd)
        assert server.alive()
    finally:
        server.close()


MISSES_ITS_LIMIT_ON_META = """
import signal
import time
from torch import Tensor


def pairwise_sq_dists(a: Tensor, b: Tensor) -> Tensor:
    if a.device.type == "meta":  # only test_pairwise_stays_on_device[meta] goes here
        signal.setitimer(signal.ITIMER_REAL, 0)
        time.sleep(3600)
    if a.dim() < 2 or b.dim() < 2:
        raise ValueError("a and b must have shape (..., N, D) and (..., M, D)")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"b has {b.shape[-1]} features per row but a has {a.shape[-1]}")
    a_sq = (a * a).sum(-1).unsqueeze(-1)
    b_sq = (b * b).sum(-1).unsqueeze(-2)
    return (a_sq - 2 * a @ b.transpose(-1, -2) + b_sq).clamp_min(0)
"""


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "fresh"])
def test_a_test_that_cancels_its_limit_is_stopped_from_outside_and_the_rest_still_count(tmp_path, fork,
                                                                                      monkeypatch):
    # 2 s of grace past the limit, not the product's 10: 8 s less to wait for the stop from outside.
    monkeypatch.setattr(sandbox, "OUTSIDE_GRACE_S", 2.0)
    reference = (catalog.KIT_ROOT / "solutions" / BROADCASTING.relpath).read_text()
    affine = reference[reference.index("def batched_affine"):]
    submission = make_submission(tmp_path / "sub", {BROADCASTING: MISSES_ITS_LIMIT_ON_META + "\n\n" + affine})
    report = score_submission(submission, [BROADCASTING.id], fork=fork, limits=Limits(wall_s=300, test_s=3))
    tests = {t.name: t for t in report.exercises[0].tests if t.status != "not_run"}
    stopped = [t for t in tests.values() if t.status != "passed"]
    assert [t.name for t in stopped] == [n for n in tests if "stays_on_device[meta]" in n and "pairwise" in n]
    assert f"stopped by the grader after {outside_limit(3):g} s" in stopped[0].message
    assert report.score == report.max_score - stopped[0].max_score


def test_graders_asking_for_the_staged_tests_at_once_share_one_copy(monkeypatch):
    """As a batch's or verify's first jobs do: two copies meant two fork servers, and a
    submission whose children were given different copies could not read its tests' source."""
    from grader.engine import sandbox

    monkeypatch.setattr(sandbox, "_forking_kits", {})  # none staged yet in this process
    meet, got = threading.Barrier(2), []

    def ask() -> None:
        meet.wait()
        got.append(forking_kit())

    askers = [threading.Thread(target=ask) for _ in range(2)]
    for t in askers:
        t.start()
    for t in askers:
        t.join()
    assert len(got) == 2 and got[0] == got[1]


SLOW = BROADCASTING.reference.read_text() + """

import time

_reference_pairwise_sq_dists = pairwise_sq_dists


def pairwise_sq_dists(a, b):
    time.sleep(2.5)  # longer than the idle time the test sets: the server has a child running
    return _reference_pairwise_sq_dists(a, b)
"""


def test_a_server_is_closed_once_idle_and_never_while_a_child_runs(tmp_path, monkeypatch):
    # Last in the module: the server it closes serves no test after it.
    monkeypatch.setattr(forkserver, "IDLE_S", 0.5)
    slow = make_submission(tmp_path / "slow", {BROADCASTING: SLOW})
    report = score_submission(slow, [BROADCASTING.id], fork=True,
                              select={BROADCASTING.id: ["test_pairwise_small_example"]})
    assert [(t.status, t.message) for t in report.exercises[0].tests] == [("passed", "")]
    [server] = forkserver._servers.values()
    deadline = time.monotonic() + 30
    while (forkserver._servers or server.alive()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not forkserver._servers and not server.alive()
