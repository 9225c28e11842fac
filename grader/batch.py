"""Grade a whole class: every subdirectory or zip of a folder is one submission.

Results are written as each submission finishes (``<out>/results/<name>.json``, atomically), so
an interrupted batch loses nothing and a rerun skips what is done unless ``force``. At the end a
gradebook (``<out>/gradebook.csv``) and per-submission feedback (``<out>/feedback/<name>.md``)
are written from all results on disk. A bad input (an empty folder, a broken zip, a stray file)
gets a clear message and the batch goes on.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TextIO

from grader import _forkserver, catalog, formats, similarity
from grader.sandbox import Limits, kill_all
from grader.scoring import SubmissionError, score_submission, select_exercises

MAX_UNZIPPED_BYTES = 64 << 20


class BatchError(ValueError):
    """The batch cannot start (the submissions folder is missing or not a folder)."""


@dataclass
class Entry:
    name: str
    path: Path
    problem: str = ""  # set when this entry cannot be graded at all


def discover(folder: Path) -> list[Entry]:
    """One entry per subdirectory or ``.zip`` in ``folder``, sorted by name."""
    if not folder.exists():
        raise BatchError(f"submissions folder not found: {folder}")
    if not folder.is_dir():
        raise BatchError(f"expected a folder of submissions, got a file: {folder}")
    entries = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue
        if path.is_dir():
            empty = not any(p.is_file() for p in path.rglob("*"))
            entries.append(Entry(path.name, path, "the submission folder is empty" if empty else ""))
        elif path.suffix == ".zip":
            entries.append(Entry(path.stem, path))
        else:
            entries.append(Entry(path.name, path, "not a folder or a .zip file: skipped"))
    return entries


def _unpack(zip_path: Path, dest: Path) -> Path:
    """Extract safely (no absolute or ``..`` paths, no links, bounded size); return the root."""
    try:
        archive = zipfile.ZipFile(zip_path)
    except zipfile.BadZipFile:
        raise SubmissionError(f"{zip_path.name} is not a valid zip file") from None
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if sum(m.file_size for m in members) > MAX_UNZIPPED_BYTES:
            raise SubmissionError(f"{zip_path.name} unpacks to more than {MAX_UNZIPPED_BYTES >> 20} MiB")
        for member in members:
            rel = PurePosixPath(member.filename)
            if rel.is_absolute() or ".." in rel.parts or (member.external_attr >> 16) & 0o170000 == 0o120000:
                continue  # path traversal or a symlink: never extracted
            target = dest.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
    children = [p for p in dest.iterdir() if p.name != "__MACOSX"]
    # A zip of the folder itself (one top-level folder) is as good as a zip of its contents.
    if len(children) == 1 and children[0].is_dir() and children[0].name not in catalog.FRAMEWORKS:
        return children[0]
    return dest


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _error_result(entry: Entry, message: str, exercises: list[catalog.Exercise]) -> dict:
    return {"submission": str(entry.path), "score": 0.0, "max_score": 0.0, "duration_s": 0.0,
            "problems": [message], "exercises": [{"id": ex.id, "score": 0.0, "max_score": 0.0,
                                                   "status": "not graded", "tests": []}
                                                  for ex in exercises],
            "flags": [], "ignored_files": [], "sandbox": {}}


def grade_entry(entry: Entry, exercise_ids: list[str] | None, limits: Limits,
                hide: list[Path], fork: bool = False) -> tuple[dict, str]:
    """Grade one entry; returns (JSON-able result, markdown feedback). Never raises for bad input."""
    exercises = select_exercises(exercise_ids)
    if entry.problem:
        result = _error_result(entry, entry.problem, exercises)
        return result, f"## {entry.name}\n\nNot graded: {entry.problem}\n"
    with tempfile.TemporaryDirectory(prefix="drills-unzip-") as tmp:
        try:
            root = _unpack(entry.path, Path(tmp)) if entry.path.suffix == ".zip" else entry.path
            report = score_submission(root, exercise_ids, limits=limits, hide=hide, fork=fork)
            similarity.flag_near_copies(report)  # while the unpacked copy still exists
        except SubmissionError as exc:
            result = _error_result(entry, str(exc), exercises)
            return result, f"## {entry.name}\n\nNot graded: {exc}\n"
    report.submission = str(entry.path)
    return report.to_dict(), formats.render_markdown(report)


def write_gradebook(out: Path, names: list[str], exercises: list[catalog.Exercise]) -> Path:
    """``gradebook.csv``: one row per submission with a result on disk, a column per exercise."""
    path = out / "gradebook.csv"
    rows = []
    for name in names:
        result_path = out / "results" / f"{name}.json"
        if not result_path.is_file():
            continue
        data = json.loads(result_path.read_text(encoding="utf-8"))
        by_id = {ex["id"]: ex for ex in data["exercises"]}
        pct = 100 * data["score"] / data["max_score"] if data["max_score"] else 0.0
        rows.append([name, *(f"{by_id[ex.id]['score']:g}" if ex.id in by_id else "" for ex in exercises),
                     f"{data['score']:g}", f"{data['max_score']:g}", f"{pct:.1f}",
                     " | ".join(data.get("problems", []))[:500], len(data.get("flags", []))])
    tmp = path.with_name(".gradebook.csv.tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission", *(ex.id for ex in exercises), "total", "max_total",
                         "percent", "problems", "flags"])
        writer.writerows(rows)
    os.replace(tmp, path)
    return path


class _Progress:
    """A progress line on stderr: a bar when it is a terminal, one line per submission otherwise."""

    def __init__(self, total: int, stream: TextIO = sys.stderr) -> None:
        self.total, self.done, self.stream = total, 0, stream
        self.started = time.monotonic()
        self.tty = stream.isatty()

    def update(self, name: str, summary: str) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done)
        if self.tty:
            filled = int(30 * self.done / max(self.total, 1))
            self.stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} "
                              f"eta {eta:4.0f} s  {name[:24]:<24} {summary[:30]:<30}")
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(f"[{self.done:>{len(str(self.total))}}/{self.total}] {name}: {summary} "
                              f"(eta {eta:.0f} s)\n")
        self.stream.flush()


def run_batch(folder: Path, out: Path, *, exercise_ids: list[str] | None = None, jobs: int = 1,
              force: bool = False, limits: Limits | None = None, fork: bool = True,
              log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> Path:
    """Grade every submission in ``folder`` into ``out``; return the gradebook's path.

    ``fork``: fork each grading child from a fork server that imported the frameworks once
    (``grader._forkserver``), instead of starting a fresh interpreter per submission.

    Raises:
        BatchError: ``folder`` is missing or not a folder.
        catalog.CatalogError: an exercise id is unknown.
    """
    entries = discover(Path(folder))
    exercises = select_exercises(exercise_ids)
    limits = limits or Limits()
    out = Path(out)
    (out / "results").mkdir(parents=True, exist_ok=True)
    todo = [e for e in entries if force or not (out / "results" / f"{e.name}.json").is_file()]
    skipped = len(entries) - len(todo)
    if skipped:
        log(f"{skipped} submission(s) already graded in {out} (use --force to grade again)")
    for entry in (e for e in todo if e.problem):
        log(f"{entry.name}: {entry.problem}")
    hide = [Path(folder).resolve(), out.resolve()]
    progress = _Progress(len(todo))
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        pending = {pool.submit(grade_entry, e, exercise_ids, limits, hide, fork): e for e in todo}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                entry = pending.pop(future)
                try:
                    result, feedback = future.result()
                except Exception as exc:  # noqa: BLE001 - one submission never stops the batch
                    result = _error_result(entry, f"grader error: {type(exc).__name__}: {exc}", exercises)
                    feedback = f"## {entry.name}\n\nNot graded: {result['problems'][0]}\n"
                _write_atomic(out / "feedback" / f"{entry.name}.md", feedback)
                _write_atomic(out / "results" / f"{entry.name}.json", json.dumps(result, indent=2))
                progress.update(entry.name, f"{result['score']:g}/{result['max_score']:g}")
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        kill_all()
        log(f"interrupted: results so far are in {out}; run again to grade the rest")
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        _forkserver.close_all()
    return write_gradebook(out, [e.name for e in entries], exercises)
