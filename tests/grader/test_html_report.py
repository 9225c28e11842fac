"""The HTML hiring report: self-contained, well-formed, in plain words, and it renders in Chromium."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser

import pytest

from grader import catalog, formats, html_report, similarity
from grader.cli import main
from grader.scoring import ExerciseResult, Report, TestResult
from tests.helpers import make_submission

EX = catalog.get_exercise("pytorch.tensors.broadcasting")
OTHER = catalog.get_exercise("pytorch.optim.train_step")
VOID = {"meta", "br", "hr", "img", "input", "link", "rect", "path", "line", "circle"}


def _report(tmp_path) -> Report:
    root = make_submission(tmp_path / "sub", {EX: EX.reference, OTHER: OTHER.stub})
    broadcasting = ExerciseResult(EX.id, 3.0, 4.0, [
        TestResult("test_broadcasting.py::test_pairwise_small_example", "passed", 1, 1, "visible"),
        TestResult("test_broadcasting_hidden.py::test_pairwise_stays_on_device[cpu]", "passed", 2, 2, "hidden"),
        TestResult("test_broadcasting_hidden.py::test_affine_rejects_bad_weight", "failed", 0, 1, "hidden",
                   "batched_affine accepted a weight of shape (3, 5) <for x of shape (2, 4)>"),
        TestResult("test_broadcasting_hidden.py::test_pairwise_stays_on_device[cuda]", "not_run", 0, 0,
                   "hidden", "needs CUDA"),
    ])
    train = ExerciseResult(OTHER.id, 0.0, 2.0, [
        TestResult("test_train_step.py::test_loss_goes_down", "failed", 0, 2, "visible",
                   "not started: pytorch/optim/train_step.py still raises NotImplementedError")])
    return Report(str(root), 3.0, 6.0, [broadcasting, train], 12.5, problems=[],
                  sandbox={"network_isolated": True},
                  flags=["pytorch/optim/train_step.py:3: imports subprocess (starting processes): review by hand"])


class _Checker(HTMLParser):
    """Tag balance, and every reference to another resource."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.links: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
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


def test_sentences_from_test_names():
    assert html_report.sentence("t.py::test_mean_matches_torch[cpu-float32]") == "Mean matches torch (cpu, float32)"
    assert html_report.sentence("t.py::TestX::test_rejects_bad_bias") == "Rejects bad bias"


def test_html_is_well_formed_self_contained_and_plain_spoken(tmp_path):
    text = formats.render(_report(tmp_path), "html")
    checker = _Checker()
    checker.feed(text)
    checker.close()
    assert checker.errors == [] and checker.stack == []
    assert all(link.startswith("#") for link in checker.links), checker.links
    assert "script" not in checker.tags and "url(" not in text and "@import" not in text
    assert {"svg", "rect", "style"} <= checker.tags
    assert "Pairwise small example: passed" in text
    assert "Affine rejects bad weight: failed" in text
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


def test_grader_score_writes_the_html_report(tmp_path):
    root = make_submission(tmp_path / "sub", {EX: EX.reference})
    out = tmp_path / "report.html"
    assert main(["score", str(root), "-e", EX.id, "--format", "html", "-o", str(out)]) == 0
    text = out.read_text()
    assert "Pairwise small example: passed" in text and "near copy of the reference solution" in text


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


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian: apt-get install -y chromium)")
def test_report_renders_in_headless_chromium(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(formats.render(_report(tmp_path), "html"), encoding="utf-8")
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
                    "--window-size=1200,1600", page.as_uri()],
                   capture_output=True, timeout=120, check=False)
    assert shot.is_file() and shot.stat().st_size > 10_000
    width, height, pixels = _png_pixels(shot.read_bytes())
    assert (width, height) == (1200, 1600)
    colours = set(pixels)
    assert len(colours) > 50  # text, bars and badges, not a blank page
    green = {p for p in colours if p[1] > 100 and p[0] < 60 and p[2] < 90}
    assert green  # the bar chart's and the "done" badge's green made it to the screen
