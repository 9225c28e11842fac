"""`grader batch` on a Dask cluster, with real processes on 127.0.0.1 only: a `dask scheduler` and
two `dask worker` processes started here (each with its nanny, which restarts a worker that dies),
and a LocalCluster. Every submission is a one-exercise folder or zip, to keep the suite quick."""

from __future__ import annotations

import csv
import difflib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import cloudpickle
import pytest
from distributed import Client

from grader import catalog
from grader.cli import main
from grader.engine.sandbox import Limits
from grader.workflows import batch
from grader.workflows.batch import run_batch
from grader.workflows.dask_batch import Cluster, killed_reason

EX = catalog.get_exercise("pytorch.tensors.broadcasting")
ADVERSARIAL = Path(__file__).with_name("adversarial")
LIMITS = Limits(wall_s=300, test_s=30)
LIMIT_ARGS = ["--timeout", "300", "--test-timeout", "30"]
SLOW_IMPORT_S = 3  # a submission that takes this long to import is surely killed mid-task

pytestmark = pytest.mark.timeout(900)
# The functions run on the workers below are shipped by value: workers cannot import this file.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _put(folder: Path, name: str, module: str | Path) -> None:
    target = folder / name / "exercises" / EX.relpath
    target.parent.mkdir(parents=True)
    target.write_text(module.read_text() if isinstance(module, Path) else module)


def _slow(module: Path) -> str:
    return f"import time\ntime.sleep({SLOW_IMPORT_S})\n" + module.read_text()


def _classroom(folder: Path) -> Path:
    """Honest, wrong, untouched and hostile submissions, as folders and zips, and bad inputs."""
    _put(folder, "ada", EX.reference)
    _put(folder, "ben", EX.wrong_solution("negative_roundoff").source())
    _put(folder, "cal", EX.stub)
    for hostile in ("kill_grader", "forge_result_records", "patch_torch_compare", "exit_at_import"):
        _put(folder, hostile, ADVERSARIAL / f"{hostile}.py")
    with zipfile.ZipFile(folder / "dot.zip", "w") as archive:  # zipped from its parent folder
        archive.write(EX.reference, f"dot-submission/exercises/{EX.relpath.as_posix()}")
    (folder / "eve").mkdir()  # an empty folder
    (folder / "fay.zip").write_text("not a zip")
    (folder / "notes.txt").write_text("a stray file")
    return folder


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _results(out: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((out / "results").glob("*.json"))}


def _stable(text: str) -> str:
    """``text`` without what differs between two local runs too: the random names of staging
    folders and pytest's run time in its output."""
    return re.sub(r" in [0-9.]+s\b", " in *s", re.sub(r"drills-[A-Za-z0-9_]+", "drills-*", text))


def _verdicts(result: dict) -> dict:
    """What a result says about the submission, without its timings or sandbox facts."""
    result = json.loads(_stable(json.dumps(result)))
    return {"score": result["score"], "max_score": result["max_score"], "problems": result["problems"],
            "flags": result["flags"], "ignored": result["ignored_files"],
            "tests": [(ex["id"], t["name"], t["status"], t["score"], t["message"])
                      for ex in result["exercises"] for t in ex["tests"]]}


@pytest.fixture(scope="module")
def scheduler_file(tmp_path_factory):
    """A `dask scheduler` and two single-threaded `dask worker`s on 127.0.0.1; the scheduler
    gives up on a task after its worker died twice (allowed-failures 1)."""
    tmp = tmp_path_factory.mktemp("dask")
    path = tmp / "scheduler.json"
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1"}
    log = open(tmp / "cluster.log", "w")  # noqa: SIM115 - closed at teardown
    procs = [subprocess.Popen([bin_dir / "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", path],
                              env=env, stdout=log, stderr=subprocess.STDOUT)]
    try:
        for _ in range(600):
            if path.is_file() and path.stat().st_size:
                break
            time.sleep(0.1)
        for i in range(2):
            procs.append(subprocess.Popen(
                [bin_dir / "dask", "worker", "--scheduler-file", path, "--nthreads", "1",
                 "--nworkers", "1", "--no-dashboard", "--host", "127.0.0.1", "--name", f"worker{i}"],
                env=env, stdout=log, stderr=subprocess.STDOUT))
        _wait_for_workers(path)
        yield path
    finally:
        # The workers first, while their scheduler still answers their goodbyes: stopped
        # together, each waited seconds for it.
        for group in (procs[1:], procs[:1]):
            for proc in group:
                proc.terminate()
            for proc in group:
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
        log.close()


def _wait_for_workers(path: Path) -> None:
    with Client(scheduler_file=str(path), timeout=60) as client:
        client.wait_for_workers(2, timeout=180)


def _die_if_grading(prefix: str, marker: str, dask_worker=None) -> bool:
    """On a worker: kill this worker process if it is running a task whose key starts with
    ``prefix`` (appending a line to ``marker`` first)."""
    if any(str(ts.key).startswith(prefix) for ts in dask_worker.state.executing):
        with open(marker, "a") as handle:
            handle.write(f"{dask_worker.address}\n")
        os.kill(os.getpid(), signal.SIGKILL)
    return False


class Killer(threading.Thread):
    """Kill, up to ``times`` times, the worker that grades the submission ``name``."""

    def __init__(self, path: Path, name: str, times: int, marker: Path, after_s: float = 0.0):
        super().__init__(daemon=True)
        self.path, self.prefix, self.times, self.marker = path, f"grade-{name}-", times, marker
        self.after_s = after_s  # let the task run this long first (once seen running)
        self.done = threading.Event()

    def kills(self) -> int:
        return len(self.marker.read_text().splitlines()) if self.marker.is_file() else 0

    def run(self) -> None:
        with Client(scheduler_file=str(self.path), timeout=60) as client:
            while not self.done.is_set() and self.kills() < self.times:
                try:
                    running = client.run(_running_key, self.prefix, on_error="return")
                    if any(v is True for v in running.values()):
                        time.sleep(self.after_s)
                        client.run(_die_if_grading, self.prefix, str(self.marker), on_error="return")
                except Exception:  # noqa: BLE001 - a worker restarting; try again
                    pass
                time.sleep(0.2)


def _running_key(prefix: str, dask_worker=None) -> bool:
    return any(str(ts.key).startswith(prefix) for ts in dask_worker.state.executing)


def test_a_real_cluster_grades_exactly_as_the_local_batch(scheduler_file, tmp_path, capsys):
    folder = _classroom(tmp_path / "class")
    local_out, dask_out = tmp_path / "local", tmp_path / "dask"
    run_batch(folder, local_out, exercise_ids=[EX.id], jobs=2, limits=LIMITS, log=lambda m: None)
    code = main(["batch", str(folder), "--out", str(dask_out), "-e", EX.id, "--scheduler-file",
                 str(scheduler_file), *LIMIT_ARGS])
    assert code == 0, capsys.readouterr().err
    assert (dask_out / "gradebook.csv").read_text() == (local_out / "gradebook.csv").read_text()
    local, dask = _results(local_out), _results(dask_out)
    assert set(dask) == set(local) == {"ada", "ben", "cal", "kill_grader", "forge_result_records",
                                       "patch_torch_compare", "exit_at_import", "dot", "eve", "fay",
                                       "notes.txt"}
    for name in local:
        mine, theirs = _verdicts(dask[name]), _verdicts(local[name])
        assert mine == theirs, (name, "\n".join(difflib.unified_diff(
            json.dumps(theirs, indent=1).splitlines(), json.dumps(mine, indent=1).splitlines(), lineterm="")))
        assert dask[name]["submission"] == local[name]["submission"], name  # not the worker's copy
        assert (_stable((dask_out / "feedback" / f"{name}.md").read_text())
                == _stable((local_out / "feedback" / f"{name}.md").read_text())), name
    assert dask["ada"]["score"] == dask["ada"]["max_score"] > 0
    assert dask["dot"]["score"] == dask["dot"]["max_score"]
    assert 0 < dask["ben"]["score"] < dask["ben"]["max_score"]
    assert dask["cal"]["score"] == 0 and dask["kill_grader"]["score"] == 0


def _fork_servers(dask_worker=None) -> list[int]:
    """On a worker: the pids of its live fork servers."""
    from grader.engine import forkserver

    return sorted(server._proc.pid for server in forkserver._servers.values() if server.alive())


def test_each_worker_grades_the_next_batch_with_the_fork_server_it_started(scheduler_file, tmp_path):
    _wait_for_workers(scheduler_file)
    folder = tmp_path / "class"
    for name in ("ada", "bo"):  # one task for each of the two single-threaded workers
        _put(folder, name, EX.reference)
    cluster = Cluster(address=json.loads(scheduler_file.read_text())["address"])
    servers = []
    for out in ("first", "second"):
        run_batch(folder, tmp_path / out, exercise_ids=[EX.id], limits=LIMITS, log=lambda m: None, cluster=cluster)
        assert all(r["score"] == r["max_score"] > 0 for r in _results(tmp_path / out).values())
        with Client(scheduler_file=str(scheduler_file), timeout=60) as client:
            servers.append(client.run(_fork_servers))
    assert len(servers[0]) == 2 and all(servers[0].values()), servers
    assert servers[1] == servers[0]


def test_a_worker_killed_mid_task_has_the_task_rerun_and_nothing_lost_or_counted_twice(
        scheduler_file, tmp_path, monkeypatch):
    _wait_for_workers(scheduler_file)
    reported: list[str] = []  # each submission the batch wrote a result for, as it did
    update = batch._Progress.update
    monkeypatch.setattr(batch._Progress, "update",
                        lambda self, name, summary: (reported.append(name), update(self, name, summary)))
    folder = tmp_path / "class"
    _put(folder, "slow", _slow(EX.reference))
    _put(folder, "ada", EX.reference)
    _put(folder, "cal", EX.stub)
    killer = Killer(scheduler_file, "slow", 1, tmp_path / "kills.txt", after_s=1.0)
    killer.start()
    try:
        run_batch(folder, tmp_path / "out", exercise_ids=[EX.id], limits=LIMITS, log=lambda m: None,
                  cluster=Cluster(address=json.loads(scheduler_file.read_text())["address"]))
    finally:
        killer.done.set()
        killer.join()
    assert killer.kills() == 1
    results = _results(tmp_path / "out")
    assert set(results) == {"slow", "ada", "cal"}
    assert results["slow"]["score"] == results["slow"]["max_score"] > 0, results["slow"]["problems"]
    assert results["ada"]["score"] == results["ada"]["max_score"] and results["cal"]["score"] == 0
    assert sorted(reported) == ["ada", "cal", "slow"]
    with open(tmp_path / "out" / "gradebook.csv", newline="") as handle:
        assert sorted(r["submission"] for r in csv.DictReader(handle)) == ["ada", "cal", "slow"]


def test_a_submission_that_kills_every_worker_scores_zero_with_the_reason_and_the_batch_goes_on(
        scheduler_file, tmp_path):
    _wait_for_workers(scheduler_file)
    folder = tmp_path / "class"
    _put(folder, "poison", _slow(EX.reference))
    _put(folder, "ada", EX.reference)
    killer = Killer(scheduler_file, "poison", 99, tmp_path / "kills.txt")
    killer.start()
    try:
        run_batch(folder, tmp_path / "out", exercise_ids=[EX.id], limits=LIMITS, log=lambda m: None,
                  cluster=Cluster(address=json.loads(scheduler_file.read_text())["address"]))
    finally:
        killer.done.set()
        killer.join()
    assert killer.kills() == 2  # allowed-failures 1: one retry, then the scheduler gives up
    results = _results(tmp_path / "out")
    assert results["poison"]["score"] == 0 and results["poison"]["problems"] == [killed_reason(2)]
    assert [ex["status"] for ex in results["poison"]["exercises"]] == ["not graded"]
    assert results["ada"]["score"] == results["ada"]["max_score"] > 0
    assert "died on each of 2 tries" in (tmp_path / "out" / "feedback" / "poison.md").read_text()


def test_an_interrupted_cluster_batch_resumes_where_it_stopped(scheduler_file, tmp_path):
    _wait_for_workers(scheduler_file)
    folder, out = tmp_path / "class", tmp_path / "out"
    _put(folder, "ada", EX.reference)
    _put(folder, "slow", _slow(EX.reference))
    _put(folder, "zoe", _slow(EX.stub))
    argv = ["batch", str(folder), "--out", str(out), "-e", EX.id, "--scheduler-file",
            str(scheduler_file), *LIMIT_ARGS]
    # Ctrl-C must reach the grader even where this test runs with SIGINT ignored (a job started in
    # the background by a shell without job control): a child inherits an ignored SIGINT, and
    # Python then installs no KeyboardInterrupt handler. A handled one is reset to the default.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "grader", *argv], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, cwd=catalog.KIT_ROOT)
    finally:
        signal.signal(signal.SIGINT, previous)
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.extend(proc.stderr), daemon=True)
    reader.start()
    while not list((out / "results").glob("*.json")) and proc.poll() is None:
        time.sleep(0.1)
    # Ctrl-C until the grader says it was interrupted: a first SIGINT that lands inside the Dask
    # client's own waiting was seen to be swallowed (a known gap, see the README's Dask section),
    # and one that lands while the grader is exiting after the first ends it by the signal.
    while proc.poll() is None:
        if not any("interrupted" in line for line in said):
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
    reader.join(timeout=120)
    err = "".join(said)
    assert proc.returncode == 130, err
    assert "interrupted: results so far are in" in err and "Traceback" not in err
    first = {p.name: p.stat().st_mtime_ns for p in (out / "results").glob("*.json")}
    assert 1 <= len(first) < 3
    messages: list[str] = []
    run_batch(folder, out, exercise_ids=[EX.id], limits=LIMITS, log=messages.append,
              cluster=Cluster(address=json.loads(scheduler_file.read_text())["address"]))
    assert f"{len(first)} submission(s) already graded" in " ".join(messages), messages
    assert {p.name: p.stat().st_mtime_ns for p in (out / "results").glob("*.json") if p.name in first} == first
    results = _results(out)
    assert set(results) == {"ada", "slow", "zoe"}
    assert results["slow"]["score"] == results["slow"]["max_score"] > 0 and results["zoe"]["score"] == 0
    messages.clear()  # and once everything is graded, a rerun grades nothing
    run_batch(folder, out, exercise_ids=[EX.id], limits=LIMITS, log=messages.append,
              cluster=Cluster(address=json.loads(scheduler_file.read_text())["address"]))
    # Nothing is graded again; the end-of-batch summary (near copies, where the reports are) follows.
    assert messages[0] == ("3 submission(s) already graded in " f"{out} with these settings and files "
                           "(use --force to grade again)")
    assert not any("grading it again" in m for m in messages), messages


def test_a_local_cluster_grades_the_batch(tmp_path, capsys):
    folder = tmp_path / "class"
    _put(folder, "ada", EX.reference)
    _put(folder, "cal", EX.stub)
    code = main(["batch", str(folder), "--out", str(tmp_path / "out"), "-e", EX.id,
                 "--cluster", "local:1", *LIMIT_ARGS])
    assert code == 0, capsys.readouterr().err
    results = _results(tmp_path / "out")
    assert results["ada"]["score"] == results["ada"]["max_score"] > 0
    assert results["cal"]["score"] == 0 and results["cal"]["exercises"][0]["status"] == "not started"


def _run(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def test_an_unreachable_scheduler_is_a_clear_error_before_any_work(tmp_path, capsys, monkeypatch):
    from grader.workflows import dask_batch

    monkeypatch.setattr(dask_batch, "CONNECT_TIMEOUT_S", 1.0)  # nothing listens: waiting longer proves nothing
    _put(tmp_path / "class", "ada", EX.reference)
    address = f"tcp://127.0.0.1:{_free_port()}"
    code, err = _run(["batch", str(tmp_path / "class"), "--out", str(tmp_path / "out"),
                      "--cluster", address], capsys)
    assert code == 2, err
    assert err.startswith(f"grader: error: cannot reach the Dask scheduler at {address} within")
    assert len(err.strip().splitlines()) == 1
    assert not list((tmp_path / "out").glob("results/*.json"))


@pytest.mark.parametrize("argv, expected", [
    (["--cluster", "local:0"], "expected local:N with N, the number of worker processes, 1 or more"),
    (["--cluster", "local:"], "expected local:N"),
    (["--cluster", "local:two"], "expected local:N"),
    (["--cluster", "local:-1"], "expected local:N"),
    (["--cluster", "127.0.0.1"], "is not a scheduler address"),
    (["--cluster", "tcp://127.0.0.1:0"], "with a port from 1 to 65535"),
    (["--cluster", "tcp://127.0.0.1:65536"], "with a port from 1 to 65535"),
    (["--cluster", "http://127.0.0.1:8786"], "is not a scheduler address"),
    (["--cluster", "tcp://127.0.0.1:8786", "--scheduler-file", "{good}"], "not allowed with argument"),
    (["--scheduler-file", "missing.json"], "no such file"),
    (["--scheduler-file", "{not_json}"], "is not a Dask scheduler file"),
])
def test_cluster_options_are_checked_before_any_work(argv, expected, tmp_path, capsys):
    (tmp_path / "class" / "a").mkdir(parents=True)
    (tmp_path / "bad.json").write_text('{"id": "Scheduler-1"}')
    (tmp_path / "good.json").write_text('{"address": "tcp://127.0.0.1:8786"}')
    files = {"{not_json}": "bad.json", "{good}": "good.json", "missing.json": "missing.json"}
    argv = [str(tmp_path / files[a]) if a in files else a for a in argv]
    code, err = _run(["batch", str(tmp_path / "class"), "--out", str(tmp_path / "out"), *argv], capsys)
    assert code == 2 and expected in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("port", ["1", "65535"])
def test_both_ends_of_the_port_range_are_accepted(port):
    from grader.workflows.dask_batch import parse_cluster

    assert parse_cluster(f"tcp://10.0.0.5:{port}").address == f"tcp://10.0.0.5:{port}"
    assert parse_cluster(f"10.0.0.5:{port}").address == f"tcp://10.0.0.5:{port}"
    assert parse_cluster("local:1").local_workers == 1


def test_the_local_batch_never_imports_dask():
    code = ("import sys\nfrom grader.cli import build_parser\nfrom grader.workflows import batch\n"
            "build_parser().parse_args(['batch', 'x'])\n"
            "assert not {'dask', 'distributed'} & set(sys.modules), 'dask imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=catalog.KIT_ROOT, timeout=120)
