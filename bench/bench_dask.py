"""Benchmark: ``grader batch`` through a Dask cluster (``--cluster local:N``) against the local
fork-server batch, on the same submissions and machine, in one run.

Each mode grades COPIES copies of the bundled example submission on one exercise (default
``pytorch.tensors.broadcasting``) with the same parallelism: ``--jobs N`` threads here, or a
LocalCluster of N single-threaded worker processes. Start-up (the fork servers' imports, the
cluster's processes) is paid once per batch, so the per-submission cost is read from the steady
state: the time between the first and the last result, over the results in between, times N.
From it, the median grading time measured inside ``grade_entry`` (``duration_s``; the first
submissions on each worker also start its fork server) is taken away: what is left per
submission is the dispatch overhead (threads here; shipping, scheduling and returning the
result through the scheduler on Dask). Then, with ``--large M``, one batch of M copies goes
through the cluster and every result is checked: M results, M gradebook rows, each written once,
each with the score of the first.

    .venv/bin/python bench/bench_dask.py [--copies 40] [--workers 2] [--large 500] [--json FILE]

Timings on a busy machine are noisy: say under what load they were taken.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from grader import catalog
from grader.engine.sandbox import Limits
from grader.workflows import batch
from grader.workflows.dask_batch import Cluster

EXAMPLE = catalog.KIT_ROOT / "examples" / "submission"


def grade(mode: str, copies: int, workers: int, exercise: str) -> dict:
    """Grade ``copies`` copies of the example in one batch, here (``local``) or on a LocalCluster
    (``dask``); return the timings and what the batch wrote."""
    arrivals: list[tuple[str, float]] = []
    update = batch._Progress.update

    def record(self, name: str, summary: str) -> None:
        arrivals.append((name, time.monotonic()))
        update(self, name, summary)

    with tempfile.TemporaryDirectory(prefix="drills-bench-dask-") as tmp:
        folder, out = Path(tmp) / "submissions", Path(tmp) / "out"
        for i in range(copies):
            shutil.copytree(EXAMPLE, folder / f"student{i:04d}")
        batch._Progress.update = record
        started = time.monotonic()
        try:
            gradebook = batch.run_batch(
                folder, out, exercise_ids=[exercise], jobs=workers, limits=Limits(wall_s=300, test_s=60),
                log=lambda m: None, cluster=Cluster(local_workers=workers) if mode == "dask" else None)
        finally:
            batch._Progress.update = update
        wall = time.monotonic() - started
        results = [json.loads(p.read_text()) for p in sorted((out / "results").glob("*.json"))]
        with open(gradebook, newline="") as handle:
            rows = list(csv.DictReader(handle))
    times = sorted(t for _, t in arrivals)
    steady = (times[-1] - times[0]) / (len(times) - 1) * workers if len(times) > 1 else float("nan")
    grading = statistics.median(r["duration_s"] for r in results)  # the first ones start servers
    names = [name for name, _ in arrivals]
    scores = sorted({f"{r['score']:g}/{r['max_score']:g}" for r in results})
    return {"mode": mode, "copies": copies, "parallel": workers, "batch_wall_s": round(wall, 1),
            "first_result_s": round(times[0] - started, 1) if times else None,
            "per_submission_steady_s": round(steady, 3), "grading_median_s": round(grading, 3),
            "dispatch_overhead_s": round(steady - grading, 3),
            "results": len(results), "gradebook_rows": len(rows),
            "written_once": len(names) == len(set(names)) == copies, "scores": scores,
            "nothing_lost": len(results) == len(rows) == copies and len(scores) == 1
                            and not any(r["problems"] for r in results)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--large", type=int, default=0, metavar="M",
                        help="then grade M copies through the cluster and check nothing is lost")
    parser.add_argument("--exercise", default="pytorch.tensors.broadcasting")
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    args = parser.parse_args(argv)
    rows = [grade(mode, args.copies, args.workers, args.exercise) for mode in ("local", "dask")]
    if args.large:
        rows.append(grade("dask", args.large, args.workers, args.exercise))
    print(f"{'mode':<6} {'copies':>6} {'par':>3} {'wall s':>7} {'1st s':>6} {'steady s':>8} "
          f"{'grading s':>9} {'dispatch s':>10} {'results':>7}  nothing lost")
    for r in rows:
        print(f"{r['mode']:<6} {r['copies']:>6} {r['parallel']:>3} {r['batch_wall_s']:>7.1f} "
              f"{r['first_result_s']:>6.1f} {r['per_submission_steady_s']:>8.3f} "
              f"{r['grading_median_s']:>9.3f} {r['dispatch_overhead_s']:>10.3f} {r['results']:>7}  "
              f"{r['nothing_lost']} {r['scores']}")
    if args.json:
        load = os.getloadavg()
        Path(args.json).write_text(json.dumps({"loadavg_at_end": [round(x, 1) for x in load],
                                               "cpus": os.cpu_count(), "runs": rows}, indent=2) + "\n")
    return 0 if all(r["nothing_lost"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
