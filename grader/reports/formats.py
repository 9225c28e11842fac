"""Render a scoring ``Report`` in the formats people already use.

- ``table``: plain text for pipes, logs and files; on a terminal, ``print_table`` draws it with
  rich (colour unless ``NO_COLOR``).
- ``json``: the kit's stable shape (``Report.to_dict``).
- ``gradescope``: Gradescope's ``results.json`` (autograder specification: top-level ``score``,
  ``execution_time``, ``output``, ``stdout_visibility``, ``tests[]`` with ``name``, ``score``,
  ``max_score``, ``status`` passed/failed, ``output``, ``visibility``); review flags go in a
  0-point test of visibility ``hidden``, which instructors see and students do not.
- ``junit``: JUnit XML (one ``testsuite`` per exercise) that CI systems read.
- ``markdown``: a summary for pull requests and ``$GITHUB_STEP_SUMMARY``.
- ``html``: a self-contained hiring report (``grader.reports.html_report``).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from grader.engine.scoring import ExerciseResult, Report, TestResult
from grader.outcomes import State, TestStatus, Visibility
from grader.reports.html_report import render_html

FORMATS = ("table", "json", "gradescope", "junit", "markdown", "html")
REVIEW_FLAGS_TEST = "Review flags (instructors only; 0 points)"
PUBLIC_ONLY_NOTE = ("Only the public tests ran here (the hidden tests are not in this repository): "
                    "this is not the final grade.")


def _num(x: float) -> str:
    return f"{x:g}"


def _first_failure(ex: ExerciseResult) -> TestResult | None:
    return next((t for t in ex.tests if t.status not in (TestStatus.PASSED, TestStatus.NOT_RUN)), None)


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""


def _total(report: Report) -> str:
    pct = 100 * report.score / report.max_score if report.max_score else 0.0
    return f"({pct:.1f}%) in {report.duration_s:.1f} s"


def _table_notes(report: Report) -> list[str]:
    """The lines after the table: tests not run, public-only runs, problems, flags, sandbox."""
    lines = []
    not_run = sum(t.status == TestStatus.NOT_RUN for e in report.exercises for t in e.tests)
    if not_run:
        lines.append(f"{not_run} CUDA test(s) not run on this machine (left out of the maximum)")
    if public_only(report):
        lines.append(PUBLIC_ONLY_NOTE)
    lines.extend(f"problem: {p}" for p in report.problems)
    lines.extend(f"flag: {f}" for f in report.flags)
    lines.extend(f"ignored: {f}" for f in report.ignored_files)
    lines.extend(f"sandbox: {w}" for w in _sandbox_warnings(report))
    return lines


def _first_failure_text(ex: ExerciseResult) -> str:
    first = _first_failure(ex) if ex.status == State.FAILING else None
    return f"{first.name}: {(_first_line(first.message) or first.status)[:160]}" if first else ""


def render_table(report: Report) -> str:
    """A per-exercise table, the first failing test of each failing exercise, and the total: the
    plain text for pipes, logs and files (``print_table`` draws it on a terminal)."""
    width = max([len(e.id) for e in report.exercises] + [8])
    lines = [f"{'exercise':<{width}}  {'score':>9}  status", f"{'-' * width}  {'-' * 9}  {'-' * 11}"]
    for ex in report.exercises:
        score = f"{_num(ex.score)}/{_num(ex.max_score)}"
        lines.append(f"{ex.id:<{width}}  {score:>9}  {ex.status}")
        first = _first_failure_text(ex)
        if first:
            lines.append(f"{'':<{width}}    first failure: {first}")
    lines.append(f"{'-' * width}  {'-' * 9}")
    lines.append(f"{'total':<{width}}  {_num(report.score) + '/' + _num(report.max_score):>9}  {_total(report)}")
    lines.extend(_table_notes(report))
    return "\n".join(lines) + "\n"


def print_table(report: Report, console) -> None:
    """The score table on a terminal (a rich ``Console``): colour by status, the first failure
    under each failing exercise, the total and the notes of ``render_table``."""
    from rich.table import Table
    from rich.text import Text

    from grader.reports.console import STATE_STYLES

    table = Table(show_edge=False, pad_edge=False, show_footer=True)
    table.add_column("exercise", footer="total", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True,
                     footer=f"{_num(report.score)}/{_num(report.max_score)}")
    table.add_column("status", footer=_total(report))
    for ex in report.exercises:
        table.add_row(ex.id, f"{_num(ex.score)}/{_num(ex.max_score)}",
                      Text(ex.status, style=STATE_STYLES.get(ex.status, "")))
        first = _first_failure_text(ex)
        if first:
            table.add_row("", "", Text(f"first failure: {first}", style="dim"))
    console.print(table)
    note_styles = {"sandbox": "bold red", "problem": "bold red", "flag": "yellow"}
    for line in _table_notes(report):
        console.print(Text(line, style=note_styles.get(line.split(":", 1)[0], "")))


def _sandbox_warnings(report: Report) -> list[str]:
    """The grader's warning when it could not isolate submitted code fully (``grader.engine.sandbox``)."""
    warning = report.sandbox.get("warning")
    return [warning] if warning else []


def render_json(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2) + "\n"


def render_gradescope(report: Report) -> str:
    return json.dumps(gradescope_results(report), indent=2) + "\n"


def gradescope_results(report: Report, notes: list[str] = ()) -> dict:
    """Gradescope's ``results.json`` of ``report``; ``notes`` head its ``output`` (what the
    autograder says it graded)."""
    tests = []
    for ex in report.exercises:
        for t in ex.tests:
            if t.status == TestStatus.NOT_RUN:
                continue
            tests.append({
                "name": f"{ex.id}: {t.name}",
                "score": t.score,
                "max_score": t.max_score,
                "status": "passed" if t.status == TestStatus.PASSED else "failed",
                "output": t.message if t.status == TestStatus.PASSED or t.visibility == Visibility.VISIBLE
                else t.message[:2000],
                "visibility": "visible" if t.visibility == Visibility.VISIBLE else "after_published",
            })
    # Students see ``output`` and visible tests. Review flags (static scan, near copies) are for
    # staff only: Gradescope shows a test of visibility "hidden" to instructors, never to
    # students (its autograder specification), so they go in one, worth 0 points, and in
    # ``extra_data`` for tools.
    if report.flags:
        tests.append({"name": REVIEW_FLAGS_TEST, "score": 0.0, "max_score": 0.0, "status": "failed",
                      "output": "\n".join(f"flag: {f}" for f in report.flags), "visibility": "hidden"})
    problems = [f"problem: {p}" for p in report.problems] + [
        f"sandbox: {w}" for w in _sandbox_warnings(report)]
    output = "\n".join(problems) or f"{_num(report.score)}/{_num(report.max_score)} points"
    return {
        "score": report.score,
        "execution_time": round(report.duration_s),
        "output": "\n".join([*notes, output]).strip(),
        "stdout_visibility": "hidden",
        "extra_data": {"flags": report.flags, "sandbox": report.sandbox},
        "tests": tests,
    }


def render_junit(report: Report) -> str:
    root = ET.Element("testsuites", name="tensor-drills", tests="0", failures="0", errors="0",
                      skipped="0", time=f"{report.duration_s:.3f}")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for ex in report.exercises:
        suite = ET.SubElement(root, "testsuite", name=ex.id)
        for warning in _sandbox_warnings(report):
            ET.SubElement(ET.SubElement(suite, "properties"), "property", name="sandbox", value=warning)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for t in ex.tests:
            case = ET.SubElement(suite, "testcase", classname=ex.id, name=t.name)
            ET.SubElement(ET.SubElement(case, "properties"), "property", name="points",
                          value=f"{_num(t.score)}/{_num(t.max_score)}")
            counts["tests"] += 1
            if t.status == TestStatus.PASSED:
                continue
            if t.status in (TestStatus.NOT_RUN, TestStatus.SKIPPED):
                ET.SubElement(case, "skipped", message=_first_line(t.message))
                counts["skipped"] += 1
            else:
                kind = "failure" if t.status == "failed" else "error"
                node = ET.SubElement(case, kind, message=_first_line(t.message)[:500], type=t.status)
                node.text = t.message
                counts["failures" if kind == "failure" else "errors"] += 1
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def public_only(report: Report) -> bool:
    """Whether the report's tests are all public ones (the hidden tests were not there to run)."""
    tests = [t for ex in report.exercises for t in ex.tests]
    return bool(tests) and all(t.visibility == Visibility.VISIBLE for t in tests)


def render_markdown(report: Report) -> str:
    pct = 100 * report.score / report.max_score if report.max_score else 0.0
    lines = [f"## tensor-drills: {_num(report.score)}/{_num(report.max_score)} ({pct:.1f}%)", "",
             "| exercise | score | status | first failure |", "| --- | ---: | --- | --- |"]
    for ex in report.exercises:
        first = _first_failure(ex) if ex.status == State.FAILING else None
        detail = f"`{first.name}`: {_first_line(first.message)[:120]}" if first else ""
        lines.append(f"| `{ex.id}` | {_num(ex.score)}/{_num(ex.max_score)} | {ex.status} | "
                     f"{_md_cell(detail)} |")
    if public_only(report):
        lines += ["", f"**{PUBLIC_ONLY_NOTE}**"]
    extra = [*(f"- **sandbox: {_md_cell(w)}**" for w in _sandbox_warnings(report)),
             *(f"- problem: {_md_cell(p)}" for p in report.problems),
             *(f"- flag: {_md_cell(f)}" for f in report.flags)]
    if extra:
        lines += ["", *extra]
    return "\n".join(lines) + "\n"


def render(report: Report, fmt: str) -> str:
    """Render in ``fmt`` (one of ``FORMATS``); an unknown format raises ``ValueError``."""
    renderers = {"table": render_table, "json": render_json, "gradescope": render_gradescope,
                 "junit": render_junit, "markdown": render_markdown, "html": render_html}
    if fmt not in renderers:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return renderers[fmt](report)
