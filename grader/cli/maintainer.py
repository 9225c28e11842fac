"""The commands a maintainer of the kit runs on the exercises themselves: ``verify`` (every
exercise is sound), ``new`` (scaffold an exercise) and ``mutants`` (how strong each hidden suite
is).

Each ``add_*`` adds one subcommand to the ``grader`` parser; each ``_cmd_*`` turns the parsed
arguments into a call of the workflow that does the work, and prints what it returns.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from grader import catalog
from grader._options import JOBS, MINUTES, POSITIVE_SECONDS
from grader.cli.learner import check_output_file
from grader.errors import UsageError

if TYPE_CHECKING:
    from grader.workflows.mutants import ExerciseMutation, Mutant


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


def add_verify(sub) -> None:
    ver = sub.add_parser(
        "verify", help="maintainers: check that exercises are sound",
        description="For each exercise (default: all), check that the reference scores full "
                    "marks, the untouched stub scores 0, and every wrong solution fails a hidden "
                    "test. Exit status 1 when any does not.")
    ver.add_argument("ids", nargs="*", metavar="ID", help="exercise ids (default: all)")
    ver.add_argument("--jobs", "-j", type=JOBS, default=2, metavar="N",
                     help="grading runs at once (default: 2)")
    ver.set_defaults(func=_cmd_verify)


def _cmd_new(args: argparse.Namespace) -> int:
    from grader.workflows.scaffold import scaffold

    for path in scaffold(args.id, args.title, args.difficulty, args.minutes, args.topic):
        print(path.relative_to(catalog.KIT_ROOT))
    print(f"wrote {args.id} and its catalog entry: fill in the TODOs (docs/writing-an-exercise.md), "
          f"then `grader verify {args.id}`", file=sys.stderr)
    return 0


def add_new(sub) -> None:
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


def _print_mutants(results: list[ExerciseMutation]) -> None:
    print(f"{'exercise':<40} {'mutants':>7} {'run':>5} {'killed':>6} {'timeout':>7} {'survived':>8} "
          f"{'equiv':>5} {'score':>6}")
    for r in results:
        ran = len(r.killed) + len(r.timed_out) + len(r.survived) + len(r.equivalent)
        score = "-" if r.score is None else f"{100 * r.score:.0f}%"
        print(f"{r.exercise:<40} {r.generated:>7} {ran:>5} {len(r.killed):>6} {len(r.timed_out):>7} "
              f"{len(r.survived):>8} {len(r.equivalent):>5} {score:>6}")
    for r in results:
        for mutant_id in r.survived:
            known = " (known: the baseline run had it too)" if mutant_id in r.known else ""
            print(f"\nsurvived{known}: {r.exercise} {mutant_id}\n{r.diffs[mutant_id]}", end="")


def _cmd_mutants(args: argparse.Namespace) -> int:
    from grader.workflows.mutants import equivalents_file, read_baseline, run_mutants

    ids = args.ids or list(catalog.load_catalog())
    for ex_id in ids:
        catalog.get_exercise(ex_id)  # unknown ids fail before any work starts
    check_output_file(args.json, "--json")
    baseline = None
    if args.baseline:
        try:
            baseline = read_baseline(Path(args.baseline))
        except FileNotFoundError:
            raise UsageError(f"--baseline {args.baseline}: no such file") from None
        except (ValueError, TypeError, KeyError) as exc:
            raise UsageError(f"--baseline {args.baseline}: not the --json output of grader mutants "
                             f"({type(exc).__name__}: {exc})") from None

    def progress(ex_id: str, mutant: Mutant, verdict: str) -> None:
        print(f"  {ex_id} {mutant.id}: {verdict}", file=sys.stderr)

    results = run_mutants(ids, sample=args.sample, seed=args.seed, budget_s=args.budget,
                          jobs=args.jobs, wall_s=args.timeout, baseline=baseline,
                          on_mutant=progress if args.verbose else None)
    _print_mutants(results)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) | {"score": r.score} for r in results], indent=2),
                                   encoding="utf-8")
    for r in results:
        if r.stale:
            name = equivalents_file(catalog.get_exercise(r.exercise)).name
            print(f"grader: warning: {name} records mutants the reference no longer yields (it changed "
                  f"since the review): {', '.join(r.stale)}", file=sys.stderr)
    new = sum(len(r.new_survivors) for r in results)
    if new:
        print(f"\n{new} new mutant(s) survived that are not recorded as equivalent: strengthen the hidden "
              "tests, or record a reviewed reason in the exercise's .mutants.toml", file=sys.stderr)
    return 1 if new else 0


def add_mutants(sub) -> None:
    parser = sub.add_parser(
        "mutants", help="maintainers: measure each hidden suite by mutation testing of the reference",
        description="Grade small changes (mutants) of each exercise's reference solution and report "
                    "how many the tests kill. Exit status 1 when a mutant survives that is not "
                    "recorded as equivalent in the exercise's .mutants.toml (nor, with --baseline, "
                    "known from an earlier run).")
    parser.add_argument("ids", nargs="*", metavar="ID", help="exercise ids (default: all)")
    parser.add_argument("--sample", type=JOBS, metavar="N",
                        help="grade at most N mutants per exercise, drawn with --seed")
    parser.add_argument("--seed", type=int, default=0, help="seed of --sample (default: 0)")
    parser.add_argument("--budget", type=POSITIVE_SECONDS, metavar="SECONDS",
                        help="stop starting new mutants of an exercise after this long")
    parser.add_argument("--jobs", "-j", type=JOBS, default=2, metavar="N",
                        help="mutants graded at once (default: 2)")
    parser.add_argument("--timeout", type=POSITIVE_SECONDS, default=120.0, metavar="S",
                        help="wall-clock limit per mutant in seconds (default: 120)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--baseline", metavar="FILE",
                        help="an earlier run's --json output: its survivors still count against the "
                             "score but are not new, so they do not fail the run")
    parser.add_argument("--verbose", "-v", action="store_true", help="print each mutant's verdict")
    parser.set_defaults(func=_cmd_mutants)
