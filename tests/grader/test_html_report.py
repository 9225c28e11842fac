"""The HTML hiring report: self-contained, well-formed, in plain words, safe with hostile input,
short for untouched exercises, and it renders in Chromium."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zipfile
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from grader import catalog
from grader.cli import main
from grader.engine import scoring, similarity
from grader.engine.scoring import ExerciseResult, Report, TestResult, candidate_name
from grader.reports import formats, html_report
from tests.helpers import make_submission

EX = catalog.get_exercise("pytorch.tensors.broadcasting")
OTHER = catalog.get_exercise("pytorch.optim.train_step")
VOID = {"meta", "br", "hr", "img", "input", "link", "rect", "path", "line", "circle"}


def _report(tmp_path) -> Report:
    root = make_submission(tmp_path / "sub", {EX: EX.reference, OTHER: OTHER.stub})
    broadcasting = ExerciseResult(EX.id, 3.0, 4.0, code=EX.reference.read_text(), tests=[
        TestResult("test_broadcasting.py::test_pairwise_small_example", "passed", 1, 1, "visible"),
        TestResult("test_broadcasting_hidden.py::test_pairwise_stays_on_device[cpu]", "passed", 2, 2, "hidden"),
        TestResult("test_broadcasting_hidden.py::test_affine_rejects_bad_weight", "failed", 0, 1, "hidden",
                   "batched_affine accepted a weight of shape (3, 5) <for x of shape (2, 4)>"),
        TestResult("test_broadcasting_hidden.py::test_pairwise_stays_on_device[cuda]", "not_run", 0, 0,
                   "hidden", "needs CUDA"),
    ])
    train = ExerciseResult(OTHER.id, 0.0, 2.0, code=OTHER.stub.read_text(), tests=[
        TestResult("test_train_step.py::test_loss_goes_down", "failed", 0, 2, "visible",
                   "not started: pytorch/optim/train_step.py still raises NotImplementedError")])
    return Report(str(root), 3.0, 6.0, [broadcasting, train], 12.5, problems=[],
                  sandbox={"network_isolated": True},
                  flags=["pytorch/optim/train_step.py:3: imports subprocess (starting processes): review by hand"],
                  ignored_files=["3 other file(s) that are not exercise modules (ignored)"], candidate="jane-doe")


class _Checker(HTMLParser):
    """Tag balance, the tags and attributes used, and every reference to another resource."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.links: list[str] = []
        self.tags: set[str] = set()
        self.attrs: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs |= {k for k, _ in attrs}
        self.links += [v or "" for k, v in attrs if k in ("src", "href", "xlink:href", "action")]
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.add(tag)
        self.links += [v or "" for k, v in attrs if k in ("src", "href", "xlink:href", "action")]

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def test_test_names_are_shown_as_written():
    assert html_report.sentence("t.py::test_sgd_one_step[cpu-float32]") == "sgd one step (cpu, float32)"
    assert html_report.sentence("t.py::TestX::test_rejects_bad_bias") == "rejects bad bias"
    assert html_report.sentence("t.py::test_SGD_matches_torch") == "SGD matches torch"


def _parse(text: str) -> _Checker:
    checker = _Checker()
    checker.feed(text)
    checker.close()
    assert checker.errors == [] and checker.stack == []
    return checker


def test_html_is_well_formed_self_contained_and_plain_spoken(tmp_path):
    report = _report(tmp_path)
    similarity.flag_near_copies(report)
    text = formats.render(report, "html")
    checker = _Checker()
    checker.feed(text)
    checker.close()
    assert checker.errors == [] and checker.stack == []
    assert all(link.startswith("#") for link in checker.links), checker.links
    assert "script" not in checker.tags and "url(" not in text and "@import" not in text
    assert {"svg", "rect", "style"} <= checker.tags
    assert "pairwise small example</span>: passed" in text
    assert "affine rejects bad weight</span>: failed" in text
    assert "accepted a weight of shape (3, 5) &lt;for x" in text  # messages are escaped
    assert "was not run on this machine" in text
    assert "Skill: pytorch.tensors" in text and "Skill: pytorch.optim" in text
    assert "imports subprocess" in text  # the static scan's flag
    assert "near copy of the reference: 1.00" in text  # the submitted reference itself
    assert "graded in 12.5 s" in text


def test_near_copies_are_flagged_in_the_json_report_without_changing_its_shape(tmp_path):
    report = _report(tmp_path)
    before = json.loads(formats.render(report, "json"))
    similarity.flag_near_copies(report)
    after = json.loads(formats.render(report, "json"))
    assert after.keys() == before.keys()
    assert [f for f in after["flags"] if f not in before["flags"]] == [
        next(f for f in report.flags if f.startswith(EX.id))]
    # Only fields were added: each exercise's code and its similarity to the reference.
    assert after["exercises"][0]["similarity"]["near_copy"] is True
    assert after["exercises"][0]["code"] == EX.reference.read_text()
    assert Report.from_dict(after).to_dict() == after


def _card(text: str, ex_id: str) -> str:
    return re.search(rf'<div class="card[^"]*" id="ex-{re.escape(ex_id)}">.*?</div>', text, re.S).group(0)


def test_a_not_started_exercise_is_one_line_and_a_started_one_shows_the_code(tmp_path):
    report = _report(tmp_path)
    text = html_report.render_html(report)
    untouched = _card(text, OTHER.id)
    assert "not started" in untouched and "<li" not in untouched and "<details" not in untouched
    assert "still raises NotImplementedError" not in text
    started = _card(text, EX.id)
    assert "<details><summary>The candidate's code: pytorch/tensors/broadcasting.py" in started
    assert '<span class="k">def</span>' in started and "pairwise_sq_dists" in started  # highlighted


def test_the_candidate_is_named_never_a_staging_path(tmp_path):
    report = _report(tmp_path)
    report.submission = "/tmp/drills-unzip-x1y2/exercises"
    text = html_report.render_html(report)
    assert "<title>tensor-drills report: jane-doe</title>" in text and "<h1>tensor-drills report: jane-doe" in text
    assert "drills-unzip" not in text
    report.candidate = ""  # a report from an older kit: the name of what was handed in
    report.submission = str(tmp_path / "returned-bundle" / "exercises")
    assert "<h1>tensor-drills report: returned-bundle</h1>" in html_report.render_html(report)


def test_review_items_are_what_matters(tmp_path):
    report = _report(tmp_path)
    report.ignored_files.append("pytorch/optim/train_step.py (a symbolic link: not followed)")
    report.sandbox["warning"] = "the sandbox could not drop privileges"
    items = html_report.review_items(report)
    assert "Not graded: pytorch/optim/train_step.py (a symbolic link: not followed)" in items
    assert "Sandbox: the sandbox could not drop privileges" in items
    assert not any("other file(s)" in item for item in items)  # a README or notes: not worth a look
    text = html_report.render_html(report)
    assert "Also handed in and not graded: 3 other file(s)" in text


HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)">'


def test_everything_from_the_submission_is_escaped(tmp_path):
    report = _report(tmp_path)
    report.candidate = HOSTILE
    report.exercises[0].code = f'x = """</pre></details>{HOSTILE}"""\n# {HOSTILE}\n'
    report.exercises[0].tests[2].message = HOSTILE
    report.ignored_files.append(f"{HOSTILE}.py (named like the installed package 'x': ignored)")
    report.flags.append(f"{HOSTILE}.py:1: imports ctypes")
    report.problems.append(HOSTILE)
    pairs = [similarity.Pair(EX.id, HOSTILE, "other", 0.97, 12)]
    for text in (html_report.render_html(report, pairs, HOSTILE),
                 html_report.render_index({HOSTILE: report}, pairs)):
        checker = _parse(text)
        assert "script" not in checker.tags and "img" not in checker.tags
        assert not any(a.startswith("on") for a in checker.attrs), checker.attrs
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert 'href="html/%3Cscript%3Ealert%281%29%3C%2Fscript%3E' in html_report.render_index({HOSTILE: report})


def test_grader_score_of_a_zip_keeps_the_code_and_the_similarity_badge(tmp_path):
    root = make_submission(tmp_path / "ann-lee" / "exercises", {EX: EX.reference})
    bundle = tmp_path / "ann-lee.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        for path in root.rglob("*.py"):
            archive.write(path, path.relative_to(tmp_path))
    out = tmp_path / "report.html"
    assert main(["score", str(bundle), "-e", EX.id, "--format", "html", "-o", str(out)]) == 0
    text = out.read_text()
    assert "pairwise small example</span>: passed" in text and "near copy of the reference solution" in text
    assert "near copy of the reference: 1.00" in text  # the badge: similarity was kept, not recomputed
    assert "<h1>tensor-drills report: ann-lee</h1>" in text and "pairwise_sq_dists" in text


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """A minimal PNG decoder (8-bit RGB or RGBA, not interlaced): width, height, rows of pixels."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, [bytes(r[i:i + 3]) for r in rows for i in range(0, stride, bpp)]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium(tmp_path, page, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                           "--no-first-run", "--disable-background-networking", "--disable-component-update",
                           "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", *args, page.as_uri()],
                          capture_output=True, text=True, timeout=120, check=False)


def _take_home(tmp_path) -> Report:
    """A 4-exercise take-home: one done, three untouched (30 checks each, all "not started")."""
    report = _report(tmp_path)
    for ex_id in ("pytorch.autograd.hooks", "pytorch.nn.mlp", "pytorch.optim.from_scratch"):
        stub = catalog.get_exercise(ex_id).stub.read_text()
        report.exercises.append(ExerciseResult(ex_id, 0.0, 30.0, code=stub, tests=[
            TestResult(f"test_x_hidden.py::test_check_{i}", "failed", 0, 1, "hidden",
                       f"not started: {ex_id} still raises NotImplementedError") for i in range(30)]))
    report.max_score += 90
    return report


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian: apt-get install -y chromium)")
def test_a_take_home_with_untouched_exercises_is_a_short_page(tmp_path):
    page = tmp_path / "measure.html"
    # The report has no script; this measuring copy gets one that writes the page's height.
    page.write_text(html_report.render_html(_take_home(tmp_path)).replace(
        "</body>", "<script>document.body.dataset.height = document.documentElement.scrollHeight</script></body>"),
        encoding="utf-8")
    dom = _chromium(tmp_path, page, "--window-size=1200,900", "--dump-dom").stdout
    height = int(re.search(r'data-height="(\d+)"', dom).group(1))
    assert height < 2600, height  # three untouched exercises take three lines, not 90 checks


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian: apt-get install -y chromium)")
def test_report_renders_in_headless_chromium(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(formats.render(_report(tmp_path), "html"), encoding="utf-8")
    shot = tmp_path / "shot.png"
    _chromium(tmp_path, page, f"--screenshot={shot}", "--window-size=1200,1600")
    assert shot.is_file() and shot.stat().st_size > 10_000
    width, height, pixels = _png_pixels(shot.read_bytes())
    assert (width, height) == (1200, 1600)
    colours = set(pixels)
    assert len(colours) > 50  # text, bars and badges, not a blank page
    green = {p for p in colours if p[1] > 100 and p[0] < 60 and p[2] < 90}
    assert green  # the bar chart's and the "done" badge's green made it to the screen


def test_grader_score_of_a_notebook_keeps_the_code_and_the_similarity_badge(tmp_path):
    cell = {"cell_type": "code", "metadata": {}, "source": EX.reference.read_text().splitlines(keepends=True),
            "outputs": [], "execution_count": None}
    notebook = tmp_path / "bo-chen.ipynb"
    notebook.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "cells": [cell], "metadata": {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}}))
    out = tmp_path / "report.html"
    assert main(["score", str(notebook), "-e", EX.id, "--format", "html", "-o", str(out)]) == 0
    text = out.read_text()
    assert "near copy of the reference: 1.00" in text and "pairwise_sq_dists" in text
    assert "<h1>tensor-drills report: bo-chen</h1>" in text and "drills-notebook" not in text


@pytest.mark.parametrize("path, manifest, name", [
    ("/in/ann-lee.zip", None, "ann-lee"),
    ("/in/ann-lee/exercises", None, "ann-lee"),
    ("/in/ann-lee", {"exercises": ["x"]}, "ann-lee"),
    ("/in/ann-lee.zip", {"exercises": ["x"], "candidate": " Ann Lee "}, "Ann Lee"),
    ("/in/answer.ipynb", None, "answer"),
])
def test_candidate_name(path, manifest, name):
    assert candidate_name(Path(path), manifest) == name


def test_the_code_kept_in_the_report_is_bounded(tmp_path):
    module = tmp_path / "big.py"
    module.write_text("x = 1\n" * (scoring.MAX_CODE_CHARS // 6 + 100))
    kept = scoring.submitted_code(module)
    assert kept.startswith("x = 1\n") and len(kept) < scoring.MAX_CODE_CHARS + 100
    left_out = len(module.read_text()) - scoring.MAX_CODE_CHARS
    assert kept.endswith(f"# [{left_out} more characters not kept in the report]\n")
    (tmp_path / "link.py").symlink_to(module)
    assert scoring.submitted_code(tmp_path / "link.py") is None  # not staged: not shown either
    assert scoring.submitted_code(tmp_path / "missing.py") is None
    assert scoring.submitted_code(tmp_path / "small.py") is None
    (tmp_path / "small.py").write_text("y = 2\n")
    assert scoring.submitted_code(tmp_path / "small.py") == "y = 2\n"


def test_notebook_and_zip_submissions_keep_their_similarity_badge(tmp_path):
    """Similarity is computed once, on the staged copy, and kept in the report: a submission
    that is not a folder (a zip, a notebook) shows the same badge as a folder."""
    folder = make_submission(tmp_path / "folder", {EX: EX.reference})
    archive = tmp_path / "handed-in.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(folder / EX.relpath, f"handed-in/exercises/{EX.relpath.as_posix()}")
    notebook = tmp_path / "answer.ipynb"
    notebook.write_text(json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "cells": [
            {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
             "source": EX.reference.read_text().splitlines(keepends=True)}],
        "metadata": {"tensor_drills": {"exercise": EX.id}}}))
    for submission in (archive, notebook):
        out = tmp_path / f"{submission.stem}.html"
        assert main(["score", str(submission), "-e", EX.id, "--format", "html", "-o", str(out)]) == 0
        card = _card(out.read_text(), EX.id)
        assert "near copy of the reference: 1.00" in card, submission.name
