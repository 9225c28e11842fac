"""Run a submission's tests in an isolated child process.

What the child gets:
- a private working directory with a staged copy of *only* the selected exercises' modules (a
  submitted ``conftest.py``, ``pytest.ini``, ``sitecustomize.py``, ``*.pth``, symlink, or anything
  else is left behind and reported) and of the kit's test files it needs;
- a scrubbed environment (no tokens or secrets of the grader's environment);
- limits on CPU time, address space, file size, processes and output volume, and a wall-clock
  limit that kills its whole process group;
- when the grader runs as root: no network (a fresh network namespace), a read-only file system
  but for its working directory, the kit's ``solutions/`` and any ``hide`` directories covered by
  an empty tmpfs, and either the ``nobody`` user or no capabilities at all (see ``grader._jail``).

Results come back as JSON lines over a pipe the grader created, each signed with a key the child's
plugin reads from a second pipe at start-up (see ``grader.pytest_plugin``).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from grader import catalog
from grader.scan import Finding, scan_tree

CONFIG_NAMES = {"conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini",
                "sitecustomize.py", "usercustomize.py", "setup.py"}
MAX_MODULE_BYTES = 1 << 20


@dataclass
class Limits:
    """Resource limits of one grading child."""

    wall_s: float = 600.0
    test_s: float = 60.0
    memory_mb: int = 6144
    file_mb: int = 64
    nproc: int = 128  # processes and threads beyond what the child's user already runs
    output_bytes: int = 5_000_000
    network_off: bool = True


@dataclass
class ChildRun:
    """What a grading child left behind."""

    records: list[dict]
    exit_code: int | None  # None: killed by the grader
    output: str
    killed_for: str = ""  # "time" | "output" | "report" when the grader killed it
    ignored: list[str] = field(default_factory=list)
    forged: int = 0  # records whose signature did not verify
    findings: list[Finding] = field(default_factory=list)


# Children in flight: their own sessions do not get the terminal's Ctrl-C, so the grader kills
# them itself (``kill_all``) when it is interrupted.
_RUNNING: set[subprocess.Popen] = set()


def kill_all() -> None:
    """Kill every grading child still running (and its process group)."""
    for proc in list(_RUNNING):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _sign(key: bytes, payload: str) -> str:
    return hmac.new(key, payload.encode(), hashlib.sha256).hexdigest()


def verify_record(key: bytes, line: str) -> dict | None:
    """Parse one signed record line (``{"sig": ..., "body": "<json>"}``); None if it is not ours."""
    try:
        outer = json.loads(line)
        body = outer["body"]
        if not hmac.compare_digest(_sign(key, body), outer["sig"]):
            return None
        return json.loads(body)
    except (ValueError, KeyError, TypeError):
        return None


@functools.lru_cache(maxsize=1)
def _installed_top_level_names() -> frozenset[str]:
    import importlib.metadata

    return frozenset(importlib.metadata.packages_distributions())


def stage(submission: Path, exercises: list[catalog.Exercise], work: Path) -> tuple[Path, Path, list[str]]:
    """Copy what the child may see into ``work``; return (impl root, kit root, ignored files)."""
    impl, kit = work / "submission", work / "kit"
    wanted = {ex.relpath for ex in exercises}
    ignored: list[str] = []
    for rel in sorted(wanted):
        src = submission / rel
        if src.is_symlink():
            ignored.append(f"{rel} (a symbolic link: not followed)")
        elif src.is_file() and src.stat().st_size > MAX_MODULE_BYTES:
            ignored.append(f"{rel} (larger than {MAX_MODULE_BYTES >> 20} MiB)")
        elif src.is_file():
            (impl / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, impl / rel)
    impl.mkdir(exist_ok=True)
    installed = None
    others = 0
    for path in sorted(p for p in submission.rglob("*") if p.is_file() or p.is_symlink()):
        rel = path.relative_to(submission)
        if rel in wanted or "__pycache__" in rel.parts:
            continue
        if path.name in CONFIG_NAMES or path.suffix == ".pth":
            ignored.append(f"{rel} (configuration or start-up hook: ignored)")
            continue
        if path.suffix == ".py":
            installed = installed if installed is not None else _installed_top_level_names()
            if path.stem in installed:
                ignored.append(f"{rel} (named like the installed package {path.stem!r}: ignored)")
                continue
        others += 1
    if others:
        ignored.append(f"{others} other file(s) that are not exercise modules (ignored)")
    for ex in exercises:
        for src in (ex.public_tests, ex.hidden_tests):
            if src.is_file():
                dest = kit / src.relative_to(catalog.KIT_ROOT)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest)
    for name in ("catalog.toml", "pyproject.toml", "conftest.py"):
        shutil.copyfile(catalog.KIT_ROOT / name, kit / name)
    return impl, kit, ignored


def _base_env() -> dict[str, str]:
    """The environment every grading child shares (and a fork server starts with)."""
    env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TZ") if k in os.environ}
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0", PYTHONNOUSERSITE="1",
               TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0", OMP_NUM_THREADS="1")
    return env


def _env(work: Path, kit: Path) -> dict[str, str]:
    return {**_base_env(), "HOME": str(work / "home"), "TMPDIR": str(work / "tmp"),
            "HYPOTHESIS_STORAGE_DIRECTORY": str(work / "tmp" / "hypothesis"),
            "DRILLS_KIT_ROOT": str(kit), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def preload_modules(exercises: list[catalog.Exercise]) -> tuple[str, ...]:
    """What a fork server should import for ``exercises``: only the frameworks they use, with
    the parts their tests import lazily (torch._dynamo alone costs seconds) and the kit's checks,
    none of which read the catalog or start a thread."""
    frameworks = {ex.framework for ex in exercises}
    modules = ["pytest", "_hypothesis_pytestplugin", "pytest_timeout", "hypothesis", "numpy"]
    if frameworks & {"pytorch", "crossframework"}:
        modules += ["torch", "torch._dynamo", "torch.testing", "torch.utils.checkpoint",
                    "torch.func", "grader.checks"]
    if frameworks & {"tensorflow", "crossframework"}:
        modules += ["tensorflow", "grader.tfchecks"]
    return tuple(modules)


def _world_reachable(path: Path) -> bool:
    """Whether any user can read ``path`` (every ancestor searchable by others)."""
    path = path.resolve()
    for node in [path, *path.parents]:
        mode = node.stat().st_mode
        if not mode & (0o001 if node != path or node.is_dir() else 0o004):
            return False
    return True


def _drop_to() -> list[int] | None:
    """uid/gid of ``nobody`` when root and ``nobody`` can run this interpreter and the kit."""
    if os.geteuid() != 0:
        return None
    needed = [Path(sys.executable), Path(sys.base_prefix) / "lib", catalog.KIT_ROOT / "grader"]
    if not all(_world_reachable(p) for p in needed):
        return None
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        return None
    return [entry.pw_uid, entry.pw_gid]


def _chown_tree(root: Path, ids: list[int]) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            os.chown(os.path.join(dirpath, name), *ids)
    os.chown(root, *ids)


def run_tests(submission: Path, exercises: list[catalog.Exercise], limits: Limits, *,
              hide: list[Path] = (), fork: bool = False) -> ChildRun:
    """Stage ``submission`` and run the exercises' public and hidden tests in a jailed child.

    ``fork``: fork the child from a shared fork server that has already imported the frameworks
    (``grader._forkserver``) instead of starting a fresh interpreter.
    """
    with tempfile.TemporaryDirectory(prefix="drills-") as tmp:
        work = Path(tmp)
        impl, kit, ignored = stage(submission, exercises, work)
        findings = scan_tree(impl)
        for sub in ("home", "tmp", "cwd"):
            (work / sub).mkdir()
        drop = _drop_to()
        if drop:
            _chown_tree(work, drop)
            os.chmod(work, 0o700)
        files = [str(kit / p.relative_to(catalog.KIT_ROOT)) for ex in exercises
                 for p in (ex.public_tests, ex.hidden_tests) if p.is_file()]
        key = secrets.token_bytes(32)
        report_r, report_w = os.pipe()
        key_r, key_w = os.pipe()
        os.write(key_w, key.hex().encode())
        os.close(key_w)
        jail = {"cpu_s": int(limits.wall_s * 2) + 10, "memory_mb": limits.memory_mb,
                "file_mb": limits.file_mb, "nproc": limits.nproc, "drop_to": drop,
                "network_off": limits.network_off, "workdir": str(work),
                "hide": [str(p) for p in [catalog.KIT_ROOT / "solutions", *hide]]}
        # Plugins are named, not discovered (PYTEST_DISABLE_PLUGIN_AUTOLOAD): whatever else is
        # installed (anyio's plugin alone imports for 2 s) stays out of the grading child. Nor
        # does it need pytest's unraisable-exception hook, whose full gc at exit costs ~0.7 s.
        # --tb=no: the plugin writes each failure's message itself; pytest's own traceback
        # rendering would cost seconds over a suite of failing stubs. No log capture either.
        args = ["-q", "--no-header", "--tb=no", "-p", "no:cacheprovider", "-p", "no:unraisableexception",
                "-p", "no:logging", "-p", "grader.pytest_plugin",
                "-p", "_hypothesis_pytestplugin", "-p", "pytest_timeout", "--rootdir", str(kit),
                "-c", str(kit / "pyproject.toml"), "--impl-root", str(impl), "--grading",
                "--report-fd", "{report_fd}", "--report-key-fd", "{key_fd}",
                "--test-timeout", str(limits.test_s), *files]
        env, cwd = _env(work, kit), work / "cwd"
        if fork:
            from grader import _forkserver

            server = _forkserver.server_for(preload_modules(exercises), _base_env())

            def start():
                return server.spawn(args, env, cwd, jail, report_w, key_r)
        else:
            cmd = [sys.executable, "-m", "grader._jail", json.dumps(jail), "--",
                   sys.executable, "-m", "pytest",
                   *(a.format(report_fd=report_w, key_fd=key_r) for a in args)]

            def start():
                return subprocess.Popen(
                    cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    env=env, cwd=cwd, pass_fds=(report_w, key_r), start_new_session=True)
        run = _supervise(start, (report_w, key_r), report_r, key, limits)
        run.ignored, run.findings = ignored, findings
        return run


def _supervise(start, pass_fds: tuple[int, ...], report_r: int, key: bytes,
               limits: Limits) -> ChildRun:
    """Start the child (``start()`` returns a ``Popen``-like object), read its output and
    records, and kill its process group at the wall-clock limit."""
    records: list[dict] = []
    forged = 0
    head, tail = bytearray(), bytearray()
    killed_for = ""
    try:
        proc = start()
    finally:
        for fd in pass_fds:
            os.close(fd)
    _RUNNING.add(proc)

    def kill(reason: str) -> None:
        nonlocal killed_for
        killed_for = killed_for or reason
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def read_output() -> None:
        total = 0
        for chunk in iter(lambda: proc.stdout.read1(65536), b""):
            total += len(chunk)
            if len(head) < 8192:
                head.extend(chunk[: 8192 - len(head)])
            tail.extend(chunk)
            del tail[:-16384]
            if total > limits.output_bytes:
                kill("output")

    def read_records() -> None:
        nonlocal forged
        size = 0
        with os.fdopen(report_r, "rb") as stream:
            for line in stream:
                size += len(line)
                if size > 50_000_000:
                    kill("report")
                    break
                record = verify_record(key, line.decode("utf-8", "replace"))
                if record is None:
                    forged += 1
                else:
                    records.append(record)

    readers = [threading.Thread(target=f, daemon=True) for f in (read_output, read_records)]
    for t in readers:
        t.start()
    code: int | None
    try:
        code = proc.wait(timeout=limits.wall_s)
    except subprocess.TimeoutExpired:
        kill("time")
        proc.wait()
        code = None
    except ConnectionError:  # the fork server died: the child went with it
        kill("")
        code = None
    kill("")  # grandchildren may linger and hold the pipes open
    for t in readers:
        t.join(timeout=10)
    _RUNNING.discard(proc)
    if killed_for:
        code = None
    output = head.decode("utf-8", "replace")
    if len(tail) and not bytes(head).endswith(bytes(tail[-64:])):
        output += "\n[...]\n" + tail.decode("utf-8", "replace")
    return ChildRun(records, code, output, killed_for, forged=forged)
