"""Benchmark: the cost of grading with the submission in a process of its own (``grader.remote``).

Grades the reference solutions of the exercises the catalog marks ``separate_process`` twice per
round: in this kit (tests in the grading child, the submission in its executor) and in a copy of
the kit whose catalog marks none (the submission imported by the tests' own process). Reports,
per exercise, the median time inside the tests (pytest's setup/call/teardown durations) of each
and their ratio.

    .venv/bin/python bench/bench_separate.py [--rounds 3] [--json FILE] [ID ...]

IDs: only these of the exercises marked (default: every one).

Timings on a busy machine are noisy: run it on an idle one.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from grader import catalog

KIT = catalog.KIT_ROOT
_RUN = """
import json, sys
from grader import catalog
from grader.engine.scoring import score_submission
catalog.use_kit(sys.argv[1])
report = score_submission(catalog.KIT_ROOT / "solutions", [sys.argv[2]])
print(json.dumps({"test_time_s": report.test_time_s, "score": report.score, "max": report.max_score}))
"""


def _grade(kit: Path, exercise_id: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _RUN, str(kit), exercise_id], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("ids", nargs="*", metavar="ID", help="exercises marked separate_process (default: all)")
    args = parser.parse_args()
    ids = [ex.id for ex in catalog.load_catalog().values() if ex.separate_process]
    if unmarked := sorted(set(args.ids) - set(ids)):
        parser.error(f"not marked separate_process in the catalog: {', '.join(unmarked)}")
    ids = [i for i in ids if i in args.ids] if args.ids else ids
    rows = []
    with tempfile.TemporaryDirectory(prefix="drills-bench-") as tmp:
        together = Path(tmp) / "kit"
        shutil.copytree(KIT, together, ignore=shutil.ignore_patterns(".venv", ".git", "*.egg-info", "__pycache__"))
        text = (together / catalog.CATALOG_NAME).read_text()
        (together / catalog.CATALOG_NAME).write_text(re.sub(r"(?m)^separate_process = true\n", "", text))
        for exercise_id in ids:
            apart, same = [], []
            for _ in range(args.rounds):
                a, s = _grade(KIT, exercise_id), _grade(together, exercise_id)
                if a["score"] != a["max"] or s["score"] != s["max"]:
                    raise SystemExit(f"{exercise_id}: the reference lost points ({a}, {s})")
                apart.append(a["test_time_s"])
                same.append(s["test_time_s"])
            row = {"exercise": exercise_id, "same_process_s": round(statistics.median(same), 3),
                   "separate_process_s": round(statistics.median(apart), 3)}
            row["ratio"] = round(row["separate_process_s"] / row["same_process_s"], 2)
            rows.append(row)
            print(f"{exercise_id:40} {row['same_process_s']:8.2f} s {row['separate_process_s']:8.2f} s"
                  f"  x{row['ratio']}", flush=True)
    total_same = sum(r["same_process_s"] for r in rows)
    total_apart = sum(r["separate_process_s"] for r in rows)
    summary = {"rounds": args.rounds, "exercises": rows, "total_same_process_s": round(total_same, 3),
               "total_separate_process_s": round(total_apart, 3),
               "ratio": round(total_apart / total_same, 2) if total_same else None}
    print(f"{'all':40} {total_same:8.2f} s {total_apart:8.2f} s  x{summary['ratio']}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
