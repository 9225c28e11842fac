"""The ``grader`` command line. Imports neither torch nor TensorFlow in the parent process."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from grader import __version__, catalog
from grader._options import JOBS, MINUTES, PERCENT, add_limit_options, number
from grader.engine import similarity
from grader.errors import GraderError, UsageError
from grader.reports import console as _console
from grader.workflows.dask_batch import cluster_option, scheduler_file_option


def check_output_file(path: str | None) -> None:
    """Refuse an ``-o`` path that cannot be written, before the grading starts."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"--output {path} is a folder; give a file name")
    if not target.parent.is_dir():
        raise UsageError(f"--output {path}: folder {target.parent} does not exist")
    if not os.access(target.parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UsageError(f"--output {path}: not writable")


def _cmd_score(args: argparse.Namespace) -> int:
    from grader.engine import scoring
    from grader.engine.sandbox import Limits
    from grader.reports import formats

    check_output_file(args.output)
    limits = Limits(wall_s=args.timeout, test_s=args.test_timeout, memory_mb=args.memory_mb)
    submission = args.submission or str(catalog.KIT_ROOT / "exercises")
    if submission.endswith(".ipynb"):
        from grader.workflows.notebooks import score_notebook

        report = score_notebook(Path(submission), args.exercise, limits=limits,
                                warn=lambda m: print(f"grader: warning: {m}", file=sys.stderr))
    else:
        # --- learner: the kit's own exercises/ is the learner's work; remember the result. ---
        from grader import progress

        own = Path(submission).resolve() == (catalog.KIT_ROOT / "exercises").resolve()
        digests = progress.module_digests(Path(submission), list(catalog.load_catalog().values())) if own else {}
        report = scoring.score_path(submission, args.exercise, limits=limits)
        if own:
            progress.remember_report(report, digests)
        # --- end learner ---
    text = formats.render(report, args.format)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.format} report to {args.output}: "
              f"{report.score:g}/{report.max_score:g}", file=sys.stderr)
    elif args.format == "table" and (console := _console.console()).is_terminal:
        formats.print_table(report, console)
    else:
        sys.stdout.write(text)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(formats.render_markdown(report))
    if args.fail_under is not None:
        pct = 100 * report.score / report.max_score if report.max_score else 0.0
        if pct < args.fail_under:
            print(f"grader: score {pct:.1f}% is under --fail-under {args.fail_under:g}%",
                  file=sys.stderr)
            return 1
    return 0


def _cmd_batch(args: argparse.Namespace) -> int:
    from grader.engine.sandbox import Limits
    from grader.workflows.batch import run_batch

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {args.out} is a file; give a folder for the results")
    limits = Limits(wall_s=args.timeout, test_s=args.test_timeout, memory_mb=args.memory_mb)
    gradebook = run_batch(Path(args.submissions), Path(args.out), exercise_ids=args.exercise,
                          jobs=args.jobs, force=args.force, limits=limits,
                          fork=not args.no_forkserver, copy_threshold=args.copy_threshold,
                          cluster=args.cluster)
    print(f"gradebook: {gradebook}\nper-submission results: {Path(args.out) / 'results'}\n"
          f"feedback: {Path(args.out) / 'feedback'}\nreports: {Path(args.out) / 'index.html'} "
          f"(one per submission in {Path(args.out) / 'html'})")
    return 0


# --- learner: `grader list` shows each exercise's remembered state (grader.progress); runs nothing. ---
def _cmd_list(args: argparse.Namespace) -> int:
    from grader import progress
    from grader.workflows import status

    rows = catalog.select(framework=args.framework, topics=[args.topic] if args.topic else None,
                          difficulty=args.difficulty, max_minutes=args.max_minutes)
    store, root = progress.Store(), catalog.KIT_ROOT / "exercises"
    states = {ex.id: status.remembered_status(ex, root, store) for ex in rows}
    marks = {i: s.state if s else "not checked" for i, s in states.items()}
    console = _console.console()
    if console.is_terminal:
        from rich.table import Table
        from rich.text import Text

        table = Table(show_edge=False, pad_edge=False)
        for name in ("exercise", "level", "min", "state", "title"):
            table.add_column(name, justify="right" if name == "min" else "left", no_wrap=name != "title")
        for ex in rows:
            table.add_row(ex.id, ex.difficulty, str(ex.minutes),
                          Text(marks[ex.id], style=_console.STATE_STYLES.get(marks[ex.id], "dim")), ex.title)
        console.print(table)
    else:
        width = max([len(ex.id) for ex in rows] + [2])
        mark_width = max([len(m) for m in marks.values()] + [4])
        for ex in rows:
            print(f"{ex.id:<{width}}  {ex.difficulty:<6}  {ex.minutes:>3} min  {marks[ex.id]:<{mark_width}}  "
                  f"{ex.title}")
    done = sum(m == "done" for m in marks.values())
    print(f"{len(rows)} exercise(s), {done} done (remembered checks; `grader status` checks what changed)",
          file=sys.stderr)
    return 0
# --- end learner ---


def _cmd_new(args: argparse.Namespace) -> int:
    from grader.workflows.scaffold import scaffold

    for path in scaffold(args.id, args.title, args.difficulty, args.minutes, args.topic):
        print(path.relative_to(catalog.KIT_ROOT))
    print(f"wrote {args.id} and its catalog entry: fill in the TODOs (docs/writing-an-exercise.md), "
          f"then `grader verify {args.id}`", file=sys.stderr)
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from grader.workflows.verify import verify

    def progress(name: str, report) -> None:
        print(f"  graded {name} ({report.duration_s:.0f} s)", file=sys.stderr)

    print("grading references, stubs and wrong solutions...", file=sys.stderr)
    verdicts, reports = verify(args.ids or None, jobs=args.jobs, on_run=progress)
    unsound = 0
    for verdict in verdicts:
        problems = verdict.problems()
        unsound += bool(problems)
        print(f"FAIL {verdict.id}" if problems
              else f"ok   {verdict.id} ({len(verdict.wrong)} wrong solutions caught)")
        for problem in problems:
            print(f"       {problem}")
    run_problems = [f"{r.submission}: {p}" for r in reports for p in r.problems]
    for problem in run_problems:
        print(f"FAIL grading run {problem}")
    print(f"{len(verdicts) - unsound}/{len(verdicts)} exercises sound")
    bad = unsound or run_problems
    return 1 if bad else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grader", description="Grade PyTorch and TensorFlow exercises of the tensor-drills kit.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--kit", metavar="DIR",
                        help="the kit to work on (default: $DRILLS_KIT_ROOT, else the working "
                             "directory or the nearest folder above it with catalog.toml and "
                             f"exercises/, else the installed package's folder; now: {catalog.KIT_ROOT})")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    score = sub.add_parser(
        "score", help="run the public and hidden tests against a submission and print its score",
        description="Run the public and hidden tests of the chosen exercises against SUBMISSION "
                    "(a directory laid out like exercises/, or a Jupyter notebook whose answer "
                    "cells are graded as the exercise's module) in a child process, and report "
                    "points per test, per exercise and in total.")
    score.add_argument("submission", nargs="?",
                       help="a folder laid out like exercises/ or a .zip of one, wrapped in any "
                            "folders (a returned take-home, say; default: the kit's exercises/), "
                            "or a .ipynb notebook answering one exercise (its id from --exercise "
                            "or from the notebook's metadata)")
    score.add_argument("--exercise", "-e", action="append", metavar="ID",
                       help="grade only this exercise id (repeatable; default: a take-home's "
                            "exercises, from the manifest it carries, else all)")
    score.add_argument("--format", "-f", default="table",
                       choices=("table", "json", "gradescope", "junit", "markdown", "html"),
                       help="report format (default: table); html is a self-contained hiring "
                            "report (per skill, in plain words, with review flags, similarity "
                            "to the reference and the candidate's code). A Markdown summary is also appended to "
                            "$GITHUB_STEP_SUMMARY when that is set")
    score.add_argument("--output", "-o", metavar="FILE", help="write the report here instead of stdout")
    score.add_argument("--fail-under", type=PERCENT, metavar="PCT",
                       help="exit with status 1 when the score is under PCT percent (for CI)")
    add_limit_options(score, wall="each submission", memory=True)
    score.set_defaults(func=_cmd_score)

    batch = sub.add_parser(
        "batch", help="grade every submission (subfolder or .zip) of a folder",
        description="Grade every subfolder or .zip of SUBMISSIONS as one submission, in parallel "
                    "(named after the subfolder or zip; the exercise modules are found however "
                    "they are wrapped). Each result is written as soon as it is ready, so an "
                    "interrupted batch resumes where it stopped (a submission whose files or "
                    "grading settings changed is graded again); writes a gradebook CSV, "
                    "per-submission feedback, an HTML report per submission and an index page "
                    "ranking the batch, with the pairs of submissions that are near copies of "
                    "each other.")
    batch.add_argument("submissions", metavar="SUBMISSIONS", help="folder of submissions")
    batch.add_argument("--out", default="grader-results", metavar="DIR",
                       help="where results, feedback and gradebook.csv go (default: grader-results)")
    batch.add_argument("--jobs", "-j", type=JOBS, default=max(1, (os.cpu_count() or 2) // 2),
                       metavar="N", help="submissions graded at once, 1 or more (default: half the CPUs)")
    batch.add_argument("--exercise", "-e", action="append", metavar="ID",
                       help="grade only this exercise id (repeatable; default: a take-home's "
                            "exercises, from the manifest each submission carries, else all)")
    batch.add_argument("--force", action="store_true", help="grade again what is already graded")
    batch.add_argument("--copy-threshold", type=number(float, "a number above 0 and at most 1", low=0,
                                                       low_included=False, high=1),
                       default=similarity.PAIR_THRESHOLD, metavar="X",
                       help="flag two submissions as near copies of each other when at least this "
                            "share of one's code fingerprints (stub left out) is in the other's, "
                            f"above 0 and at most 1 (default: {similarity.PAIR_THRESHOLD})")
    batch.add_argument("--no-forkserver", action="store_true",
                       help="start a fresh interpreter per submission instead of forking it from "
                            "a server that imported torch/TensorFlow once (slower; for debugging)")
    where = batch.add_mutually_exclusive_group()
    where.add_argument("--cluster", type=cluster_option, metavar="ADDRESS",
                       help="grade on a Dask cluster, one task per submission: a scheduler's "
                            "address (tcp://HOST:PORT), or local:N for N worker processes on this "
                            "machine (needs the kit's 'distributed' extra; --jobs is then unused)")
    where.add_argument("--scheduler-file", dest="cluster", type=scheduler_file_option, metavar="FILE",
                       help="grade on the Dask cluster whose scheduler wrote FILE "
                            "(dask scheduler --scheduler-file FILE)")
    add_limit_options(batch, wall="each submission", memory=True)
    batch.set_defaults(func=_cmd_batch)

    ver = sub.add_parser(
        "verify", help="maintainers: check that exercises are sound",
        description="For each exercise (default: all), check that the reference scores full "
                    "marks, the untouched stub scores 0, and every wrong solution fails a hidden "
                    "test. Exit status 1 when any does not.")
    ver.add_argument("ids", nargs="*", metavar="ID", help="exercise ids (default: all)")
    ver.add_argument("--jobs", "-j", type=JOBS, default=2, metavar="N",
                     help="grading runs at once (default: 2)")
    ver.set_defaults(func=_cmd_verify)

    new = sub.add_parser(
        "new", help="maintainers: start a new exercise (its files and catalog entry)",
        description="Write the files of a new exercise as the kit's rules want them "
                    "(docs/writing-an-exercise.md): the stub, its public test, the reference, the "
                    "hidden test, the contract table, the wrong-solution folder, and its catalog "
                    "entry. Each holds TODOs; `grader verify ID` passes once they are done.")
    new.add_argument("id", metavar="ID", help="<framework>.<topic>.<name>, or crossframework.<name>")
    new.add_argument("--title", required=True, help="the exercise's title in the catalog")
    new.add_argument("--difficulty", choices=catalog.DIFFICULTIES, default="medium")
    new.add_argument("--minutes", type=MINUTES, default=15, metavar="N", help="time estimate (default: 15)")
    new.add_argument("--topic", default="interop", help="topic of a crossframework exercise (default: interop)")
    new.set_defaults(func=_cmd_new)

    lst = sub.add_parser("list", help="list the exercises, with filters and your progress",
                         description="List the exercises of the catalog, with each one's state from "
                                     "the remembered checks of your exercises/ (done, public checks "
                                     "pass, failing, not started, or not checked: its current "
                                     "content was never checked; `grader status` checks it). Runs "
                                     "nothing.")
    lst.add_argument("--framework", choices=catalog.FRAMEWORKS)
    lst.add_argument("--topic", help="e.g. tensors, autograd, nn, losses, optim")
    lst.add_argument("--difficulty", choices=catalog.DIFFICULTIES)
    lst.add_argument("--max-minutes", type=MINUTES, metavar="N", help="only exercises of at most N minutes")
    lst.set_defaults(func=_cmd_list)

    # Learner (status, watch, hint, reset, attempts, restore) and hiring (release) commands live
    # in their own modules.
    from grader.workflows import mutants, release, status, stubs, watch

    for module in (status, watch, stubs, release, mutants):
        module.register(sub)
    # Classroom and CI integrations: nbgrader notebooks, Gradescope autograder bundles.
    from grader.workflows import gradescope, nbgrader_export

    for module in (nbgrader_export, gradescope):
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``grader`` console script; returns the process exit status."""
    # --kit first: the subcommands' defaults (e.g. the kit's exercises/ folder) depend on it.
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--kit")
    kit = early.parse_known_args(argv)[0].kit
    try:
        if kit:
            catalog.use_kit(Path(kit))
    except GraderError as exc:
        print(f"grader: error: {exc}", file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except GraderError as exc:
        print(f"grader: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("grader: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
