"""Render a scoring ``Report`` for people (table) and programs (json)."""

from __future__ import annotations

import json

from grader.scoring import Report

FORMATS = ("table", "json")


def _num(x: float) -> str:
    return f"{x:g}"


def render_table(report: Report) -> str:
    """A per-exercise table, the first failing test of each exercise, and the total."""
    width = max([len(e.id) for e in report.exercises] + [8])
    lines = [f"{'exercise':<{width}}  {'score':>9}  status", f"{'-' * width}  {'-' * 9}  {'-' * 11}"]
    for ex in report.exercises:
        score = f"{_num(ex.score)}/{_num(ex.max_score)}"
        lines.append(f"{ex.id:<{width}}  {score:>9}  {ex.status}")
        if ex.status == "failing":
            first = next(t for t in ex.tests if t.status not in ("passed", "not_run"))
            message = first.message.strip().splitlines()[0] if first.message.strip() else first.status
            lines.append(f"{'':<{width}}    first failure: {first.name}: {message[:160]}")
    pct = 100 * report.score / report.max_score if report.max_score else 0.0
    lines.append(f"{'-' * width}  {'-' * 9}")
    lines.append(f"{'total':<{width}}  {_num(report.score) + '/' + _num(report.max_score):>9}  "
                 f"({pct:.1f}%) in {report.duration_s:.1f} s")
    not_run = sum(t.status == "not_run" for e in report.exercises for t in e.tests)
    if not_run:
        lines.append(f"{not_run} CUDA test(s) not run on this machine (left out of the maximum)")
    lines.extend(f"problem: {p}" for p in report.problems)
    return "\n".join(lines) + "\n"


def render_json(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2) + "\n"


def render(report: Report, fmt: str) -> str:
    """Render in ``fmt`` (one of ``FORMATS``); an unknown format raises ``ValueError``."""
    renderers = {"table": render_table, "json": render_json}
    if fmt not in renderers:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return renderers[fmt](report)
