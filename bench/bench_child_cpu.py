"""Benchmark: CPU time of one forked grading child, with and without the fork server's
collect-once (``grader._preload.collect``), for a selection of exercises.

It does what a fork server does (``grader._preload.warm``, then optionally ``collect``), forks
children that run the grading session against ``--impl`` (the untouched stubs by default: every
test runs and fails, so the cost is the kit's own, not the submission's), and reads each child's
CPU seconds (user + system) from ``os.wait4``. CPU time, unlike wall time, is little disturbed by
other work on the machine, so this measures the per-child overhead even on a busy machine.

    .venv/bin/python bench/bench_child_cpu.py [--framework pytorch] [--children 3] [--impl DIR]
        [--json FILE]
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

from grader import _preload, catalog
from grader.engine import sandbox  # noqa: E402


def _child_cpu(session: list[str], impl: str) -> tuple[float, int]:
    """Fork one grading child; return its CPU seconds and the number of records it wrote."""
    report_r, report_w = os.pipe()
    key_r, key_w = os.pipe()
    os.write(key_w, b"00" * 32)
    os.close(key_w)
    pid = os.fork()
    if pid == 0:
        os.close(report_r)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        import pytest

        code = pytest.main([*session, "--impl-root", impl, "--report-fd", str(report_w),
                            "--report-key-fd", str(key_r)])
        os._exit(int(code))
    os.close(report_w)
    os.close(key_r)
    with os.fdopen(report_r, "rb") as stream:
        records = sum(1 for _ in stream)
    _, _, usage = os.wait4(pid, 0)
    return usage.ru_utime + usage.ru_stime, records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framework", choices=["pytorch", "tensorflow", "all"], default="pytorch")
    parser.add_argument("--children", type=int, default=3)
    parser.add_argument("--impl", default=str(catalog.KIT_ROOT / "exercises"))
    parser.add_argument("--mode", choices=["collect-once", "collect-per-child"], required=True,
                        help="run each mode in its own process: a collected module stays imported")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    exercises = [ex for ex in catalog.load_catalog().values()
                 if args.framework == "all" or ex.framework == args.framework]
    session = sandbox._session(catalog.KIT_ROOT, exercises, sandbox.Limits())
    _preload.warm(sandbox.preload_modules(exercises))
    started = time.monotonic()
    if args.mode == "collect-once":
        _preload.collect(session)
    collect_s = time.monotonic() - started
    runs = [_child_cpu(session, args.impl) for _ in range(args.children)]
    result = {"mode": args.mode, "framework": args.framework, "exercises": len(exercises),
              "impl": args.impl, "server_collect_wall_s": round(collect_s, 2),
              "child_cpu_s": [round(cpu, 2) for cpu, _ in runs],
              "child_cpu_median_s": round(statistics.median(cpu for cpu, _ in runs), 2),
              "records": runs[0][1], "load_average": os.getloadavg()[0]}
    print(json.dumps(result))
    if args.json:
        with open(args.json, "a") as out:
            out.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
