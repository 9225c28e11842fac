"""A batch of hostile submissions beside honest ones: each hostile one scores 0 or is flagged,
the grader survives, the honest ones keep full marks, and bad inputs are reported. The ones that
attack the sandbox itself (``OS_LEVEL``) are also graded one by one in fresh interpreters, as
``grader score`` does (on one test: each strikes at its import or its first call).

Every hostile module falls back to raising NotImplementedError (or wrong output) when its trick
fails, so "scores 0" means the trick did not work; one that got out says so in a failure message
starting with "ESCAPED", which no result may contain.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import site
import socket
import subprocess
import sys
import tempfile
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from grader import catalog
from grader.engine import jail, sandbox
from grader.engine.sandbox import Limits
from grader.engine.scoring import score_submission
from grader.workflows.batch import run_batch

EX = catalog.get_exercise("pytorch.tensors.broadcasting")
CORPUS = Path(__file__).with_name("adversarial")
SECRET = "s3cr3t-grader-token-4711"
FLAGGED_ONLY = {"frame_walk_cheat": "_getframe"}  # may score, but must be flagged for review
# The reason each one is given, found among the run's problems or its tests' messages. Output
# goes to pytest's capture file, which the file-size or disk limit stops (or, outside it, the pipe cap).
EXPECTED_PROBLEM = {
    "forge_result_records": "forged record",
    "output_flood": ("flooding its output", "File too large", "No space left"),
    "patch_check_library": "tampering detected",
    "patch_test_globals": "tampering detected",
    "patch_torch_compare": "tampering detected",
    "patch_tensor_ops": "tampering detected",
    "register_pytest_plugin": "tampering detected",
    "patch_test_report": "tampering detected",
    "exit_at_import": "ended early",
    "cancel_time_limit": "stopped by the grader",
    "hang_in_c": "stopped by the grader",
    "stack_overflow": "ended early",
}
OS_LEVEL = ["cancel_time_limit", "disk_fill", "forkserver_escape", "hang_in_c",
            "outlive_the_grader", "privileges_and_threads", "read_kit_and_neighbours",
            "shared_state_and_host_knobs", "stack_overflow"]
SHM_KEY = 0x0D11115  # shared_state_and_host_knobs.KEY
# A second per test: the hangs (infinite_loop in each of its affine tests, the two that overrun it
# until the grader stops their run) busy-loop to their limits, among the suite's costliest seconds,
# while the honest reference's slowest test takes 0.11 s with four processes sharing this machine's
# two cores.
LIMITS = Limits(wall_s=120, test_s=1, nproc=64, disk_mb=48)
# And 1.5 s, not the product's 10, past that second before the grader stops a test from outside:
# the two that cancel or escape the child's own limit busy-loop that long, three times each in the
# batch (their child and the two fresh ones after it), once in a fresh interpreter. A submission's
# setup here is one small module's import; a test the child's own limit stops reports within
# milliseconds of it.
GRACE_S = 1.5

pytestmark = pytest.mark.timeout(1200)


class _Listener:
    """A loopback TCP server that records whatever reaches it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                self.received.append(conn.recv(1024))

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


def _hostile(module: Path, port: int, folder: Path, out: Path) -> str:
    """The module's text with the test's own port and folders written in."""
    return (module.read_text().replace("_port = 9  # PORT", f"_port = {port}  # PORT")
            .replace('_out = "/nonexistent"  # OUT', f'_out = "{out}"  # OUT')
            .replace('_batch = "/nonexistent"  # BATCH', f'_batch = "{folder}"  # BATCH'))


def _host_state(uids: set[int] = frozenset()) -> dict:
    """What a submission could leave behind on the host (of the jailed processes: those running
    as one of ``uids``, so that concurrent graders do not count)."""
    try:
        shm = Path("/proc/sysvipc/shm").read_text()
    except OSError:
        shm = ""
    keys = {int(line.split()[0]) for line in shm.splitlines()[1:] if line.split()}
    return {"shm": SHM_KEY in keys, "hostname": socket.gethostname(),
            "markers": [p for p in ("/dev/drills-marker", "/dev/shm/drills-marker", "/tmp/drills-pwned")
                        if os.path.exists(p)],
            "jailed_processes": _jailed_processes(uids)}


def _jailed_processes(uids: set[int]) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and os.stat(f"/proc/{pid}").st_uid in uids:
                found.append(int(pid))
        except OSError:
            continue
    return found


def _uids(results: dict) -> set[int]:
    return {r["sandbox"]["uid"] for r in results.values() if isinstance(r.get("sandbox", {}).get("uid"), int)}


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    out = tmp_path_factory.mktemp("results")
    listener = _Listener()
    before_host = _host_state()
    for module in sorted(CORPUS.glob("*.py")):
        target = folder / module.stem / EX.relpath
        target.parent.mkdir(parents=True)
        target.write_text(_hostile(module, listener.port, folder, out))
    honest = folder / "honest" / EX.relpath
    honest.parent.mkdir(parents=True)
    shutil.copyfile(EX.reference, honest)
    with zipfile.ZipFile(folder / "honest_zip.zip", "w") as archive:
        archive.write(EX.reference, f"my-work/{EX.relpath.as_posix()}")  # zipped with its folder
    (folder / "empty").mkdir()
    (folder / "notazip.zip").write_bytes(b"this is not a zip archive")
    (folder / "stray.txt").write_text("a file where a submission folder is expected")
    kit_file = catalog.KIT_ROOT / "grader" / "checks" / "_compare.py"
    before = hashlib.sha256(kit_file.read_bytes()).hexdigest()
    mp = pytest.MonkeyPatch()
    mp.setenv("DRILLS_FAKE_SECRET", SECRET)
    mp.setattr(sandbox, "OUTSIDE_GRACE_S", GRACE_S)
    try:
        gradebook = run_batch(folder, out, exercise_ids=[EX.id], jobs=2, limits=LIMITS,
                              log=lambda m: None)
    finally:
        mp.undo()
        listener.close()
    results = {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}
    return {"folder": folder, "out": out, "results": results, "gradebook": gradebook,
            "kit_unchanged": hashlib.sha256(kit_file.read_bytes()).hexdigest() == before,
            "received": listener.received, "host_before": before_host,
            "host_after": _host_state(_uids(results))}


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """The OS-level corpus graded one submission at a time in fresh interpreters, two at once, on
    one test each: each strikes at its import or its first call. (Graded on every test, the two
    that overrun the limit cost three fresh interpreters each, as the batch shows they do.)"""
    folder = tmp_path_factory.mktemp("scored")
    out = tmp_path_factory.mktemp("scored-out")
    before_host = _host_state()
    roots = {}
    for name in OS_LEVEL:
        target = folder / name / EX.relpath
        target.parent.mkdir(parents=True)
        target.write_text(_hostile(CORPUS / f"{name}.py", 9, folder, out))
        roots[name] = folder / name
    with pytest.MonkeyPatch.context() as mp, ThreadPoolExecutor(2) as pool:
        mp.setattr(sandbox, "OUTSIDE_GRACE_S", GRACE_S)
        reports = dict(zip(roots, pool.map(
            lambda root: score_submission(root, [EX.id], limits=LIMITS, hide=[folder],
                                          select={EX.id: ["test_pairwise_small_example"]}).to_dict(),
            roots.values())))
    return {"results": reports, "host_before": before_host, "host_after": _host_state(_uids(reports))}


def _escapes(result: dict) -> list[str]:
    return [t["message"] for ex in result["exercises"] for t in ex["tests"] if "ESCAPED" in t["message"]]


def test_honest_submissions_keep_full_marks(batch):
    for name in ("honest", "honest_zip"):
        result = batch["results"][name]
        assert result["score"] == result["max_score"] > 0, (name, result["problems"])


@pytest.mark.parametrize("name", sorted(p.stem for p in CORPUS.glob("*.py")))
def test_each_hostile_submission_scores_zero_or_is_flagged(batch, name):
    result = batch["results"][name]
    if name in FLAGGED_ONLY:
        assert any(FLAGGED_ONLY[name] in flag for flag in result["flags"]), result["flags"]
        return
    assert result["score"] == 0, f"{name} scored {result['score']}: {result['problems']}"
    if name in EXPECTED_PROBLEM:
        expected = EXPECTED_PROBLEM[name]
        reasons = result["problems"] + [t["message"] for ex in result["exercises"] for t in ex["tests"]]
        assert any(e in r for e in ((expected,) if isinstance(expected, str) else expected)
                   for r in reasons), result["problems"]


@pytest.mark.parametrize("name", OS_LEVEL)
def test_each_sandbox_attack_scores_zero_in_a_fresh_interpreter(scored, name):
    result = scored["results"][name]
    assert result["score"] == 0, f"{name} scored {result['score']}: {result['problems']}"
    assert not _escapes(result), _escapes(result)
    if name in EXPECTED_PROBLEM:
        reasons = result["problems"] + [t["message"] for ex in result["exercises"] for t in ex["tests"]]
        assert any(EXPECTED_PROBLEM[name] in r for r in reasons), result["problems"]


@pytest.mark.parametrize("mode", ["batch", "scored"])
def test_nothing_is_left_on_the_host(request, mode):
    run = request.getfixturevalue(mode)
    assert run["host_after"] == run["host_before"]
    assert not any(_escapes(result) for result in run["results"].values()), \
        {name: _escapes(result) for name, result in run["results"].items() if _escapes(result)}


def test_nothing_escaped_the_sandbox(batch):
    assert batch["kit_unchanged"], "a submission modified the kit's own files"
    assert not Path("/tmp/drills-pwned").exists() and not Path("/work/drills-pwned").exists()
    assert batch["received"] == [], "a submission reached a loopback server"
    for path in batch["out"].rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), f"the secret leaked into {path.name}"


def test_sandbox_facts_are_reported(batch):
    facts = batch["results"]["honest"]["sandbox"]
    assert facts["network_isolated"] and facts["solutions_hidden"] and not facts["kit_writable"]
    assert facts["uid"] >= jail.UID_BASE and not facts["capabilities"]


def test_bad_inputs_get_a_clear_message_and_the_batch_goes_on(batch):
    assert "empty" in batch["results"]["empty"]["problems"][0]
    assert "not a valid zip file" in batch["results"]["notazip"]["problems"][0]
    assert "not a folder or a .zip" in batch["results"]["stray.txt"]["problems"][0]


def test_gradebook_has_a_row_per_submission_and_a_column_per_exercise(batch):
    with open(batch["gradebook"], newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["submission"] for r in rows} == set(batch["results"])
    honest = next(r for r in rows if r["submission"] == "honest")
    assert float(honest[EX.id]) == float(honest["max_total"]) > 0
    assert (batch["out"] / "feedback" / "honest.md").is_file()


def test_rerun_skips_done_work_and_regrades_what_is_missing(batch):
    (batch["out"] / "results" / "honest.json").unlink()
    messages: list[str] = []
    run_batch(batch["folder"], batch["out"], exercise_ids=[EX.id], jobs=1, limits=LIMITS,
              log=messages.append)
    assert any("already graded" in m for m in messages)
    result = json.loads((batch["out"] / "results" / "honest.json").read_text())
    assert result["score"] == result["max_score"] > 0


@pytest.fixture
def readable_interpreter():
    """This interpreter if every user can read it, else a venv (where every user can read it) of
    the system's Python of the same version that loads this one's packages, as a container image
    usually has; None if neither."""
    if all(jail.world_reachable(p) for p in (sys.prefix, sys.base_prefix)):
        yield sys.executable
        return
    system = shutil.which(f"python{sys.version_info.major}.{sys.version_info.minor}", path="/usr/bin:/usr/local/bin")
    if system is None:
        yield None
        return
    venv = Path(tempfile.mkdtemp(prefix="drills-test-venv-"))
    try:
        venv.chmod(0o755)
        subprocess.run([system, "-m", "venv", "--without-pip", str(venv)], check=True)
        (next(venv.glob("lib/python*/site-packages")) / "drills_kit.pth").write_text(
            "".join(f"import site; site.addsitedir({p!r})\n" for p in site.getsitepackages()))
        yield str(venv / "bin" / "python")
    finally:
        shutil.rmtree(venv)


CONTAINER_BATCH = """
import json, sys
from pathlib import Path
from grader import catalog
from grader.reports import formats
from grader.workflows.batch import run_batch
from grader.engine.sandbox import Limits
from grader.engine.scoring import score_submission
folder, out = Path(sys.argv[1]), Path(sys.argv[2])
run_batch(folder, out, exercise_ids=[sys.argv[3]], jobs=2, limits=Limits(wall_s=120, test_s=3, nproc=64),
          log=lambda m: None)
report = score_submission(folder / "honest", [sys.argv[3]])
print(json.dumps({"table": formats.render(report, "table"), "markdown": formats.render(report, "markdown"),
                  "junit": formats.render(report, "junit"), "gradescope": formats.render(report, "gradescope")}))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("capsh"), reason="needs root and capsh")
def test_in_a_container_without_cap_sys_admin_the_grader_says_so_and_isolates_what_it_can(
        tmp_path, readable_interpreter):
    """Root without CAP_SYS_ADMIN, as in a default Docker container (Gradescope): no namespaces,
    so the grader warns in every report, and runs submitted code as a uid of its own that can
    neither read the reference solutions nor write the kit."""
    python = readable_interpreter
    if python is None:
        pytest.skip("no interpreter that an unprivileged user can read")
    folder, out = tmp_path / "class", tmp_path / "out"
    # Not write_outside_sandbox: at this level /tmp is shared, and its marker there is what
    # every other run of this suite checks for.
    for name in ("read_kit_and_neighbours", "privileges_and_threads", "read_reference_from_disk"):
        target = folder / name / EX.relpath
        target.parent.mkdir(parents=True)
        target.write_text(_hostile(CORPUS / f"{name}.py", 9, folder, out))
    (folder / "honest" / EX.relpath).parent.mkdir(parents=True)
    shutil.copyfile(EX.reference, folder / "honest" / EX.relpath)
    kit_file = catalog.KIT_ROOT / "grader" / "checks" / "_compare.py"
    before = kit_file.read_bytes()
    restricted = [catalog.KIT_ROOT / "solutions", catalog.KIT_ROOT / "examples"]
    modes = {p: p.stat().st_mode for p in restricted if p.exists()}
    script = tmp_path / "grade.py"
    script.write_text(CONTAINER_BATCH)
    try:
        done = subprocess.run(["capsh", "--drop=cap_sys_admin", "--", "-c",
                               f"exec {python} {script} {folder} {out} {EX.id}"],
                              cwd=catalog.KIT_ROOT, capture_output=True, text=True, timeout=900)
    finally:
        for path, mode in modes.items():
            path.chmod(mode)
        after = kit_file.read_bytes()
        kit_file.write_bytes(before)  # never leave a rewritten kit behind, whatever happened
    assert after == before, "a submission rewrote the kit"
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WEAK SANDBOX" in done.stderr  # on the terminal
    rendered = json.loads(done.stdout.splitlines()[-1])
    assert all("WEAK SANDBOX" in text for text in rendered.values()), rendered
    results = {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}
    assert results["honest"]["score"] == results["honest"]["max_score"] > 0
    assert results["honest"]["sandbox"]["level"] == "container"
    assert results["honest"]["sandbox"]["uid"] >= jail.UID_BASE
    assert not results["honest"]["sandbox"]["kit_writable"]
    for name, result in results.items():
        if name != "honest":
            assert result["score"] == 0 and not _escapes(result), (name, result["problems"], _escapes(result))
    assert not _jailed_processes(_uids(results))


@pytest.mark.skipif(jail.level() == "none", reason="without root the child runs as the grader's user")
def test_another_checkout_of_the_kit_on_the_graders_path_shows_the_child_none_of_its_solutions(monkeypatch):
    """A second copy of the kit on ``sys.path`` (an editable install of another checkout) is shown
    to the child for the packages it may hold; its reference solutions are not."""
    other = Path(tempfile.mkdtemp(prefix="other-checkout-"))
    try:
        other.chmod(0o755)  # readable by the child's uid, as a checkout is: only the jail may stop it
        reference = other / EX.reference.relative_to(catalog.KIT_ROOT)
        reference.parent.mkdir(parents=True)
        shutil.copyfile(EX.reference, reference)
        shutil.copyfile(catalog.CATALOG_FILE, other / catalog.CATALOG_NAME)
        for path in [reference, *reference.parents]:
            if path == other:
                break
            path.chmod(0o755 if path.is_dir() else 0o644)
        submission = other.with_name(other.name + "-submission")
        target = submission / EX.relpath
        target.parent.mkdir(parents=True)
        target.write_text((CORPUS / "read_reference_from_disk.py").read_text().replace(
            'Path(grader.__file__).parent.parent / "solutions/pytorch/tensors/broadcasting.py"',
            f"Path({str(reference)!r})"))
        monkeypatch.setattr(sys, "path", [*sys.path, str(other)])
        assert str(other) in sandbox._revealed()  # shown to the child, as a package directory
        report = score_submission(submission, [EX.id], limits=LIMITS)
    finally:
        shutil.rmtree(other, ignore_errors=True)
        shutil.rmtree(other.with_name(other.name + "-submission"), ignore_errors=True)
    assert report.max_score > 0 and report.score == 0, [
        (t.name, t.status) for ex in report.exercises for t in ex.tests if t.status == "passed"]
