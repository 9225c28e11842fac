"""The per-exercise table of ``grader mutants --json`` runs, in Markdown: one run, or a before and
an after run side by side.

    python bench/mutants_table.py bench/mutants-before.json bench/mutants.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _rows(path: str) -> dict[str, dict]:
    return {row["exercise"]: row for row in json.loads(Path(path).read_text(encoding="utf-8"))}


def _cells(row: dict | None) -> list[str]:
    if row is None:
        return ["-"] * 5
    score = "-" if row["score"] is None else f"{100 * row['score']:.0f}%"
    return [str(len(row["killed"]) + len(row["timed_out"])), str(len(row["survived"])),
            str(len(row["equivalent"])), str(row["generated"]), score]


def table(paths: list[str]) -> str:
    runs = [_rows(p) for p in paths]
    heads = ["killed", "survived", "equivalent", "mutants", "score"]
    names = ["before", "after"] if len(runs) == 2 else [""]
    header = ["exercise"] + [f"{h} ({n})" if n else h for n in names for h in heads]
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    for exercise in dict.fromkeys(e for run in runs for e in run):
        lines.append("| " + " | ".join([exercise] + [c for run in runs for c in _cells(run.get(exercise))]) + " |")
    totals = []
    for run in runs:
        detected = sum(len(r["killed"]) + len(r["timed_out"]) for r in run.values())
        survived = sum(len(r["survived"]) for r in run.values())
        totals += [str(detected), str(survived), str(sum(len(r["equivalent"]) for r in run.values())),
                   str(sum(r["generated"] for r in run.values())),
                   f"{100 * detected / (detected + survived):.1f}%" if detected + survived else "-"]
    lines.append("| **all** | " + " | ".join(totals) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if not 1 <= len(sys.argv) - 1 <= 2:
        sys.exit("usage: python bench/mutants_table.py RUN.json [AFTER.json]")
    sys.stdout.write(table(sys.argv[1:]))
