"""Benchmark: where a ``grader verify`` run's time goes, grading run by grading run.

Runs ``grader.workflows.verify.verify`` (every exercise by default, as the kit's meta-test does)
and reports, per grading run (the reference, the stub, each round of wrong solutions), its wall
time and the time spent inside its tests (pytest's setup, call and teardown), then the whole
run's wall time and whether every exercise was sound.

    .venv/bin/python bench/bench_verify.py [--jobs 2] [--exercise ID ...] [--json FILE]

Timings on a busy machine are noisy: run it on an idle one.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from grader.workflows.verify import verify


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="grading runs at a time (the meta-test's: 2)")
    parser.add_argument("--exercise", "-e", action="append", metavar="ID",
                        help="verify only these exercises (default: all)")
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    args = parser.parse_args(argv)
    runs = []
    started = time.monotonic()

    def on_run(name, report):
        runs.append({"run": name, "exercises": len(report.exercises), "wall_s": round(report.duration_s, 2),
                     "test_time_s": round(report.test_time_s, 2), "ended_at_s": round(time.monotonic() - started, 1)})
        print(f"{runs[-1]['ended_at_s']:>7.1f} s  {name:<10} {len(report.exercises):>3} exercises  "
              f"wall {report.duration_s:>6.1f} s  in tests {report.test_time_s:>6.1f} s", flush=True)

    verdicts, _ = verify(args.exercise, jobs=args.jobs, on_run=on_run)
    wall = time.monotonic() - started
    unsound = [v.id for v in verdicts if v.problems()]
    total = {"jobs": args.jobs, "exercises": len(verdicts), "wall_s": round(wall, 1),
             "grading_wall_s": round(sum(r["wall_s"] for r in runs), 1),
             "test_time_s": round(sum(r["test_time_s"] for r in runs), 1), "unsound": unsound, "runs": runs}
    print(f"verify of {len(verdicts)} exercises, {args.jobs} jobs: {wall:.1f} s wall; grading runs "
          f"{total['grading_wall_s']} s, inside the tests {total['test_time_s']} s; unsound: {unsound or 'none'}")
    if args.json:
        Path(args.json).write_text(json.dumps(total, indent=2))
    return 1 if unsound else 0


if __name__ == "__main__":
    sys.exit(main())
