"""Benchmark: CPU time of one forked grading child, forked where the fork server forks it (in its
collected session's test loop) or forked before pytest starts (each child configures and
collects its own session, as the fork server's children did before), for a selection of exercises.

``--mode session`` does what ``grader.engine.forkserver`` does: preload (``grader._preload.warm``),
start the pytest session and collect it, and fork each child in place of the test loop, where
``grader.pytest_plugin.start_forked_session`` narrows it to the child's tests. ``--mode
per-child`` is what the fork server did before: preload, import the test modules (a collection
whose session is thrown away), fork each child and run ``pytest.main`` in it. Children
run the grading session against ``--impl`` (the untouched stubs by default: every test runs and
fails, so the cost is mostly the kit's own, not the submission's) without a jail. Each child's
main thread adds up its CPU seconds inside the tests (pytest's setup, call and teardown of each)
and in all, from the fork to the session's end; the overhead is the difference. The parent also
reads the child's whole CPU time from ``os.wait4`` (threads and processes its tests started
included). CPU time, unlike wall time, is little disturbed by other work on the machine.

    .venv/bin/python bench/bench_child_cpu.py --mode session|per-child [--framework pytorch]
        [--exercise ID ...] [--children 3] [--impl DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
os.environ.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0", OMP_NUM_THREADS="1")

import pytest  # noqa: E402

from grader import _preload, _records, catalog  # noqa: E402
from grader.engine import sandbox  # noqa: E402

KEY = b"\0" * 32


class TestCpu:
    """In a child: adds up its main thread's CPU seconds inside each test's protocol, and writes
    that sum and the main thread's CPU seconds since the fork to ``fd`` at the session's end.
    (The process's own CPU time also counts threads and processes the tests leave running.)"""

    def __init__(self) -> None:
        self.fd: int | None = None
        self.inside = 0.0

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item):
        started = time.thread_time()
        try:
            return (yield)
        finally:
            self.inside += time.thread_time() - started

    def pytest_unconfigure(self, config) -> None:
        if self.fd is not None:
            os.write(self.fd, json.dumps([self.inside, time.thread_time()]).encode())
            os.close(self.fd)


def _pipes() -> tuple[int, int, int, int, int]:
    """(report read end, report write end, key read end, test CPU read end, its write end)."""
    report_r, report_w = os.pipe()
    key_r, key_w = os.pipe()
    os.write(key_w, KEY.hex().encode())
    os.close(key_w)
    return report_r, report_w, key_r, *os.pipe()


def _quiet() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)


def _finish(pid: int, pipes: tuple[int, ...]) -> dict:
    """Wait for the child ``pid``; its CPU seconds, those inside its tests, and its test count."""
    report_r, report_w, key_r, cpu_r, cpu_w = pipes
    for fd in (report_w, key_r, cpu_w):
        os.close(fd)
    with os.fdopen(report_r, "rb") as stream:
        records = _records.verify_all(KEY, (line.decode() for line in stream))
    with os.fdopen(cpu_r, "rb") as stream:
        test_s, main_thread_s = json.loads(stream.read() or "[NaN, NaN]")
    _, status, usage = os.wait4(pid, 0)
    tests = len(_records.of(records, _records.Event.RESULT))
    if not tests:  # a child that broke before its tests: its numbers would measure nothing
        raise SystemExit(f"a child ended (wait status {status}) before reporting any test")
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "main_thread_s": main_thread_s, "test_s": test_s,
            "tests": tests}


def per_child(session: list[str], impl: str, children: int) -> list[dict]:
    saved = os.dup(1), os.dup(2)
    _quiet()
    pytest.main([*session, "--collect-only"])  # the test modules imported once, as before
    for fd, old in zip((1, 2), saved):
        os.dup2(old, fd)
    runs = []
    for _ in range(children):
        pipes = report_r, report_w, key_r, _, cpu_w = _pipes()
        pid = os.fork()
        if pid == 0:
            _quiet()
            clock = TestCpu()
            clock.fd = cpu_w
            os._exit(int(pytest.main([*session, "--impl-root", impl, "--report-fd", str(report_w),
                                      "--report-key-fd", str(key_r)], plugins=[clock])))
        runs.append(_finish(pid, pipes))
    return runs


def in_session(session: list[str], impl: str, children: int, exercises: list[str]) -> list[dict]:
    from grader import pytest_plugin

    runs: list[dict] = []
    clock = TestCpu()

    class ForkInTheLoop:
        @pytest.hookimpl(tryfirst=True)
        def pytest_runtestloop(self, session: pytest.Session):
            capture = session.config.pluginmanager.get_plugin("capturemanager")
            capture.stop_global_capturing()
            for _ in range(children):
                pipes = report_r, report_w, key_r, _, cpu_w = _pipes()
                pid = os.fork()
                if pid == 0:
                    clock.fd = cpu_w
                    capture.start_global_capturing()
                    capture.suspend_global_capture()
                    pytest_plugin.start_forked_session(
                        session, impl_root=impl, report_fd=report_w, key_fd=key_r, exercises=exercises,
                        select={}, deselect=[], exitfirst=False, until_failed={}, shrink=True)
                    return None
                runs.append(_finish(pid, pipes))
            return True

    saved = os.dup(1), os.dup(2)
    _quiet()  # the session's own output
    pid = os.getpid()
    code = pytest.main(session, plugins=[ForkInTheLoop(), clock])
    if os.getpid() != pid:
        os._exit(int(code))
    for fd, old in zip((1, 2), saved):
        os.dup2(old, fd)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["session", "per-child"], required=True)
    parser.add_argument("--framework", choices=["pytorch", "tensorflow", "all"], default="pytorch")
    parser.add_argument("--exercise", action="append", metavar="ID",
                        help="only these exercises (default: every one of --framework)")
    parser.add_argument("--children", type=int, default=3)
    parser.add_argument("--impl", default=str(catalog.KIT_ROOT / "exercises"))
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    exercises = ([catalog.get_exercise(i) for i in args.exercise] if args.exercise else
                 [ex for ex in catalog.load_catalog().values()
                  if args.framework == "all" or ex.framework == args.framework])
    session = sandbox._session(catalog.KIT_ROOT, exercises, sandbox.Limits())
    _preload.warm(sandbox.preload_modules(exercises))
    started = time.monotonic()
    runs = (in_session(session, args.impl, args.children, [ex.id for ex in exercises])
            if args.mode == "session" else per_child(session, args.impl, args.children))
    median = {k: round(statistics.median(r[k] for r in runs), 3) for k in ("cpu_s", "main_thread_s", "test_s")}
    result = {"mode": args.mode, "exercises": len(exercises), "impl": args.impl,
              "tests": runs[0]["tests"], "child_cpu_s": [round(r["cpu_s"], 3) for r in runs],
              "child_cpu_median_s": median["cpu_s"], "main_thread_median_s": median["main_thread_s"],
              "test_median_s": median["test_s"],
              "overhead_median_s": round(median["main_thread_s"] - median["test_s"], 3),
              "wall_s": round(time.monotonic() - started, 1), "load_average": os.getloadavg()[0]}
    print(json.dumps(result))
    if args.json:
        with open(args.json, "a") as out:
            out.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
