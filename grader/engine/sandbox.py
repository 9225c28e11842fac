"""Run a submission's tests in an isolated child process.

What the child gets:
- a private working directory with a staged copy of *only* the selected exercises' modules (a
  submitted ``conftest.py``, ``pytest.ini``, ``sitecustomize.py``, ``*.pth``, symlink, or anything
  else is left behind and reported), of the kit's test files it needs and, for a fresh child, of
  hypothesis's character tables (``grader.engine.hypothesis_tables``);
- a scrubbed environment (no tokens or secrets of the grader's environment);
- limits on CPU time, address space, file size, disk, processes and output volume, a per-test
  time limit enforced from outside (``_supervise``: a test that outlives its own in-process limit
  is stopped, scores 0, and the remaining tests run in a fresh child), and a wall-clock limit;
- the jail of ``grader.engine.jail`` at the strongest level the grader's privileges allow (``full`` as
  root with CAP_SYS_ADMIN: its own namespaces, a file system of the system directories, the
  interpreter and the kit's ``grader`` package only, read-only but for a size-limited tmpfs, and a
  uid of its own). A weaker level is announced on the terminal and in every report
  (``isolation``).

Results come back as JSON lines over a pipe the grader created, each signed with a key the child's
plugin reads from a second pipe at start-up (see ``grader.pytest_plugin``). The child announces
each test as it starts (``started``), which is what the outside per-test limit watches.

A submission whose exercises include some graded in one process with their submitted module
(not ``separate_process``) gets two children, started side by side: one for those, which runs no
test before the other has ended, and one for the rest; each child's records count only for its
own exercises (``_run_children``).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import importlib.util
import json
import os
import shutil
import signal
import site
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from grader import PACKAGE_DIR, _records, catalog, defaults
from grader._records import Event
from grader._until_failed import FailureGroups
from grader.engine import forkserver, hypothesis_tables, jail
from grader.engine.scan import Finding, read_tree, scan_sources

CONFIG_NAMES = {"conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini",
                "sitecustomize.py", "usercustomize.py", "setup.py"}
MAX_MODULE_BYTES = 1 << 20


@dataclass
class Limits:
    """Resource limits of one grading child."""

    wall_s: float = defaults.WALL_S
    test_s: float = defaults.TEST_TIMEOUT_S
    memory_mb: int = defaults.MEMORY_MB
    file_mb: int = 64
    disk_mb: int = 512  # everything the child writes, together (a tmpfs, when root)
    nproc: int = 128  # processes and threads the child may run
    output_bytes: int = 5_000_000


@dataclass
class ChildRun:
    """What a grading child left behind."""

    records: list[dict]
    exit_code: int | None  # None: killed by the grader
    output: str
    killed_for: str = ""  # "time" | "output" | "report" | "test" when the grader killed it
    ignored: list[str] = field(default_factory=list)
    forged: int = 0  # records whose signature did not verify
    findings: list[Finding] = field(default_factory=list)
    isolation: dict = field(default_factory=dict)  # ``isolation()``: the jail level, any warning
    ran_s: float = 0.0  # from the child's start to its end


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


@functools.lru_cache(maxsize=1)
def _installed_top_level_names() -> frozenset[str]:
    import importlib.metadata

    return frozenset(importlib.metadata.packages_distributions())


def stage(submission: Path, exercises: list[catalog.Exercise], work: Path, *,
          with_tests: bool = True) -> tuple[Path, Path, list[str]]:
    """Copy what the child may see into ``work``; return (impl root, kit root, ignored files).
    ``with_tests=False``: the child runs tests staged elsewhere (``forking_kit``)."""
    impl, kit = work / "submission", work / "kit"
    wanted = {ex.relpath for ex in exercises}
    ignored: list[str] = []
    for rel in sorted(wanted):
        src = submission / rel
        if src.is_symlink():
            ignored.append(f"{rel} (a symbolic link: not followed)")
        elif src.is_file() and src.stat().st_size > MAX_MODULE_BYTES:
            ignored.append(f"{rel} (larger than {MAX_MODULE_BYTES >> 20} MiB)")
        elif _staged(src):
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
    if with_tests:
        stage_tests(exercises, kit)
    for sub in (*(f"rw/{name}" for name in jail.RW_DIRS), "root"):
        (work / sub).mkdir(parents=True)
    return impl, kit, ignored


def _staged(module: Path) -> bool:
    """Whether ``stage`` copies the submitted ``module`` for the child (else it is absent there)."""
    return module.is_file() and not module.is_symlink() and module.stat().st_size <= MAX_MODULE_BYTES


KIT_CONFIG = ("catalog.toml", "pyproject.toml", "conftest.py")  # what a child's pytest reads besides tests


def _test_sources(exercises: list[catalog.Exercise]) -> list[Path]:
    return [p for ex in exercises for p in (ex.public_tests, ex.hidden_tests) if p.is_file()]


def stage_tests(exercises: list[catalog.Exercise], kit: Path) -> list[str]:
    """Copy the exercises' test files and the kit's configuration into ``kit`` (the same layout
    as the kit's); return the test files' paths there."""
    files = []
    for src in _test_sources(exercises):
        dest = kit / src.relative_to(catalog.KIT_ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        files.append(str(dest))
    for name in KIT_CONFIG:
        shutil.copyfile(catalog.KIT_ROOT / name, kit / name)
    return files


_forking_kits: dict[tuple, Path] = {}
_forking_kits_lock = threading.Lock()


def forking_kit() -> Path:
    """The tests of every catalog exercise, staged once per grader process for the children of its
    fork servers, which collect them once before forking (``grader.engine.forkserver``): every
    child runs its tests of that one session instead of collecting its own copies. Readable
    by the children, writable only by the grader; a changed test file gets a new copy."""
    exercises = list(catalog.load_catalog().values())
    sources = [*_test_sources(exercises), *(catalog.KIT_ROOT / name for name in KIT_CONFIG)]
    key = (str(catalog.KIT_ROOT), *((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in sources))
    # Graders in threads (a batch's or verify's jobs) asking at once share one copy, and so one
    # fork server: each staged a copy of its own before, and started a server for it.
    with _forking_kits_lock:
        kit = _forking_kits.get(key)
        if kit is None or not kit.is_dir():
            kit = Path(tempfile.mkdtemp(prefix="drills-kit-"))
            kit.chmod(0o755)
            stage_tests(exercises, kit)
            atexit.register(shutil.rmtree, kit, True)
            _forking_kits[key] = kit
    return kit


def _base_env() -> dict[str, str]:
    """The environment every grading child shares (and a fork server starts with). Its
    PYTHONPATH is where this ``grader`` package lives, so the child runs the grader's own copy
    (the jail shows it nothing else of that folder)."""
    env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TZ") if k in os.environ}
    env.update(defaults.TF_ENV, PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0", PYTHONNOUSERSITE="1",
               OMP_NUM_THREADS="1",
               PYTHONPATH=str(PACKAGE_DIR.parent))
    return env


def _env(work: Path, kit: Path) -> dict[str, str]:
    rw = work / "rw"
    return {**_base_env(), "HOME": str(rw / "home"), "TMPDIR": str(rw / "tmp"),
            "HYPOTHESIS_STORAGE_DIRECTORY": str(rw / "tmp" / "hypothesis"),
            "DRILLS_KIT_ROOT": str(kit), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


# What an exercise's optional extra loads lazily, which its first test would pay inside its time,
# twice for an exercise graded apart (in the tests' process and in the submission's): importing
# torch.utils.tensorboard imports TensorFlow where it is installed (about 4 s); torch.onnx.export's
# first call imports ONNX Script and its torchlib (1 s of CPU), the tests' checker imports onnx
# (0.6 s). onnxruntime is left to load lazily: its import starts a thread, and a server forks.
# An extra not installed is not loaded: its exercise fails on its own.
class _ExtraModules(NamedTuple):
    needs: tuple[str, ...]  # the packages that tell the extra is installed
    modules: tuple[str, ...]  # what to load
    loads_tensorflow: bool = False  # whether they import TensorFlow where it is installed


_EXTRA_MODULES = {  # (framework, extra) -> what to load for it
    ("pytorch", "tensorboard"): _ExtraModules(("tensorboard",), ("torch.utils.tensorboard",), loads_tensorflow=True),
    ("pytorch", "onnx"): _ExtraModules(("onnx", "onnxscript"),
                                       ("onnx", "onnxscript", "onnxscript.function_libs.torch_lib.ops")),
}


def preload_modules(exercises: list[catalog.Exercise]) -> tuple[str, ...]:
    """What a fork server should import for ``exercises`` (and a fresh child before its first
    test, so that no test pays for them): only the frameworks they use, with the parts their
    tests import lazily (torch._dynamo alone costs seconds) and the kit's checks, none of which
    read the catalog or start a thread; and what an installed optional extra they need loads
    lazily (``_EXTRA_MODULES``)."""
    frameworks = {ex.framework for ex in exercises}
    # numpy.testing, hypothesis's optimiser and torch's schema check mode: loaded lazily on a
    # test's first `np.testing`, `target()` and dispatch mode, in every child that runs one.
    modules = ["pytest", "_hypothesis_pytestplugin", "hypothesis", "hypothesis.internal.conjecture.optimiser",
               "numpy", "numpy.testing"]
    if frameworks & {"pytorch", "crossframework"}:
        modules += ["torch", "torch._dynamo", "torch.testing", "torch.utils.checkpoint",
                    "torch.func", "torch._subclasses.schema_check_mode", "grader.checks",
                    "grader.checks._strategies"]
    if frameworks & {"tensorflow", "crossframework"}:
        modules += ["tensorflow", "grader.tfchecks", "grader.tfchecks._strategies"]
    if any(ex.separate_process for ex in exercises):  # the executor's modules, and torch, whose state both sides read
        modules += [m for m in ("torch", "grader.remote", "grader.remote._executor") if m not in modules]
    for (framework, extra), loads in _EXTRA_MODULES.items():
        if (any(ex.framework == framework and extra in ex.extras for ex in exercises)
                and all(importlib.util.find_spec(package) is not None for package in loads.needs)):
            modules += [m for m in loads.modules if m not in modules]
    return tuple(modules)


def server_modules(exercises: list[catalog.Exercise]) -> tuple[str, ...]:
    """What the fork server that grades ``exercises`` preloads: what all the catalog's exercises
    that load no TensorFlow need, where theirs load none (TensorFlow never enters a PyTorch-only
    grading), else what every exercise needs. One grader process thus starts at most two servers,
    whichever exercises its runs grade (a batch, ``verify``'s rounds, ``mutants``' one exercise
    at a time), each collecting the tests once for all of them."""
    def loads_tensorflow(modules: tuple[str, ...]) -> bool:  # as an extra's modules may
        return "tensorflow" in modules or any(
            loads.loads_tensorflow and not set(loads.modules).isdisjoint(modules) for loads in _EXTRA_MODULES.values())

    catalogued = list(catalog.load_catalog().values())
    needed = set(preload_modules(exercises))
    for kind in (preload_modules([ex for ex in catalogued if not loads_tensorflow(preload_modules([ex]))]),
                 preload_modules(catalogued)):
        if needed <= set(kind):
            return kind
    return preload_modules(exercises)


def _revealed() -> list[str]:
    """What the child must read besides the system directories: the interpreter, its packages
    (every directory on the grader's ``sys.path``) and the kit's ``grader`` package, nothing
    else of the kit (not its solutions, examples or ``.git``)."""
    kit = str(catalog.KIT_ROOT)
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             sysconfig.get_paths()["stdlib"], *site.getsitepackages(),
             *sys.path[1:],  # not the first: the main script's folder, or the working directory
             os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))),
             str(PACKAGE_DIR)}
    found = {q for p in paths if p for q in (os.path.abspath(p), os.path.realpath(p))}
    return sorted(p for p in found if os.path.isdir(p) and not (kit + "/").startswith(p.rstrip("/") + "/"))


def _hidden(revealed: list[str], hide: list[Path]) -> list[str]:
    """What the child must not read even where it lies inside what it may (see ``_jail``): the
    kit's solutions, examples and history, the same of any other copy of the kit that is one of
    the ``revealed`` directories (a second checkout on ``sys.path``, as an editable install of it
    puts it there), and ``hide``."""
    # A catalog is enough to tell a copy (looser than ``find_kit_root``'s test on purpose: a copy
    # lacking its exercises/ still holds solutions worth hiding).
    kits = [catalog.KIT_ROOT, *(Path(p) for p in revealed if (Path(p) / catalog.CATALOG_NAME).is_file())]
    return [*(str(kit / name) for kit in kits for name in ("solutions", "examples", ".git")), *map(str, hide)]


def _policy(limits: Limits, hide: list[Path]) -> dict:
    """The jail (``grader.engine.jail``) for a child graded under ``limits``, its work directory aside."""
    revealed = _revealed()
    return {"cpu_s": int(limits.wall_s * 2) + 10, "memory_mb": limits.memory_mb,
            "file_mb": limits.file_mb, "disk_mb": limits.disk_mb, "nproc": limits.nproc,
            "reveal": revealed, "hide": _hidden(revealed, hide)}


ISOLATION_WARNINGS = {
    "container": "WEAK SANDBOX: the grader runs as root without CAP_SYS_ADMIN (a default "
                 "container), so submitted code shares the network, file system view, IPC and "
                 "process table of the grader; it runs as an unprivileged uid of its own {uid_note}. "
                 "Run the container with --cap-add SYS_ADMIN (or --privileged) for full isolation.",
    "none": "NO SANDBOX: the grader does not run as root, so submitted code runs as the grader's "
            "own user with resource limits only: it can read the reference solutions, write the "
            "kit and reach the network. Grade untrusted code as root in a container.",
}


def isolation(reveal: list[str] | None = None) -> dict:
    """The jail level this grader gives (``grader.engine.jail.level``) and, when weaker than
    ``full``, a warning to show on the terminal and in every report."""
    level = jail.level()
    facts = {"level": level}
    if level != "full":
        reachable = all(jail.world_reachable(p) for p in (reveal or _revealed()))
        uid_note = ("that cannot read the reference solutions or write the kit" if reachable else
                    "only if it could read the interpreter, which it cannot here (it lives "
                    "under a private directory such as /root), so it runs as root without "
                    "capabilities and CAN write the kit; install Python where every user can "
                    "read it")
        facts["warning"] = ISOLATION_WARNINGS[level].format(uid_note=uid_note)
    return facts


_warned: set[str] = set()


def _announce(facts: dict) -> None:
    warning = facts.get("warning")
    if warning and warning not in _warned:
        _warned.add(warning)
        print(f"grader: {warning}", file=sys.stderr)


OUTSIDE_GRACE_S = 10.0  # a test's setup (the submission's import), teardown and canaries
# In the work directory of the exercises graded in one process with the submission: the named
# pipe their child waits on before its first test (``grader.pytest_plugin.wait_for_word``).
START_WORD = "start-word"
MAX_RESTARTS = 2  # fresh children after tests that overran: then the rest are not run
# How long a child that sent its "finished" record may take to exit (pytest's summary, closing
# its executors) before it is killed.
AFTER_FINISHED_S = 10.0
# The report pipe's size: a child's record lines (the whole catalog's collected tests are 700 KB)
# then wait for no reader (Linux lets any process make a pipe this large: pipe-max-size).
REPORT_PIPE_BYTES = 1 << 20
OUTPUT_END_WAIT_S = 2.0  # for the output that came before "finished" to be read


def outside_limit(test_s: float) -> float:
    """How long the grader lets a test run (setup to report) before it stops the child itself;
    0: no limit. Generous: the child's own limit (``grader._timelimit``) normally ends it first."""
    return test_s + OUTSIDE_GRACE_S if test_s else 0.0


def _session(kit: Path, exercises: list[catalog.Exercise], test_s: float) -> list[str]:
    """The pytest command line that runs ``exercises``' tests staged in ``kit``, each within
    ``test_s`` seconds (0: no limit), submission aside."""
    # Plugins are named, not discovered (PYTEST_DISABLE_PLUGIN_AUTOLOAD): whatever else is
    # installed (anyio's plugin alone imports for 2 s) stays out of the grading child. Nor
    # does it need pytest's unraisable-exception hook, whose full gc at exit costs ~0.7 s.
    # No log capture, nor pytest's warning capture, which wraps every test in its own filters
    # (65 us a test; the kit's tests only ever ignore warnings, and a warning never decides a
    # verdict), nor pytest-timeout: the plugin times every exercise test itself (grader._timelimit).
    # pytest's faulthandler would write to a copy of the stderr it found at start, which in a
    # fork server's child is the server's: the plugin turns it on, on whatever fd 2 is. No kit
    # test is a unittest case or takes pytest's subtests: their hooks ran on every report of
    # every test all the same (about 0.05 ms a test, measured in a whole-catalog child). Nor
    # pytest's terminal: the grader keeps a child's output only up to the plugin's end mark,
    # which came before pytest's summary; its progress letters cost a report hook's work and a
    # write after every test (a whole-catalog child: 40 ms), and read only as noise.
    return ["-p", "no:terminal", "-p", "no:cacheprovider", "-p", "no:unraisableexception",
            "-p", "no:logging", "-p", "no:warnings", "-p", "no:faulthandler", "-p", "no:unittest",
            "-p", "no:subtests", "-p", "grader.pytest_plugin",
            "-p", "_hypothesis_pytestplugin", "--rootdir", str(kit),
            "-c", str(kit / "pyproject.toml"), "--grading", "--test-timeout", str(test_s),
            *(f"--warm-import={m}" for m in preload_modules(exercises)),
            *(str(kit / p.relative_to(catalog.KIT_ROOT)) for p in _test_sources(exercises))]


def run_tests(submission: Path, exercises: list[catalog.Exercise], limits: Limits, *,
              hide: list[Path] = (), fork: bool = False, stop_at_first_failure: bool = False,
              select: Mapping[str, Collection[str]] | None = None, until_failed: FailureGroups | None = None,
              shrink: bool = True, on_start: Callable[[], None] = lambda: None) -> ChildRun:
    """Stage ``submission`` and run the exercises' public and hidden tests in a jailed child.

    A test that outlives ``outside_limit`` is stopped from outside and fails with a timeout;
    the tests after it run in a fresh child (at most ``MAX_RESTARTS`` times).
    ``fork``: fork the child from a shared fork server that has already imported the frameworks
    (``grader.engine.forkserver``) instead of starting a fresh interpreter.
    ``stop_at_first_failure``: end the run at the first test that does not pass (pytest's
    ``--exitfirst``); the tests after it never report.
    ``select``: exercise id -> the only tests of it to run (function names, or ``name[case]``);
    the other tests of a named exercise are deselected and never reported.
    ``until_failed``: exercise id -> groups of its tests; a test every group naming which already
    has a failing test is left out and never reports (``grader._until_failed``).
    ``shrink``: a failing hypothesis test shrinks its example to the simplest (what a learner
    reads); False reports the first failing example found, for a run that needs only which
    tests fail (``grader.feedback.report_first_failing_examples``).
    ``on_start``: called once, when the first child has started: work of the caller's meant to run
    beside the tests starts there (before, it would only take the GIL from the child's start).
    """
    policy = _policy(limits, list(hide))
    level = isolation(policy["reveal"])
    _announce(level)
    if level["level"] == "container":
        jail.restrict_for_container(policy["hide"])
    workdirs: list[tempfile.TemporaryDirectory] = []  # one per child's group (``_run_children``)
    ends: list[Callable[[], None]] = []  # each child's end, waited for (see ``_supervise``)

    def new_workdir() -> Path:
        workdirs.append(tempfile.TemporaryDirectory(prefix="drills-"))
        return Path(workdirs[-1].name)

    try:
        return _run_children(submission, exercises, limits, new_workdir, policy, level, fork,
                             stop_at_first_failure, select, until_failed, shrink, ends, on_start)
    finally:
        _end(ends, workdirs)


def _run_children(submission: Path, exercises: list[catalog.Exercise], limits: Limits,
                  new_workdir: Callable[[], Path],
                  policy: dict, level: dict, fork: bool, stop_at_first_failure: bool,
                  select: Mapping[str, Collection[str]] | None, until_failed: FailureGroups | None,
                  shrink: bool, ends: list[Callable[[], None]],
                  on_start: Callable[[], None]) -> ChildRun:
    """``run_tests`` in work directories made by ``new_workdir`` (one per group of
    ``_apart_first``): its children's ends go to ``ends``.

    The exercises graded in the tests' own process with a module staged, and the others (graded
    apart, or absent), run in children of their own: code submitted for one of the first kind
    runs beside the key its child signs with, so what each child reports counts for its own
    exercises alone (``_confined``), and that child runs no test before the other has ended. It starts beside
    the other and waits, collected, for the word (``START_WORD``): its start (seconds of imports
    for a fresh interpreter) is not added to the submission's time. Each has a work directory of
    its own, the only one its jail lets it enter."""
    work = new_workdir()
    impl, kit, ignored = stage(submission, exercises, work, with_tests=False)
    groups = _apart_first(exercises, impl)  # by what was staged for the child
    # The tests a fork server collected once (see ``forking_kit``): one copy for every child of
    # the submission, the one its jail reveals (a test file changed meanwhile makes a new copy).
    forked_tests = forking_kit() if fork else None
    if forked_tests is not None:
        policy["reveal"] = [*policy["reveal"], str(forked_tests)]
    places = []  # where each group's children run: (submission, tests, work directory)
    for n, group in enumerate(groups):
        if n:
            work = new_workdir()
            impl, kit, _ = stage(submission, exercises, work, with_tests=False)
        if forked_tests is None:
            stage_tests(group, kit)
        places.append((impl, forked_tests or kit, work))
    with ThreadPoolExecutor(2) as helper:
        tree = read_tree(places[0][0])  # read now, scanned while the child runs
        scanning: list[Future] = []
        starting = threading.Lock()

        def first_child_started() -> None:
            with starting:
                if not scanning:
                    scanning.append(helper.submit(scan_sources, tree))
                    on_start()

        def grade(n: int, start_word: str | None = None) -> ChildRun:
            ids = {ex.id for ex in groups[n]}
            submitted, tests, work = places[n]
            # The wall clock counts the children's time, not a server's start-up.
            return _run_group(groups[n], submitted, tests, _env(work, tests), work, policy, limits,
                              limits.wall_s, exercises if fork else None, stop_at_first_failure,
                              {k: v for k, v in (select or {}).items() if k in ids},
                              {k: v for k, v in (until_failed or {}).items() if k in ids}, shrink, ends,
                              first_child_started, start_word)

        if len(groups) == 1:
            parts = [grade(0)]
        else:
            word = places[1][2] / START_WORD
            os.mkfifo(word, 0o644)
            # Held open until the second group is done, so that its child, opening the pipe to
            # read, never waits for a writer, and the word stays in the pipe until it reads it.
            held = os.open(word, os.O_RDWR)
            try:
                second = helper.submit(grade, 1, str(word))
                try:
                    first = grade(0)
                finally:
                    os.write(held, b"g")  # the word: the first child has ended
                parts = [first, second.result()]
            finally:
                os.close(held)
        run = _joined(parts)
        run.ignored, run.findings, run.isolation = ignored, scanning[0].result(), level
        return run


def _apart_first(exercises: list[catalog.Exercise], impl: Path) -> list[list[catalog.Exercise]]:
    """``exercises`` in the groups that are graded in children of their own: those no submitted
    code of which runs in the tests' process (graded apart, or with no module staged in ``impl``:
    their tests are reported not started, unrun), then those graded in one process with their
    module (an empty group left out)."""
    beside = [ex for ex in exercises if not ex.separate_process and _staged(impl / ex.relpath)]
    groups = [[ex for ex in exercises if ex not in beside], beside]
    return [group for group in groups if group]


def _run_group(group: list[catalog.Exercise], impl: Path, kit: Path, env: dict[str, str], work: Path,
               policy: dict, limits: Limits, wall_s: float, fork_for: list[catalog.Exercise] | None,
               stop_at_first_failure: bool, select: Mapping[str, Collection[str]],
               until_failed: FailureGroups, shrink: bool, ends: list[Callable[[], None]],
               on_start: Callable[[], None], start_word: str | None) -> ChildRun:
    """The tests of ``group``: one child, and a fresh one for the tests after each that overran
    (at most ``MAX_RESTARTS``), within ``wall_s`` in all. A fork server is chosen for
    ``fork_for`` (all the submission's exercises: one server serves every group). The first
    child waits for the word on the named pipe ``start_word`` (if any) before its first test."""
    runs: list[ChildRun] = []
    left = wall_s
    done: list[str] = []  # tests reported or stopped: a fresh child deselects them
    groups = {ex_id: [sorted(g) for g in found] for ex_id, found in until_failed.items()}
    if fork_for is None:  # a forked child has the tables its server read
        env = {**env, **hypothesis_tables.staged_in(work)}
    while True:
        # What the child runs, in a file of the work directory (which the child cannot write):
        # a request to the fork server has no room for thousands of test names.
        if fork_for is not None:
            options = {"impl_root": str(impl), "exercises": [ex.id for ex in group],
                       "select": {ex_id: sorted(names) for ex_id, names in select.items()},
                       "deselect": done, "exitfirst": stop_at_first_failure,
                       "until_failed": groups, "shrink": shrink, "start_word": start_word,
                       "test_timeout": limits.test_s}
            (work / forkserver.CHILD_OPTIONS).write_text(json.dumps(options), encoding="utf-8")
            args = []
        else:  # a pytest command line, the tests chosen in an @file (one argument a line)
            chosen = [f"--select-test={ex_id}::{name}" for ex_id, names in select.items() for name in names]
            if groups:
                chosen.append(f"--until-failed={json.dumps(groups)}")
            if not shrink:
                chosen.append("--no-shrink")
            (work / "tests.args").write_text("".join(
                f"{a}\n" for a in [*chosen, *(f"--deselect={n}" for n in done)]), encoding="utf-8")
            args = [*_session(kit, group, limits.test_s), "--impl-root", str(impl),
                    "--report-fd", "{report_fd}", "--report-key-fd", "{key_fd}",
                    *(["--start-word", start_word] if start_word is not None else []),
                    *(["--exitfirst"] if stop_at_first_failure else []), f"@{work / 'tests.args'}"]
        run, end = _run_child(args, env, work, policy, limits, left, fork_for, on_start)
        start_word = None  # a fresh child after a test overran starts at once
        ends.append(end)
        runs.append(_confined(run, group))
        left -= run.ran_s
        done += [r["nodeid"] for r in _records.of(run.records, Event.RESULT)]
        if run.killed_for != "test" or len(runs) > MAX_RESTARTS or left <= 0:
            return _merge(runs)


def _exercise_of_node(nodeid: object) -> catalog.Exercise | None:
    """The exercise whose test file a test's node id names (relative to the kit's root, as
    every staged copy of the kit lays its files out)."""
    return _exercise_of_test_file(nodeid.partition("::")[0]) if isinstance(nodeid, str) else None


@functools.lru_cache(maxsize=1024)  # asked for every record: a whole catalog's are thousands
def _exercise_of_test_file(relpath: str) -> catalog.Exercise | None:
    return catalog.exercise_for_test_file(catalog.KIT_ROOT / relpath)


def _confined(run: ChildRun, group: list[catalog.Exercise]) -> ChildRun:
    """``run`` (one child's) with only what it may say about ``group``'s exercises: a test's
    records (collected, started, its result) where its node id names one of their test files and
    no other exercise, tampering where it names one of them; and the tests it collected only
    before its first test started, before any submitted code ran (so that a test it signs it
    collected later, of whatever points, is none). Whatever a child signs, it speaks for nothing else."""
    ids = {ex.id for ex in group}
    kept: list[dict] = []
    testing = False
    for record in run.records:
        event = record.get("event")
        if event in (Event.COLLECTED, Event.STARTED, Event.RESULT):
            ex = _exercise_of_node(record.get("nodeid"))
            ours = ex is not None and ex.id in ids and record.get("exercise") in (None, ex.id)
            ours = ours and not (event == Event.COLLECTED and testing)
            testing = testing or event == Event.STARTED
        else:
            ours = record.get("exercise") in ids if event == Event.TAMPER else event in (Event.SANDBOX, Event.FINISHED)
        if ours:
            kept.append(record)
    run.records = kept
    return run


def _joined(parts: list[ChildRun]) -> ChildRun:
    """One run out of the groups' (``_apart_first``): every record, the first group's sandbox
    facts first; finished only when every group finished; the first group's that did not finish
    or was killed gives the exit code and the reason."""
    if len(parts) == 1:
        return parts[0]
    unfinished = [p for p in parts if p.killed_for or not _records.of(p.records, Event.FINISHED)]
    ending = unfinished[0] if unfinished else parts[-1]
    records = [r for p in parts for r in p.records if r.get("event") != Event.FINISHED]
    if not unfinished:
        records += _records.of(parts[-1].records, Event.FINISHED)
    output = "\n[the exercises graded in one process with the submission]\n".join(p.output for p in parts)
    return ChildRun(records, ending.exit_code, output, ending.killed_for,
                    forged=sum(p.forged for p in parts), ran_s=max(p.ran_s for p in parts))  # they start together


# Inside ``ending_in_background``: how many callers let children end in the background, and
# the threads waiting for them.
_background = {"callers": 0, "threads": []}
_background_lock = threading.Lock()


@contextlib.contextmanager
def ending_in_background():
    """Inside: a grading run returns as soon as its last child has reported its end; waiting for
    the children's processes to go, releasing their uids and removing the work directory happen
    in a thread (a batch grades its next submission meanwhile). On leaving, all of that is done."""
    with _background_lock:
        _background["callers"] += 1
    try:
        yield
    finally:
        with _background_lock:
            _background["callers"] -= 1
            threads, _background["threads"] = _background["threads"], []
        for thread in threads:
            thread.join()


def _end(ends: list[Callable[[], None]], workdirs: list[tempfile.TemporaryDirectory]) -> None:
    """Wait for the children's ends, then remove their work directory: now, or in the background
    inside ``ending_in_background``."""
    def end() -> None:
        for child_end in ends:
            child_end()
        for workdir in workdirs:
            workdir.cleanup()

    with _background_lock:
        if _background["callers"]:
            thread = threading.Thread(target=end, name="drills-child-end", daemon=True)
            _background["threads"].append(thread)
            thread.start()
            return
    end()


def _run_child(args: list[str], env: dict[str, str], work: Path, policy: dict, limits: Limits,
               wall_s: float, fork_for: list[catalog.Exercise] | None,
               on_start: Callable[[], None]) -> tuple[ChildRun, Callable[[], None]]:
    """One grading child: started fresh, or forked from the fork server for ``fork_for``, with
    ``on_start()`` called once it is. Returns its run and the function that waits for its end and
    releases its uid (``_supervise``)."""
    key = _records.new_key()
    report_r, report_w = os.pipe()
    with contextlib.suppress(OSError):  # room for a whole catalog's collected tests: the child goes on
        fcntl.fcntl(report_w, fcntl.F_SETPIPE_SZ, REPORT_PIPE_BYTES)
    key_r = _records.key_pipe(key)
    if fork_for is not None:
        # The server accepts work directories in the temporary directory the grader stages in,
        # and reads the same kit as its children. It collects the tests of every exercise its
        # preloaded frameworks serve, and each request names its child's jail and limits, so that
        # one server serves any selection of them under any limits.
        kit = Path(env["DRILLS_KIT_ROOT"])
        modules = server_modules(fork_for)
        served = [ex for ex in catalog.load_catalog().values() if set(preload_modules([ex])) <= set(modules)]
        server_env = {**_base_env(), "TMPDIR": tempfile.gettempdir(), "DRILLS_KIT_ROOT": str(kit),
                      "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **hypothesis_tables.for_server()}
        server = forkserver.server_for(modules, server_env, _session(kit, served, 0.0))

        def start():
            return server.spawn(env, work, policy, report_w, key_r)
    else:
        cmd = [sys.executable, "-m", "grader.engine.jail", json.dumps({**policy, "workdir": str(work)}),
               "--", sys.executable, "-m", "pytest",
               *(a.format(report_fd=report_w, key_fd=key_r) for a in args)]

        def start():
            return subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                env=env, cwd=work / "rw" / "cwd", pass_fds=(report_w, key_r), start_new_session=True)

    def start_and_say_so():
        child = start()
        on_start()
        return child

    run, wait_for_end = _supervise(start_and_say_so, (report_w, key_r), report_r, key, limits, wall_s)
    uid = _records.first(run.records, Event.SANDBOX).get("uid")

    def end() -> None:
        wait_for_end()
        if isinstance(uid, int):
            jail.release(uid)

    return run, end


def _merge(runs: list[ChildRun]) -> ChildRun:
    """One run out of a child and the fresh ones started after tests it overran: every record
    once (collection and sandbox facts from the first), the last child's ending."""
    if len(runs) == 1:
        return runs[0]
    first, last = runs[0], runs[-1]
    once = (Event.COLLECTED, Event.SANDBOX)
    merged = [r for r in first.records if r.get("event") in once]
    for run in runs:
        merged += [r for r in run.records if r.get("event") not in (*once, Event.FINISHED)]
    merged += _records.of(last.records, Event.FINISHED)
    output = "\n[a fresh child after a test overran]\n".join(r.output for r in runs)
    return ChildRun(merged, last.exit_code, output, last.killed_for,
                    forged=sum(r.forged for r in runs), ran_s=sum(r.ran_s for r in runs))


def _supervise(start, pass_fds: tuple[int, ...], report_r: int, key: bytes,
               limits: Limits, wall_s: float) -> tuple[ChildRun, Callable[[], None]]:
    """Start the child (``start()`` returns a ``Popen``-like object), read its output and
    records, and kill its process group after ``wall_s`` seconds or when a test runs past
    ``outside_limit`` (it then gets a failed result saying so). Returns once the child has
    ended, or has sent its ``finished`` record (it has nothing more to report and is left to exit
    by itself, killed after ``AFTER_FINISHED_S``), with the function that waits for its end."""
    records: list[dict] = []
    forged = 0
    head, tail = bytearray(), bytearray()
    killed_for = ""
    # The test now running (from its "started" record to its result) and when the last record came.
    running: dict = {"nodeid": None, "since": None, "watch": False, "finished": None}
    reported = threading.Event()  # the "finished" record came, or the report pipe closed
    output_ended = threading.Event()  # the output came up to ``_records.OUTPUT_END``, or closed
    try:
        proc = start()
    finally:
        for fd in pass_fds:
            os.close(fd)
    _RUNNING.add(proc)
    started = time.monotonic()
    deadline = started + wall_s

    def kill(reason: str) -> None:
        nonlocal killed_for
        killed_for = killed_for or reason
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def read_output() -> None:
        total = 0
        held = b""  # the last bytes, kept back until it is known that the end mark does not begin there

        def keep(data: bytes) -> None:
            if len(head) < 8192:
                head.extend(data[: 8192 - len(head)])
            tail.extend(data)
            del tail[:-16384]

        for chunk in iter(lambda: proc.stdout.read1(65536), b""):
            total += len(chunk)
            if total > limits.output_bytes:
                kill("output")
            if output_ended.is_set():
                continue  # read to the end, kept no longer
            data = held + chunk
            end = data.find(_records.OUTPUT_END)
            if end >= 0:
                keep(data[:end])
                output_ended.set()
            else:
                cut = max(0, len(data) - len(_records.OUTPUT_END) + 1)
                keep(data[:cut])
                held = data[cut:]
        if not output_ended.is_set():
            keep(held)
        output_ended.set()

    def read_records() -> None:
        nonlocal forged
        size = 0
        try:
            with os.fdopen(report_r, "rb") as stream:
                for line in stream:
                    size += len(line)
                    if size > 50_000_000:
                        kill("report")
                        break
                    found = _records.verify(key, line.decode("utf-8", "replace"))
                    if found is None:
                        forged += 1
                        continue
                    records.extend(found)
                    running["since"] = time.monotonic()
                    for record in found:
                        event = record.get("event")
                        if event == Event.STARTED:
                            running["nodeid"], running["watch"] = record.get("nodeid"), True
                        elif event == Event.RESULT and record.get("nodeid") == running["nodeid"]:
                            running["nodeid"] = None
                        elif event == Event.FINISHED:
                            running["watch"], running["finished"] = False, record.get("exitstatus")
                            reported.set()
        finally:
            reported.set()

    readers = [threading.Thread(target=f, daemon=True) for f in (read_output, read_records)]
    for t in readers:
        t.start()
    per_test = outside_limit(limits.test_s)
    overran = None
    code: int | None = None
    while True:
        reported.wait(timeout=0.25)
        if running["finished"] is not None:  # the session is over: what it still does is not graded
            code = running["finished"]
            output_ended.wait(timeout=OUTPUT_END_WAIT_S)  # written before the record: on its way
            break
        try:
            # Once the report pipe closed the child is ending; before, this only looks.
            code = proc.wait(timeout=0.25 if reported.is_set() else 0)
            break
        except subprocess.TimeoutExpired:
            now = time.monotonic()
            if now >= deadline:
                kill("time")
            elif per_test and running["watch"] and now - running["since"] > per_test:
                overran = running["nodeid"]
                kill("test")
            else:
                continue
            proc.wait()
            code = None
            break
        except ConnectionError:  # the fork server died: the child went with it
            kill("")
            code = None
            break
    ran_s = time.monotonic() - started
    if running["finished"] is None:
        kill("")  # grandchildren may linger and hold the pipes open
        for t in readers:
            t.join(timeout=10)
    # What came so far: lines after "finished" are not waited for, and the reader may still be
    # adding them to ``records`` (a new name: its closure would follow a rebound one).
    taken, forged_so_far = list(records), forged
    if killed_for:
        code = None
    if overran:
        exercise = next((r.get("exercise") for r in _records.of(taken, Event.COLLECTED)
                         if r.get("nodeid") == overran), None)
        taken.append({"event": Event.RESULT, "nodeid": overran, "exercise": exercise,
                        "status": "failed", "not_started": False, "duration": per_test,
                        "message": f"Timeout: the test ran longer than {limits.test_s:g} s and "
                                   f"was stopped by the grader after {per_test:g} s (it outlived "
                                   "or cancelled its own time limit)"})
    output = head.decode("utf-8", "replace")
    if len(tail) and not bytes(head).endswith(bytes(tail[-64:])):
        output += "\n[...]\n" + tail.decode("utf-8", "replace")

    def wait_for_end() -> None:
        # A child that reported its end exits by itself: killed, its PID namespace's first process
        # would outlive the jail process waiting for it, and linger as the host's zombie.
        try:
            proc.wait(timeout=AFTER_FINISHED_S if running["finished"] is not None else None)
        except subprocess.TimeoutExpired:
            kill("")
        with contextlib.suppress(ConnectionError, OSError):
            proc.wait()
        kill("")  # grandchildren may linger and hold the pipes open
        for t in readers:
            t.join(timeout=10)
        _RUNNING.discard(proc)

    return ChildRun(taken, code, output, killed_for, forged=forged_so_far, ran_s=ran_s), wait_for_end
