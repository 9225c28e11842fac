"""A hiring report: one self-contained HTML file (``grader score --format html -o report.html``).

Inline CSS and an inline SVG bar chart (score per topic), no script and no external resource, so
it can be mailed or archived as it is. Per topic (skill) and per exercise it says in plain words
which checks passed and failed (test names turned into sentences, with the failure messages), the
timing, the review flags (static scan, tampering, problems) and the similarity of each module to
the reference solution (``grader.similarity``).
"""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

from grader import catalog, similarity
from grader.scoring import ExerciseResult, Report, TestResult

STATUS_WORDS = {"passed": "passed", "failed": "failed", "error": "errored", "skipped": "skipped",
                "missing": "never reported a result", "not_run": "was not run on this machine"}

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;
 margin:0;background:#f4f6f9}
main{max-width:1040px;margin:0 auto;padding:24px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:28px 0 8px}h3{font-size:16px;margin:0}
.card{background:#fff;border:1px solid #dde2ea;border-radius:8px;padding:16px 20px;margin:12px 0}
.muted{color:#5b6475}.score{font-size:34px;font-weight:700}
.done{color:#17803d}.failing{color:#b4531a}.notstarted,.notrun{color:#6b7280}
.badge{display:inline-block;border-radius:10px;padding:1px 9px;font-size:12px;font-weight:600;
 margin-left:6px;background:#eef1f5;color:#394150}
.badge.warn{background:#fde8e8;color:#9b1c1c}.badge.ok{background:#e3f5e8;color:#17803d}
ul.tests{list-style:none;padding:0;margin:8px 0 0}
ul.tests li{padding:4px 0 4px 26px;position:relative;border-top:1px solid #f0f2f5}
ul.tests li::before{position:absolute;left:4px;font-weight:700}
li.pass::before{content:"\\2713";color:#17803d}li.fail::before{content:"\\2717";color:#c0262d}
li.other::before{content:"\\2013";color:#6b7280}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f9;border-left:3px solid #c0262d;
 padding:6px 10px;margin:4px 0;font-size:13px;max-height:240px;overflow:auto}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:4px 8px;
 border-bottom:1px solid #eceff3;font-size:14px}
.flags li{margin:3px 0}
"""


def sentence(test_name: str) -> str:
    """``test_file.py::test_mean_matches_torch[cpu-float32]`` -> ``Mean matches torch (cpu, float32)``."""
    name = test_name.rsplit("::", 1)[-1]
    base, _, params = name.partition("[")
    words = re.sub(r"^test_?", "", base).replace("_", " ").strip() or base
    text = words[:1].upper() + words[1:]
    if params:
        text += " (" + params.rstrip("]").replace("-", ", ") + ")"
    return text


def _num(x: float) -> str:
    return f"{x:g}"


def _pct(score: float, max_score: float) -> float:
    return 100.0 * score / max_score if max_score else 0.0


def _topic_of(ex_id: str) -> str:
    return ex_id.rsplit(".", 1)[0]


def _chart(topics: dict[str, tuple[float, float]]) -> str:
    """A horizontal bar chart of the score percentage per topic, as inline SVG."""
    bar_x, bar_w, row_h = 190, 380, 30
    height = row_h * len(topics) + 16
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="720" height="{height}" '
              f'viewBox="0 0 720 {height}" role="img" aria-label="score per topic">')]
    for i, (topic, (score, max_score)) in enumerate(topics.items()):
        pct = _pct(score, max_score)
        y = 8 + i * row_h
        colour = "#17803d" if pct >= 80 else "#d08a1a" if pct >= 40 else "#c0262d"
        parts.append(
            f'<text x="{bar_x - 10}" y="{y + 18}" text-anchor="end" font-size="13" '
            f'fill="#1d2330">{escape(topic)}</text>'
            f'<rect x="{bar_x}" y="{y + 4}" width="{bar_w}" height="20" rx="4" fill="#e6e9ef"/>'
            f'<rect x="{bar_x}" y="{y + 4}" width="{bar_w * pct / 100:.1f}" height="20" rx="4" '
            f'fill="{colour}"/>'
            f'<text x="{bar_x + bar_w + 8}" y="{y + 18}" font-size="13" fill="#1d2330">'
            f'{pct:.0f}% ({_num(score)}/{_num(max_score)})</text>')
    parts.append("</svg>")
    return "".join(parts)


def _test_item(t: TestResult) -> str:
    cls = "pass" if t.status == "passed" else "fail" if t.status in ("failed", "error", "missing") else "other"
    where = "public test" if t.visibility == "visible" else "hidden test"
    item = (f'<li class="{cls}">{escape(sentence(t.name))}: {STATUS_WORDS.get(t.status, t.status)} '
            f'<span class="muted">({where}, {_num(t.score)}/{_num(t.max_score)} pt)</span>')
    if cls == "fail" and t.message:
        item += f"<pre>{escape(t.message[:1500])}</pre>"
    return item + "</li>"


def _exercise_card(ex: ExerciseResult, sim: similarity.Similarity | None) -> str:
    meta = catalog.load_catalog().get(ex.id)
    title = f"{meta.title} " if meta else ""
    status_cls = ex.status.replace(" ", "")
    badges = f'<span class="badge">{escape(meta.difficulty)}, {meta.minutes} min</span>' if meta else ""
    if sim is not None and sim.ratio is not None and ex.status != "not started":
        warn = " warn" if sim.near_copy else ""
        label = "near copy of the reference" if sim.near_copy else "similarity to the reference"
        badges += f'<span class="badge{warn}">{label}: {sim.ratio:.2f}</span>'
    passed = sum(t.status == "passed" for t in ex.tests)
    counted = sum(t.status != "not_run" for t in ex.tests)
    return (f'<div class="card" id="ex-{escape(ex.id)}"><h3>{escape(title)}<span class="muted">'
            f'{escape(ex.id)}</span></h3><p><b class="{status_cls}">{escape(ex.status)}</b>: '
            f'{_num(ex.score)}/{_num(ex.max_score)} points, {passed} of {counted} checks passed'
            f'{badges}</p><ul class="tests">{"".join(_test_item(t) for t in ex.tests)}</ul></div>')


def render_html(report: Report, similarities: list[similarity.Similarity] | None = None) -> str:
    """The report as one HTML document. ``similarities`` default to a comparison of
    ``report.submission`` with the kit's references (when both are on this machine)."""
    if similarities is None:
        known = [catalog.load_catalog()[e.id] for e in report.exercises if e.id in catalog.load_catalog()]
        submission = Path(report.submission)
        similarities = similarity.compare(submission, known) if submission.is_dir() else []
    sims = {s.id: s for s in similarities}
    topics: dict[str, list[ExerciseResult]] = {}
    for ex in report.exercises:
        topics.setdefault(_topic_of(ex.id), []).append(ex)
    totals = {t: (sum(e.score for e in exs), sum(e.max_score for e in exs)) for t, exs in topics.items()}
    pct = _pct(report.score, report.max_score)
    done = sum(e.status == "done" for e in report.exercises)

    review = [*(f"Problem: {p}" for p in report.problems), *(f"Flag: {f}" for f in report.flags),
              *(f"Ignored file: {f}" for f in report.ignored_files)]
    near = [s for s in similarities if s.near_copy and not any(s.id in f for f in report.flags)]
    review += [f"Flag: {f}" for f in similarity.near_copy_flags(near)]
    review_html = ("<ul class='flags'>" + "".join(f"<li>{escape(r)}</li>" for r in review) + "</ul>"
                   if review else "<p class='done'>Nothing to review: no problems, no flags from the "
                                  "static scan or the tamper checks, no near copy of a reference.</p>")
    sandbox = ", ".join(f"{escape(k)}: {escape(str(v))}" for k, v in report.sandbox.items()) or "not reported"

    rows = "".join(
        f"<tr><td>{escape(t)}</td><td>{_num(s)}/{_num(m)}</td><td>{_pct(s, m):.0f}%</td>"
        f"<td>{sum(e.status == 'done' for e in topics[t])} of {len(topics[t])} exercises done</td></tr>"
        for t, (s, m) in totals.items())
    sections = "".join(
        f"<h2>Skill: {escape(t)} <span class='muted'>({_num(totals[t][0])}/{_num(totals[t][1])}, "
        f"{_pct(*totals[t]):.0f}%)</span></h2>" + "".join(_exercise_card(e, sims.get(e.id)) for e in exs)
        for t, exs in topics.items())
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tensor-drills report: {escape(Path(report.submission).name)}</title>
<style>{_CSS}</style>
</head>
<body>
<main>
<h1>tensor-drills report</h1>
<p class="muted">Submission {escape(report.submission)}; graded in {report.duration_s:.1f} s.</p>
<div class="card"><div class="score">{_num(report.score)}/{_num(report.max_score)}
<span class="muted">({pct:.1f}%)</span></div>
<p>{done} of {len(report.exercises)} exercises fully correct.</p>
{_chart(totals)}
<table><tr><th>skill</th><th>points</th><th>score</th><th>exercises</th></tr>{rows}</table></div>
<h2>For review</h2>
<div class="card">{review_html}
<p class="muted">Similarity compares each module with the reference solution after normalizing
names, strings, comments and layout (0 = unrelated, 1 = identical); at or above
{similarity.NEAR_COPY_THRESHOLD:.2f} it is flagged as a near copy. Sandbox: {sandbox}.</p></div>
{sections}
</main>
</body>
</html>
"""
