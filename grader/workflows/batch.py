"""Grade a whole class: every subdirectory or zip of a folder is one submission.

Each entry is a folder or a zip, wrapped however it was zipped (see ``grader.engine.intake``); without
exercise ids, a take-home's entries are graded on the exercises of their manifest.
Results are written as each submission finishes (``<out>/results/<name>.json``, atomically), so
an interrupted batch loses nothing and a rerun skips what is done unless ``force`` (or unless the
submission's files or the grading settings changed since). At the end a
gradebook (``<out>/gradebook.csv``), per-submission feedback (``<out>/feedback/<name>.md``) and
the hiring reports (``write_reports``: ``<out>/html/<name>.html``, ``<out>/index.html`` ranking
the batch, ``<out>/near-copies.csv``, the pairs of submissions that are near copies of each
other) are written from all results on disk, so a resumed batch rebuilds them whole. A bad input
(an empty folder, a broken zip, a stray file) gets a clear message and the batch goes on.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from grader import __version__, catalog
from grader.engine import sandbox, similarity
from grader.engine.sandbox import Limits, kill_all
from grader.engine.scoring import Report, SubmissionError, score_path
from grader.errors import BatchError
from grader.reports import console as _console
from grader.reports import formats, html_report

if TYPE_CHECKING:
    from grader.workflows import dask_batch

# Never part of what a submission is: environments and caches a candidate may have zipped along.
_NOT_CONTENT = {"__pycache__", ".git", ".venv", "venv", "site-packages", "node_modules", ".hypothesis",
                ".pytest_cache", ".ipynb_checkpoints"}


@dataclass
class Entry:
    name: str
    path: Path
    problem: str = ""  # set when this entry cannot be graded at all


def discover(folder: Path) -> list[Entry]:
    """One entry per subdirectory or ``.zip`` in ``folder``, sorted by name.

    Raises:
        BatchError: ``folder`` is missing, not a folder, or holds no submission at all.
    """
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
        elif path.suffix.lower() == ".zip":
            entries.append(Entry(path.stem, path))
        else:
            entries.append(Entry(path.name, path, "not a folder or a .zip file: skipped"))
    if not entries:
        raise BatchError(f"no submissions in {folder}: expected one subfolder or .zip file per "
                         "submission")
    return entries


def content_digest(path: Path) -> str:
    """SHA-256 of a submission's files (names and bytes), environments and caches left out."""
    digest = hashlib.sha256()
    if path.is_file():
        digest.update(path.read_bytes())
        return digest.hexdigest()
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if d not in _NOT_CONTENT)
        for name in sorted(filenames):
            file = Path(dirpath, name)
            digest.update(file.relative_to(path).as_posix().encode() + b"\0")
            if file.is_file() and not file.is_symlink():
                digest.update(file.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


def grading_settings(exercise_ids: list[str] | None, limits: Limits) -> dict:
    """What besides a submission's files decides its result, as the ``grader`` command sets it
    (the exercises, ``--timeout``, ``--test-timeout``, ``--memory-mb``) and the kit's version;
    stored with each result."""
    return {"exercises": sorted(set(exercise_ids)) if exercise_ids else "all or the take-home's",
            "limits": {"timeout_s": limits.wall_s, "test_timeout_s": limits.test_s,
                       "memory_mb": limits.memory_mb},
            "kit_version": __version__}


def stale_reason(stored: dict, digest: str, settings: dict) -> str:
    """Why a stored result no longer holds for the submission (empty when it does)."""
    key = stored.get("batch") if isinstance(stored, dict) else None
    if not isinstance(key, dict):
        return "its stored result carries no record of what was graded"
    if key.get("settings") != settings:
        changed = sorted(k for k in settings if key.get("settings", {}).get(k) != settings[k])
        return f"it was graded with other settings ({', '.join(changed) or 'unknown'} changed)"
    if key.get("content_sha256") != digest:
        return "its files changed since it was graded"
    return ""


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
    problem = entry.problem
    if not problem:
        try:
            report = score_path(entry.path, exercise_ids, limits=limits, hide=hide, fork=fork)
            return report.to_dict(), formats.render_markdown(report)
        except (SubmissionError, catalog.CatalogError) as exc:
            problem = str(exc)
    exercises = catalog.select(exercise_ids) if exercise_ids else []
    return _error_result(entry, problem, exercises), f"## {entry.name}\n\nNot graded: {problem}\n"


def flag_odd_selections(results: dict[str, dict]) -> list[str]:
    """Flag each result graded on another set of exercises than most of the batch; return their
    names. Without ``--exercise`` a take-home's entries are graded on the manifest each one
    carries, which its candidate could have edited."""
    selections = {name: tuple(sorted(ex["id"] for ex in data["exercises"]))
                  for name, data in results.items() if data["exercises"]}
    if not selections:
        return []
    counts: dict[tuple[str, ...], int] = {}
    for selection in selections.values():
        counts[selection] = counts.get(selection, 0) + 1
    usual = max(counts, key=counts.get)
    odd = [name for name, selection in selections.items() if selection != usual]
    for name in odd:
        flag = (f"graded on other exercises than most of this batch ({', '.join(selections[name])} "
                f"instead of {', '.join(usual)}): was its take-home manifest edited? Grade with "
                "--exercise to fix the selection")
        if flag not in results[name]["flags"]:
            results[name]["flags"].append(flag)
    return odd


def write_gradebook(out: Path, names: list[str], exercises: list[catalog.Exercise] | None = None) -> Path:
    """``gradebook.csv``: one row per submission with a result on disk, a column per exercise.

    The columns are ``exercises`` when given, else every catalog exercise some result graded.
    """
    path = out / "gradebook.csv"
    results = {}
    for name in names:
        result_path = out / "results" / f"{name}.json"
        if result_path.is_file():
            results[name] = json.loads(result_path.read_text(encoding="utf-8"))
    if exercises is None:
        graded = {ex["id"] for data in results.values() for ex in data["exercises"]}
        exercises = [ex for ex in catalog.load_catalog().values() if ex.id in graded]
    rows = []
    for name, data in results.items():
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
    """Progress on ``stream``: on a terminal, a rich progress bar with the time left (in colour
    unless ``NO_COLOR`` is set); otherwise (CI logs, pipes) one plain line per submission."""

    def __init__(self, total: int, stream: TextIO = sys.stderr) -> None:
        self.total, self.done, self.stream = total, 0, stream
        self.started = time.monotonic()
        self.bar = None
        terminal = _console.console(stream) if total else None
        if terminal is not None and terminal.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("[bold]grading"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("eta"), TimeRemainingColumn(), TextColumn("{task.fields[last]}"),
                                console=terminal)
            self.task = self.bar.add_task("grading", total=total, last="")
            self.bar.start()

    def update(self, name: str, summary: str) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(self.task, advance=1, last=f"{name}: {summary}")
            if self.done == self.total:
                self.close()
            return
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done)
        self.stream.write(f"[{self.done:>{len(str(self.total))}}/{self.total}] {name}: {summary} "
                          f"(eta {eta:.0f} s)\n")
        self.stream.flush()

    def close(self) -> None:
        """Stop the bar (a no-op without one, or when it is stopped already)."""
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def write_reports(out: Path, names: list[str], threshold: float = similarity.PAIR_THRESHOLD
                  ) -> list[similarity.Pair]:
    """From the results stored in ``out/results`` for ``names``: the pairs of submissions whose
    code for an exercise is a near copy of each other's (``similarity.near_copy_pairs`` at
    ``threshold``), written to ``near-copies.csv``; a hiring report per submission
    (``html/<name>.html``, its near-copy pairs among the review items); and ``index.html``
    ranking the batch. Returns the pairs."""
    reports = {}
    for name in names:
        path = out / "results" / f"{name}.json"
        if path.is_file():
            reports[name] = Report.from_dict(json.loads(path.read_text(encoding="utf-8")))
    pairs = similarity.near_copy_pairs(
        {name: {ex.id: ex.code for ex in report.exercises} for name, report in reports.items()}, threshold)
    for name, report in reports.items():
        _write_atomic(out / "html" / f"{name}.html", html_report.render_html(report, pairs, name))
    _write_atomic(out / "index.html", html_report.render_index(reports, pairs, threshold))
    tmp = out / ".near-copies.csv.tmp"
    with open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["exercise", "submission", "other_submission", "similarity", "shared_fingerprints"])
        writer.writerows([p.exercise, p.first, p.second, f"{p.similarity:.3f}", p.shared] for p in pairs)
    os.replace(tmp, out / "near-copies.csv")
    return pairs


def _report_pairs(pairs: list[similarity.Pair], out: Path, log: Callable[[str], None]) -> None:
    """The batch summary's lines on near copies and where the reports are."""
    if pairs:
        log(f"{len(pairs)} near-copy pair(s) of submissions, for review (also in {out / 'index.html'}):")
        for p in pairs:
            log(f"  {p.exercise}: {p.first} and {p.second} (similarity {p.similarity:.2f})")
    else:
        log("no two submissions are near copies of each other")


def _grade_locally(todo: list[Entry], exercise_ids: list[str] | None, limits: Limits,
                   hide: list[Path], fork: bool, jobs: int) -> Iterator[list[tuple[Entry, Future]]]:
    """Grade ``todo`` in ``jobs`` threads here; yield the (entry, future) pairs that finished,
    as they finish. A child that reported its end is waited for in the background while the next
    submission is graded (``sandbox.ending_in_background``)."""
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        with sandbox.ending_in_background():
            pending = {pool.submit(grade_entry, e, exercise_ids, limits, hide, fork): e for e in todo}
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                yield [(pending.pop(future), future) for future in finished]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def run_batch(folder: Path, out: Path, *, exercise_ids: list[str] | None = None, jobs: int = 1,
              force: bool = False, limits: Limits | None = None, fork: bool = True,
              copy_threshold: float = similarity.PAIR_THRESHOLD,
              log: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
              cluster: dask_batch.Cluster | None = None) -> Path:
    """Grade every submission in ``folder`` into ``out``; return the gradebook's path.

    ``fork``: fork each grading child from a fork server that imported the frameworks once
    (``grader.engine.forkserver``, which the process's next gradings reuse until it has been
    idle a minute), instead of starting a fresh interpreter per submission.
    ``cluster``: grade on this Dask cluster (``grader.workflows.dask_batch``), one task per submission,
    instead of in ``jobs`` threads here.

    A stored result is reused only when it was graded from the same files (``content_digest``)
    with the same settings (``grading_settings``); otherwise the submission is graded again.
    ``copy_threshold``: where two submissions count as near copies (``write_reports``).

    Raises:
        BatchError: ``folder`` is missing, not a folder or empty, ``out`` is a file, or
            ``copy_threshold`` is not in (0, 1]; or the ``cluster`` cannot be reached or cannot grade.
        catalog.CatalogError: an exercise id is unknown.
    """
    try:
        similarity.check_threshold(copy_threshold)
    except ValueError as exc:
        raise BatchError(str(exc)) from None
    entries = discover(Path(folder))
    exercises = catalog.select(exercise_ids) if exercise_ids else None
    limits = limits or Limits()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BatchError(f"--out must be a folder, and {out} is a file")
    (out / "results").mkdir(parents=True, exist_ok=True)
    settings = grading_settings(exercise_ids, limits)
    digests = {e.name: content_digest(e.path) for e in entries}
    todo, skipped = [], 0
    for entry in entries:
        stored_path = out / "results" / f"{entry.name}.json"
        if force or not stored_path.is_file():
            todo.append(entry)
            continue
        try:
            stored = json.loads(stored_path.read_text(encoding="utf-8"))
        except ValueError:
            stored = None
        reason = stale_reason(stored, digests[entry.name], settings)
        if reason:
            log(f"{entry.name}: {reason}: grading it again")
            todo.append(entry)
        else:
            skipped += 1
    if skipped:
        log(f"{skipped} submission(s) already graded in {out} with these settings and files "
            "(use --force to grade again)")
    for entry in (e for e in todo if e.problem):
        log(f"{entry.name}: {entry.problem}")
    hide = [Path(folder).resolve(), out.resolve()]
    progress = _Progress(len(todo))
    dask_grading = None
    if cluster is None:
        grading = _grade_locally(todo, exercise_ids, limits, hide, fork, jobs)
    else:  # grader.workflows.dask_batch: connects, or fails clearly, before anything is graded
        from grader.workflows.dask_batch import DaskGrading

        dask_grading = DaskGrading(cluster, log)
        grading = dask_grading.grade(todo, exercise_ids, limits, hide, fork)
    try:
        for finished in grading:
            for entry, future in finished:
                try:
                    result, feedback = future.result()
                except Exception as exc:  # noqa: BLE001 - one submission never stops the batch
                    result = _error_result(entry, f"grader error: {type(exc).__name__}: {exc}",
                                           exercises or [])
                    feedback = f"## {entry.name}\n\nNot graded: {result['problems'][0]}\n"
                _write_atomic(out / "feedback" / f"{entry.name}.md", feedback)
                result["batch"] = {"content_sha256": digests[entry.name], "settings": settings}
                _write_atomic(out / "results" / f"{entry.name}.json", json.dumps(result, indent=2))
                progress.update(entry.name, f"{result['score']:g}/{result['max_score']:g}")
    except KeyboardInterrupt:
        grading.close()
        kill_all()
        log(f"interrupted: results so far are in {out}; run again to grade the rest")
        raise
    finally:
        progress.close()
        grading.close()
        if dask_grading is not None:
            dask_grading.close()
    if exercise_ids is None:
        stored = {e.name: json.loads((out / "results" / f"{e.name}.json").read_text(encoding="utf-8"))
                  for e in entries if (out / "results" / f"{e.name}.json").is_file()}
        for name in flag_odd_selections(stored):
            log(f"{name}: {stored[name]['flags'][-1]}")
            _write_atomic(out / "results" / f"{name}.json", json.dumps(stored[name], indent=2))
    _report_pairs(write_reports(out, [e.name for e in entries], copy_threshold), out, log)
    return write_gradebook(out, [e.name for e in entries], exercises)
