"""The commands a learner runs on their own copy of the kit: ``score`` (which also grades any
submission, a returned take-home say), ``list``, ``status``, ``watch``, ``hint``, ``reset``,
``attempts`` and ``restore``.

Each ``add_*`` adds one subcommand to the ``grader`` parser; each ``_cmd_*`` turns the parsed
arguments into a call of the workflow that does the work, and prints what it returns.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from grader import catalog
from grader._options import MINUTES, PERCENT, add_exercise_option, add_limit_options
from grader.errors import UsageError
from grader.reports import console as _console


def _exercises_dir(parser: argparse.ArgumentParser, *, option: bool = False) -> None:
    """The folder of the learner's modules: an optional ``DIR`` argument, or ``--dir DIR``."""
    names, extra = (["--dir"], {}) if option else (["dir"], {"nargs": "?"})
    parser.add_argument(*names, **extra, default=str(catalog.KIT_ROOT / "exercises"), metavar="DIR",
                        help="folder laid out like exercises/ (default: the kit's exercises/)")


def _selection_options(parser: argparse.ArgumentParser) -> None:
    """``--framework`` and ``--topic`` (repeatable), as ``catalog.select`` takes them."""
    parser.add_argument("--framework", choices=catalog.FRAMEWORKS)
    parser.add_argument("--topic", action="append", metavar="TOPIC",
                        help="only this topic, e.g. autograd or pytorch.autograd (repeatable)")


def check_output_file(path: str | None, option: str = "--output") -> None:
    """Refuse an output file (``option``'s value) that cannot be written, before any work starts."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{option} {path} is a folder; give a file name")
    if not target.parent.is_dir():
        raise UsageError(f"{option} {path}: folder {target.parent} does not exist")
    if not os.access(target.parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UsageError(f"{option} {path}: not writable")


def _cmd_score(args: argparse.Namespace) -> int:
    from grader.engine.sandbox import Limits
    from grader.reports import formats
    from grader.workflows.score import score

    check_output_file(args.output)
    limits = Limits(wall_s=args.timeout, test_s=args.test_timeout, memory_mb=args.memory_mb)
    report = score(args.submission, args.exercise, limits=limits,
                   warn=lambda m: print(f"grader: warning: {m}", file=sys.stderr))
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


def add_score(sub) -> None:
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
    add_exercise_option(score, "grade", "a take-home's exercises, from the manifest it carries, else all")
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


def _cmd_list(args: argparse.Namespace) -> int:
    from grader.workflows.status import remembered_states

    rows = catalog.select(framework=args.framework, topics=[args.topic] if args.topic else None,
                          difficulty=args.difficulty, max_minutes=args.max_minutes)
    marks = remembered_states(rows)
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


def add_list(sub) -> None:
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


def _cmd_status(args: argparse.Namespace) -> int:
    from grader.workflows import status

    if not Path(args.dir).is_dir():
        raise UsageError(f"not a folder: {args.dir}")
    exercises = catalog.select(framework=args.framework, topics=args.topic)
    if not exercises:
        raise UsageError("no exercise matches these filters (see `grader list`)")
    progress_ = status.collect(Path(args.dir), exercises, full=args.full, rerun=args.rerun,
                               timeout_s=args.timeout, test_timeout_s=args.test_timeout)
    console = _console.console()
    if args.json:
        sys.stdout.write(json.dumps(progress_.to_dict(), indent=2) + "\n")
    elif console.is_terminal:
        status.print_rich(progress_, console)
    else:
        sys.stdout.write(status.render(progress_))
    return 1 if progress_.problems else 0


def add_status(sub) -> None:
    status = sub.add_parser(
        "status", help="your progress: which exercises are done, failing or not started",
        description="Show, per topic and exercise, the public check (the public tests) and the full "
                    "check (public and hidden tests, as `grader score` runs them) of DIR's modules, "
                    "with counts per difficulty and the next exercise to try (the easiest one not "
                    "done). An exercise is done only when the full check of its current content "
                    "gave full marks. Results are remembered per file content in the kit's "
                    ".grader/ folder: only changed exercises run again.")
    _exercises_dir(status)
    _selection_options(status)
    status.add_argument("--full", action="store_true",
                        help="also run the hidden tests of the exercises whose public checks pass and "
                             "whose current content has no full check yet")
    status.add_argument("--rerun", action="store_true",
                        help="run the checks again instead of using remembered results")
    status.add_argument("--json", action="store_true", help="print the progress as JSON")
    add_limit_options(status, wall="each run (public tests, full check)")
    status.set_defaults(func=_cmd_status)


def _cmd_watch(args: argparse.Namespace) -> int:
    from grader.workflows.watch import Watcher

    root = Path(args.dir)
    if not root.is_dir():
        raise UsageError(f"not a folder: {args.dir}")
    exercises = catalog.select(framework=args.framework, topics=args.topic)
    start = catalog.get_exercise(args.id) if args.id else None
    if start is not None and start not in exercises:
        exercises.append(start)
    if not exercises:
        raise UsageError("no exercise matches these filters (see `grader list`)")
    try:
        import watchfiles  # noqa: F401
    except ImportError:
        raise UsageError("`grader watch` needs the watchfiles package: pip install watchfiles") from None
    watcher = Watcher(root, exercises, _console.console(), timeout_s=args.timeout,
                      test_timeout_s=args.test_timeout)
    return watcher.run(start)


def add_watch(sub) -> None:
    watch = sub.add_parser(
        "watch", help="check the exercise you are editing on every save",
        description="Check an exercise (ID, else the next one not done), then watch DIR: every save "
                    "of an exercise module checks that exercise (public tests, then the hidden ones "
                    "once those pass) and shows the first failing check; a done exercise moves you "
                    "to the next. Results are remembered for `grader status` and `grader list`. "
                    "Ends when every selected exercise is done, or on Ctrl-C.")
    watch.add_argument("id", nargs="?", metavar="ID", help="the exercise to start with")
    _exercises_dir(watch, option=True)
    _selection_options(watch)
    add_limit_options(watch, wall="each check")
    watch.set_defaults(func=_cmd_watch)


def _cmd_hint(args: argparse.Namespace) -> int:
    from grader.workflows.stubs import hints

    ex = catalog.get_exercise(args.id)
    text = hints(ex, Path(args.from_dir) if args.from_dir else None)
    print(f"{ex.id}: {ex.title}")
    print(f"{ex.difficulty}, about {ex.minutes} min; edit exercises/{ex.relpath.as_posix()}\n")
    print(f"Hints\n-----\n{text}" if text else "This exercise's stub has no Hints section: "
          "its docstring's Contract is the specification.")
    return 0


def add_hint(sub) -> None:
    hint = sub.add_parser(
        "hint", help="show the hints of an exercise",
        description="Print the Hints section of an exercise stub's docstring, with its title and "
                    "time estimate. The hints come from the pristine stub, so editing your copy "
                    "does not lose them.")
    hint.add_argument("id", metavar="ID", help="exercise id, e.g. pytorch.tensors.broadcasting")
    hint.add_argument("--from", dest="from_dir", metavar="DIR",
                      help="folder of untouched stubs to read the hints from (see `grader reset -h`)")
    hint.set_defaults(func=_cmd_hint)


def _confirm(question: str, yes: bool) -> bool:
    if yes:
        return True
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() in ("y", "yes"):
        return True
    print("nothing changed (pass --yes to skip this question)", file=sys.stderr)
    return False


def _cmd_reset(args: argparse.Namespace) -> int:
    from grader.workflows.stubs import attempts_dir, reset

    ex = catalog.get_exercise(args.id)
    root = Path(args.dir)
    from_dir = Path(args.from_dir) if args.from_dir else None
    target = root / ex.relpath
    if not _confirm(f"Replace {target} with the untouched stub of {ex.id}? "
                    f"(your version is kept in {attempts_dir(ex)})", args.yes):
        return 1
    module, kept, origin = reset(ex, root, from_dir)
    if kept is None:
        print(f"{module} is the untouched stub (from {origin})")
    else:
        print(f"reset {module} from {origin}\nyour version is kept as attempt {kept.number}: {kept.path}\n"
              f"(`grader attempts {ex.id}` lists them, `grader restore {ex.id} {kept.number}` brings it back)")
    return 0


def add_reset(sub) -> None:
    rst = sub.add_parser(
        "reset", help="restore one exercise to its untouched stub (your version is kept)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Replace one exercise module in DIR with its untouched stub, leaving every "
                    "other file alone. Your version is kept first, as a numbered attempt in the "
                    "kit's .grader/attempts/<id>/: every reset keeps one, none is overwritten "
                    "(`grader attempts`, `grader restore`).\n\n"
                    "The untouched stub comes from, in order:\n"
                    "  1. --from DIR, a folder laid out like exercises/ with untouched stubs;\n"
                    "  2. the kit's git history: the newest committed version that is still a\n"
                    "     stub (so committing your own work does not break reset);\n"
                    "  3. grader/_stubs/, the copies a `grader release` bundle ships.\n"
                    "Otherwise it stops with an error asking for --from.")
    rst.add_argument("id", metavar="ID", help="exercise id, e.g. pytorch.tensors.broadcasting")
    _exercises_dir(rst)
    rst.add_argument("--from", dest="from_dir", metavar="DIR",
                     help="folder laid out like exercises/ holding the untouched stubs")
    rst.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    rst.set_defaults(func=_cmd_reset)


def _cmd_attempts(args: argparse.Namespace) -> int:
    from grader import progress
    from grader.workflows.stubs import attempts

    exercises = [catalog.get_exercise(args.id)] if args.id else list(catalog.load_catalog().values())
    shown = 0
    for ex in exercises:
        kept = attempts(ex)
        if kept:
            print(ex.id)
        for attempt in kept:
            lines = len(attempt.path.read_bytes().splitlines())
            print(f"  {attempt.number:>3}  {attempt.saved_at}  {lines:>4} lines  {attempt.path}")
        shown += len(kept)
    if not shown:
        print(f"no kept attempts{' of ' + args.id if args.id else ''} in {progress.state_dir() / 'attempts'} "
              "(`grader reset` keeps your version there)", file=sys.stderr)
    return 0


def add_attempts(sub) -> None:
    att = sub.add_parser(
        "attempts", help="list the versions of your code that reset and restore kept",
        description="List the kept attempts (number, when it was kept, size, file), of one exercise "
                    "or of all.")
    att.add_argument("id", nargs="?", metavar="ID", help="exercise id (default: every exercise)")
    att.set_defaults(func=_cmd_attempts)


def _cmd_restore(args: argparse.Namespace) -> int:
    from grader.workflows.stubs import restore

    ex = catalog.get_exercise(args.id)
    root = Path(args.dir)
    which = f"attempt {args.number}" if args.number is not None else "your newest kept attempt"
    if not _confirm(f"Replace {root / ex.relpath} with {which} of {ex.id}? "
                    f"(the version there now is kept too)", args.yes):
        return 1
    module, chosen, kept = restore(ex, root, args.number)
    print(f"restored attempt {chosen.number} ({chosen.saved_at}) to {module}"
          + (f"\nthe version it replaced is kept as attempt {kept.number}: {kept.path}" if kept else ""))
    return 0


def add_restore(sub) -> None:
    rsr = sub.add_parser(
        "restore", help="bring back a kept attempt of one exercise",
        description="Put a kept attempt (default: the newest) back as the exercise module in DIR. "
                    "The version it replaces is kept as an attempt too, unless it is the untouched "
                    "stub or already kept.")
    rsr.add_argument("id", metavar="ID", help="exercise id, e.g. pytorch.tensors.broadcasting")
    rsr.add_argument("number", nargs="?", type=int, metavar="N",
                     help="the attempt's number, from `grader attempts ID` (default: the newest)")
    _exercises_dir(rsr)
    rsr.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    rsr.set_defaults(func=_cmd_restore)
