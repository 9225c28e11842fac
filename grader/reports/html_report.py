"""Hiring reports: one self-contained HTML file per submission, and an index page for a batch.

``render_html`` (``grader score --format html -o report.html``, and ``grader batch``'s
``html/<name>.html``): inline CSS and an inline SVG bar chart (score per topic), no script and no
external resource, so it can be mailed, archived or printed as it is. It names the candidate
(``Report.candidate``), lists what a reviewer should look at (problems, review flags, files the
grader did not take, near copies of the reference or of another submission), and per topic and
exercise says which checks passed and failed (test names as written, with the failure messages)
and shows the candidate's code, highlighted by Pygments, in a collapsed section. An exercise the
candidate did not start is one line.

``render_index`` (``grader batch``'s ``index.html``): the batch ranked by score, with each
submission's per-exercise scores, review flags and near-copy pairs, linking to its report.

Everything that comes from a submission (names, code, messages, file names) is escaped.
"""

from __future__ import annotations

import re
from html import escape
from pathlib import Path
from urllib.parse import quote

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from grader import catalog
from grader.engine import similarity
from grader.engine.scoring import ExerciseResult, Report, TestResult, candidate_name
from grader.outcomes import State, TestStatus, Visibility

STATUS_WORDS = {"passed": "passed", "failed": "failed", "error": "errored", "skipped": "skipped",
                "missing": "never reported a result", "not_run": "was not run on this machine"}

_CODE = HtmlFormatter(cssclass="code", style="default", linenos="inline")

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;
 margin:0;background:#f4f6f9}
main{max-width:1040px;margin:0 auto;padding:24px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:28px 0 8px}h3{font-size:16px;margin:0}
.card{background:#fff;border:1px solid #dde2ea;border-radius:8px;padding:16px 20px;margin:12px 0}
.card.line{padding:8px 20px;margin:6px 0}
.muted{color:#5b6475}.score{font-size:34px;font-weight:700}
.done{color:#17803d}.failing{color:#b4531a}.notstarted,.notrun,.notgraded{color:#6b7280}
.badge{display:inline-block;border-radius:10px;padding:1px 9px;font-size:12px;font-weight:600;
 margin-left:6px;background:#eef1f5;color:#394150;border:1px solid #dde2ea}
.badge.warn{background:#fde8e8;color:#9b1c1c;border-color:#f3b4b4}
ul.tests{list-style:none;padding:0;margin:8px 0 0}
ul.tests li{padding:4px 0 4px 26px;position:relative;border-top:1px solid #f0f2f5}
ul.tests li::before{position:absolute;left:4px;font-weight:700}
li.pass::before{content:"\\2713";color:#17803d}li.fail::before{content:"\\2717";color:#c0262d}
li.other::before{content:"\\2013";color:#6b7280}
code.test{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre.msg{white-space:pre-wrap;word-break:break-word;background:#f7f7f9;border-left:3px solid #c0262d;
 padding:6px 10px;margin:4px 0;font-size:13px;max-height:240px;overflow:auto}
details{margin-top:10px}summary{cursor:pointer;color:#394150;font-weight:600}
.code{border:1px solid #eceff3;border-radius:6px;margin-top:6px;overflow:auto}
.code pre{margin:0;padding:8px 10px;font-size:13px;white-space:pre-wrap;word-break:break-word}
.code .linenos{color:#9aa1ad;user-select:none}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:4px 8px;
 border-bottom:1px solid #eceff3;font-size:14px;vertical-align:top}
td.num,th.num{text-align:right;white-space:nowrap}
.flags li{margin:3px 0}
@media print{
 body{background:#fff;font-size:12px}main{max-width:none;padding:0}
 .card{border-color:#bbb;break-inside:avoid}
 details::details-content{content-visibility:visible;height:auto}
 .code pre{max-height:none}pre.msg{max-height:none}a{color:inherit}
}
"""


def sentence(test_name: str) -> str:
    """``test_file.py::test_sgd_one_step[cpu-float32]`` -> ``sgd one step (cpu, float32)``: the
    test's own words, in its own case."""
    name = test_name.rsplit("::", 1)[-1]
    base, _, params = name.partition("[")
    text = re.sub(r"^test_?", "", base).replace("_", " ").strip() or base
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
    cls = ("pass" if t.status == TestStatus.PASSED
           else "fail" if t.status in (TestStatus.FAILED, TestStatus.ERROR, TestStatus.MISSING) else "other")
    where = "public test" if t.visibility == Visibility.VISIBLE else "hidden test"
    item = (f'<li class="{cls}"><span title="{escape(t.name)}">{escape(sentence(t.name))}</span>: '
            f'{STATUS_WORDS.get(t.status, escape(t.status))} '
            f'<span class="muted">({where}, {_num(t.score)}/{_num(t.max_score)} pt)</span>')
    if cls == "fail" and t.message:
        item += f'<pre class="msg">{escape(t.message[:1500])}</pre>'
    return item + "</li>"


def _code_section(ex: ExerciseResult, meta: catalog.Exercise | None) -> str:
    if ex.code is None:
        return '<p class="muted">No module was submitted for this exercise.</p>'
    where = meta.relpath.as_posix() if meta else ex.id
    lines = ex.code.count("\n") + (not ex.code.endswith("\n"))
    return (f"<details><summary>The candidate's code: {escape(where)} ({lines} lines)</summary>"
            f"{highlight(ex.code, PythonLexer(), _CODE)}</details>")


def _title(ex_id: str) -> tuple[catalog.Exercise | None, str]:
    meta = catalog.load_catalog().get(ex_id)
    return meta, (f"{meta.title} " if meta else "")


def _exercise_card(ex: ExerciseResult) -> str:
    meta, title = _title(ex.id)
    status_cls = ex.status.replace(" ", "")
    heading = f'<h3>{escape(title)}<span class="muted">{escape(ex.id)}</span></h3>'
    if ex.status == State.NOT_STARTED:
        return (f'<div class="card line" id="ex-{escape(ex.id)}">{heading}<b class="notstarted">not '
                f'started</b>: the stub is untouched, 0/{_num(ex.max_score)} points.</div>')
    if not ex.tests:
        return (f'<div class="card line" id="ex-{escape(ex.id)}">{heading}<b class="notgraded">not '
                f'graded</b>: no check ran (see For review).</div>')
    badges = f'<span class="badge">{escape(meta.difficulty)}, {meta.minutes} min</span>' if meta else ""
    sim = similarity.Similarity.from_dict(ex.similarity) if ex.similarity else None
    if sim is not None and sim.ratio is not None:
        warn = " warn" if sim.near_copy else ""
        label = "near copy of the reference" if sim.near_copy else "similarity to the reference"
        badges += f'<span class="badge{warn}">{label}: {sim.ratio:.2f}</span>'
    passed = sum(t.status == TestStatus.PASSED for t in ex.tests)
    counted = sum(t.status != TestStatus.NOT_RUN for t in ex.tests)
    return (f'<div class="card" id="ex-{escape(ex.id)}">{heading}<p><b class="{status_cls}">'
            f'{escape(ex.status)}</b>: {_num(ex.score)}/{_num(ex.max_score)} points, {passed} of {counted} '
            f'checks passed{badges}</p><ul class="tests">{"".join(_test_item(t) for t in ex.tests)}</ul>'
            f'{_code_section(ex, meta)}</div>')


def _is_noise(ignored: str) -> bool:
    """Files that are not exercise modules: a README, notes, data. Ignored, and not worth a look."""
    return ignored.endswith("other file(s) that are not exercise modules (ignored)")


def review_items(report: Report, pairs: list[similarity.Pair] = (), name: str = "") -> list[str]:
    """What a reviewer should look at: problems, the sandbox's warning, review flags (near copies
    of the reference included), files the grader did not take that look like code, and near
    copies of other submissions (those of ``pairs`` that name ``name``)."""
    warning = report.sandbox.get("warning")
    return [*(f"Problem: {p}" for p in report.problems), *([f"Sandbox: {warning}"] if warning else []),
            *(f"Flag: {f}" for f in report.flags),
            *(f"Not graded: {f}" for f in report.ignored_files if not _is_noise(f)),
            *(f"Flag: {f}" for f in similarity.pair_flags(list(pairs), name))]


def render_html(report: Report, pairs: list[similarity.Pair] = (), batch_name: str = "") -> str:
    """The report as one HTML document. ``pairs``: a batch's near-copy pairs, of which those that
    name ``batch_name`` (this submission's name in the batch) are review items."""
    name = report.candidate or candidate_name(Path(report.submission))
    topics: dict[str, list[ExerciseResult]] = {}
    for ex in report.exercises:
        topics.setdefault(_topic_of(ex.id), []).append(ex)
    totals = {t: (sum(e.score for e in exs), sum(e.max_score for e in exs)) for t, exs in topics.items()}
    pct = _pct(report.score, report.max_score)
    done = sum(e.status == State.DONE for e in report.exercises)
    started = sum(e.status != State.NOT_STARTED for e in report.exercises)

    review = review_items(report, pairs, batch_name)
    review_html = ("<ul class='flags'>" + "".join(f"<li>{escape(r)}</li>" for r in review) + "</ul>"
                   if review else "<p class='done'>Nothing to review: no problems, no flags from the "
                                  "static scan or the tamper checks, no near copy.</p>")
    others = [f for f in report.ignored_files if _is_noise(f)]
    if others:
        review_html += f"<p class='muted'>Also handed in and not graded: {escape(others[0])}.</p>"
    sandbox = ", ".join(f"{escape(k)}: {escape(str(v))}" for k, v in report.sandbox.items()) or "not reported"
    in_batch = (" In a batch, each module is also compared with the other submissions' (winnowed "
                "fingerprints, as MOSS does; what the stub had does not count); near copies are listed "
                "above and on the batch's index page." if batch_name else "")

    rows = "".join(
        f"<tr><td>{escape(t)}</td><td>{_num(s)}/{_num(m)}</td><td>{_pct(s, m):.0f}%</td>"
        f"<td>{sum(e.status == State.DONE for e in topics[t])} of {len(topics[t])} exercises done</td></tr>"
        for t, (s, m) in totals.items())
    sections = "".join(
        f"<h2>Skill: {escape(t)} <span class='muted'>({_num(totals[t][0])}/{_num(totals[t][1])}, "
        f"{_pct(*totals[t]):.0f}%)</span></h2>" + "".join(_exercise_card(e) for e in exs)
        for t, exs in topics.items())
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tensor-drills report: {escape(name)}</title>
<style>{_CSS}{_CODE.get_style_defs(".code")}</style>
</head>
<body>
<main>
<h1>tensor-drills report: {escape(name)}</h1>
<p class="muted">Handed in as {escape(Path(report.submission).name)}; graded in {report.duration_s:.1f} s.</p>
<div class="card"><div class="score">{_num(report.score)}/{_num(report.max_score)}
<span class="muted">({pct:.1f}%)</span></div>
<p>{done} of {len(report.exercises)} exercises fully correct; {started} started.</p>
{_chart(totals)}
<table><tr><th>skill</th><th>points</th><th>score</th><th>exercises</th></tr>{rows}</table></div>
<h2>For review</h2>
<div class="card">{review_html}
<p class="muted">Similarity compares each module with the reference solution after normalizing
names, strings, comments and layout (0 = unrelated, 1 = identical); at or above
{similarity.NEAR_COPY_THRESHOLD:.2f} it is flagged as a near copy.{in_batch} Sandbox: {sandbox}.</p></div>
{sections}
</main>
</body>
</html>
"""


def _index_row(rank: int, name: str, report: Report, exercise_ids: list[str], pairs: list[similarity.Pair],
               href: str) -> str:
    by_id = {ex.id: ex for ex in report.exercises}
    cells = "".join(
        f'<td class="num {by_id[i].status.replace(" ", "")}">{_num(by_id[i].score)}/{_num(by_id[i].max_score)}</td>'
        if i in by_id else '<td class="num muted">-</td>' for i in exercise_ids)
    mine = [p for p in pairs if name in (p.first, p.second)]
    copies = "".join(
        f'<span class="badge warn" title="{escape(p.exercise)}">{escape(p.second if p.first == name else p.first)} '
        f'({escape(p.exercise.rsplit(".", 1)[-1])}, {p.similarity:.2f})</span>' for p in mine)
    flags = len(review_items(report)) + len(mine)
    return (f'<tr><td class="num">{rank}</td><td><a href="{escape(href)}">{escape(name)}</a></td>'
            f'<td class="num"><b>{_num(report.score)}/{_num(report.max_score)}</b></td>'
            f'<td class="num">{_pct(report.score, report.max_score):.1f}%</td>{cells}'
            f'<td class="num">{flags or ""}</td><td>{copies}</td></tr>')


def render_index(reports: dict[str, Report], pairs: list[similarity.Pair] = (),
                 threshold: float = similarity.PAIR_THRESHOLD) -> str:
    """A batch's index page: ``reports`` (submission name -> report) ranked by percentage, then
    name; each links to ``html/<name>.html``. ``pairs``: the batch's near-copy pairs, also listed
    on their own, found at ``threshold``."""
    ranked = sorted(reports, key=lambda n: (-_pct(reports[n].score, reports[n].max_score), n))
    exercise_ids = list(dict.fromkeys(ex.id for r in reports.values() for ex in r.exercises))
    heads = "".join(f'<th class="num" title="{escape(i)}">{escape(i.rsplit(".", 1)[-1])}</th>'
                    for i in exercise_ids)
    rows = "".join(_index_row(rank, name, reports[name], exercise_ids, list(pairs),
                              f"html/{quote(name, safe='')}.html")
                   for rank, name in enumerate(ranked, 1))
    pair_rows = "".join(
        f"<tr><td>{escape(p.exercise)}</td><td>{escape(p.first)}</td><td>{escape(p.second)}</td>"
        f'<td class="num">{p.similarity:.2f}</td></tr>' for p in pairs)
    pair_html = (f"<table><tr><th>exercise</th><th>submission</th><th>submission</th>"
                 f'<th class="num">similarity</th></tr>{pair_rows}</table>' if pairs
                 else "<p class='done'>No two submissions are near copies of each other.</p>")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tensor-drills batch: {len(reports)} submissions</title>
<style>{_CSS}</style>
</head>
<body>
<main>
<h1>tensor-drills batch: {len(reports)} submissions</h1>
<div class="card"><table><tr><th class="num">#</th><th>submission</th><th class="num">score</th>
<th class="num">percent</th>{heads}<th class="num">review items</th><th>near copy of</th></tr>{rows}</table></div>
<h2>Near-copy pairs</h2>
<div class="card">{pair_html}
<p class="muted">Each exercise's modules are compared pairwise by winnowed fingerprints of their
normalized tokens (MOSS), leaving out what the stub already had; a pair is listed when at least
{threshold:.2f} of the smaller module's fingerprints are in the other. A flag for a person to look
at, never a score change.</p></div>
</main>
</body>
</html>
"""
