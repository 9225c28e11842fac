"""Benchmark: per-submission overhead of ``grader batch``, fork server vs a fresh interpreter.

Grades N copies (default 20) of the bundled example submission with ``grader.workflows.batch.run_batch``
once per mode and reports, per submission, the wall time of its grading run, the time spent inside
the tests themselves (pytest's setup/call/teardown durations), and the difference: the overhead
(staging, starting or forking the child, imports, collection, reporting).

    .venv/bin/python bench/bench_batch.py [--copies 20] [--jobs 1] [--exercise ID ...] [--references]

``--references``: the copies answer every graded exercise with its reference solution, so every
test runs (the example answers 7 exercises and leaves the other modules out).

Results go to stdout as a table and, with ``--json FILE``, as JSON. Timings on a busy machine are
noisy: run it on an idle one.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from grader import catalog
from grader.workflows.batch import run_batch

EXAMPLE = catalog.KIT_ROOT / "examples" / "submission"


def _copy_references(exercise_ids: list[str] | None, to: Path) -> None:
    for ex in catalog.select(exercise_ids):
        (to / ex.relpath).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ex.reference, to / ex.relpath)


def bench(mode: str, copies: int, jobs: int, exercise_ids: list[str] | None, references: bool = False) -> dict:
    """Grade ``copies`` copies of the example (or of the references) in one batch; return the
    timings of ``mode``."""
    with tempfile.TemporaryDirectory(prefix="drills-bench-") as tmp:
        folder, out = Path(tmp) / "submissions", Path(tmp) / "out"
        for i in range(copies):
            if references:
                _copy_references(exercise_ids, folder / f"student{i:04d}")
            else:
                shutil.copytree(EXAMPLE, folder / f"student{i:04d}")
        started = time.monotonic()
        run_batch(folder, out, exercise_ids=exercise_ids, jobs=jobs, fork=(mode == "forkserver"),
                  log=lambda m: None)
        wall = time.monotonic() - started
        results = [json.loads(p.read_text()) for p in sorted((out / "results").glob("*.json"))]
    durations = [r["duration_s"] for r in results]
    overheads = [r["duration_s"] - r["test_time_s"] for r in results]
    scores = {f"{r['score']:g}/{r['max_score']:g}" for r in results}
    return {"mode": mode, "submission": "references" if references else "example", "copies": copies,
            "jobs": jobs, "batch_wall_s": round(wall, 2),
            "per_submission_s": round(statistics.mean(durations), 3),
            "overhead_mean_s": round(statistics.mean(overheads), 3),
            "overhead_median_s": round(statistics.median(overheads), 3),
            "overhead_first_s": round(overheads[0], 3),
            # Whether overhead grows along a batch (copies are graded in name order with one job).
            "overhead_first10_median_s": round(statistics.median(overheads[:10]), 3),
            "overhead_last10_median_s": round(statistics.median(overheads[-10:]), 3),
            "scores": sorted(scores)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--exercise", "-e", action="append", metavar="ID",
                        help="grade only these exercises (default: all)")
    parser.add_argument("--modes", nargs="+", default=["forkserver", "fresh"],
                        choices=["forkserver", "fresh"])
    parser.add_argument("--references", action="store_true",
                        help="grade copies of the reference solutions (every test runs), not of the example")
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    args = parser.parse_args(argv)
    rows = [bench(mode, args.copies, args.jobs, args.exercise, args.references) for mode in args.modes]
    print(f"{'mode':<11} {'copies':>6} {'jobs':>4} {'batch s':>8} {'per sub s':>9} "
          f"{'overhead mean':>13} {'median':>7} {'first':>6} {'first 10':>8} {'last 10':>7}  scores")
    for r in rows:
        print(f"{r['mode']:<11} {r['copies']:>6} {r['jobs']:>4} {r['batch_wall_s']:>8.1f} "
              f"{r['per_submission_s']:>9.2f} {r['overhead_mean_s']:>13.3f} "
              f"{r['overhead_median_s']:>7.3f} {r['overhead_first_s']:>6.2f} "
              f"{r['overhead_first10_median_s']:>8.3f} {r['overhead_last10_median_s']:>7.3f}  {r['scores']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0 if all(len(r["scores"]) == 1 for r in rows) else 1  # every copy scores the same


if __name__ == "__main__":
    sys.exit(main())
