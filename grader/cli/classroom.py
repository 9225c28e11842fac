"""The commands a teacher or a hiring team runs over many learners' work: ``batch`` (grade a
folder of submissions, here or on a Dask cluster), ``release`` (a take-home bundle), ``nbgrader
export`` and ``gradescope build`` (the classroom platforms' formats).

Each ``add_*`` adds one subcommand to the ``grader`` parser; each ``_cmd_*`` turns the parsed
arguments into a call of the workflow that does the work, and prints what it returns.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from grader._options import JOBS, MINUTES, add_exercise_option, add_limit_options, number, usage_type
from grader.engine import similarity
from grader.errors import UsageError
from grader.workflows.dask_batch import parse_cluster, read_scheduler_file


def _platform_command(sub, name: str, help: str, description: str):
    """``grader NAME ACTION``, a classroom platform's command; returns its ACTION subparsers."""
    command = sub.add_parser(name, help=help, description=description)
    return command.add_subparsers(dest=f"{name}_command", required=True, metavar="ACTION")


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


def add_batch(sub) -> None:
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
    add_exercise_option(batch, "grade", "a take-home's exercises, from the manifest each submission "
                                     "carries, else all")
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
    where.add_argument("--cluster", type=usage_type(parse_cluster), metavar="ADDRESS",
                       help="grade on a Dask cluster, one task per submission: a scheduler's "
                            "address (tcp://HOST:PORT), or local:N for N worker processes on this "
                            "machine (needs the kit's 'distributed' extra; --jobs is then unused)")
    where.add_argument("--scheduler-file", dest="cluster", type=usage_type(read_scheduler_file),
                       metavar="FILE", help="grade on the Dask cluster whose scheduler wrote FILE "
                                            "(dask scheduler --scheduler-file FILE)")
    add_limit_options(batch, wall="each submission", memory=True)
    batch.set_defaults(func=_cmd_batch)


def _cmd_release(args: argparse.Namespace) -> int:
    from grader.workflows.release import choose, write_bundle

    exercises = choose(args.exercise, args.select, args.topic, args.minutes)
    out = write_bundle(Path(args.out_dir), exercises, args.minutes)
    for ex in exercises:
        print(f"  {ex.id:<44} {ex.difficulty:<6} {ex.minutes:>3} min")
    print(f"wrote a take-home of {len(exercises)} exercise(s), "
          f"{sum(ex.minutes for ex in exercises)} min, to {out} (see {out / 'README.md'})")
    return 0


def add_release(sub) -> None:
    rel = sub.add_parser(
        "release", help="hiring: write a take-home bundle for candidates",
        description="Write a self-contained take-home into OUT_DIR: the chosen stubs and their "
                    "public tests (laid out like exercises/), the grader's pytest plugin and "
                    "check library, a pyproject.toml (`pip install -e .` then `pytest`) and a "
                    "README with the task list, time budget and how to submit (zip the exercises "
                    "folder; grade it with `grader score` or `grader batch`). Nothing from "
                    "solutions/ is included; the bundle is checked for leaks before it is kept. "
                    "With --minutes, exercises are picked greedily: topics take turns, each adding "
                    "its first exercise (catalog order) that still fits the time left.")
    rel.add_argument("out_dir", metavar="OUT_DIR", help="where to write the bundle (absent or empty)")
    rel.add_argument("--exercise", "-e", action="append", metavar="ID",
                     help="include this exercise (repeatable); overrides --select and --topic")
    rel.add_argument("--select", action="append", metavar="PATTERN",
                     help="include ids matching this shell pattern, e.g. 'pytorch.autograd.*' (repeatable)")
    rel.add_argument("--topic", action="append", metavar="TOPIC",
                     help="cover this topic, e.g. autograd or pytorch.autograd (repeatable)")
    rel.add_argument("--minutes", type=MINUTES, metavar="N",
                     help="time budget: pick exercises whose minutes add up to at most N")
    rel.set_defaults(func=_cmd_release)


def _cmd_nbgrader_export(args: argparse.Namespace) -> int:
    from grader.workflows.nbgrader_export import export

    written = export(Path(args.course_dir), args.assignment, args.exercise)
    for path in written:
        print(path)
    print(f"{len(written)} source notebook(s) written; next: cd {args.course_dir} && "
          f"nbgrader generate_assignment {args.assignment}", file=sys.stderr)
    return 0


def add_nbgrader(sub) -> None:
    actions = _platform_command(sub, "nbgrader", help="classroom: export exercises as nbgrader notebooks",
                                description="Integration with nbgrader (https://nbgrader.readthedocs.io).")
    exp = actions.add_parser(
        "export", help="write nbgrader source notebooks, one per exercise",
        description="Write COURSE_DIR/source/ASSIGNMENT/<exercise id>.ipynb for each exercise: "
                    "the question, an answer cell (the stub, with the reference as the nbgrader "
                    "solution), and one autograded test cell per public and hidden test case, "
                    "worth the kit's points (CUDA-only cases are left out). Also writes "
                    "COURSE_DIR/nbgrader_config.py when there is none, and a copy of the grader's "
                    "test runtime beside the notebooks (so students can run the public tests). "
                    "Then run `nbgrader generate_assignment ASSIGNMENT` in COURSE_DIR. Hidden "
                    "tests run from this kit when nbgrader autogrades; feedback shows their "
                    "outcome and message, never their source.")
    exp.add_argument("course_dir", metavar="COURSE_DIR", help="the nbgrader course directory")
    exp.add_argument("--assignment", "-a", required=True, metavar="NAME",
                     help="nbgrader assignment name (letters, digits, '_', '-', '.')")
    add_exercise_option(exp, "export", "all")
    exp.set_defaults(func=_cmd_nbgrader_export)


def _cmd_gradescope_build(args: argparse.Namespace) -> int:
    from grader.workflows.gradescope import build

    ids = build(Path(args.out), args.exercise)
    print(f"wrote {args.out}: a Gradescope autograder for {len(ids)} exercise(s); upload it as the "
          "assignment's autograder (Ubuntu 24.04 base image)", file=sys.stderr)
    return 0


def add_gradescope(sub) -> None:
    actions = _platform_command(sub, "gradescope", help="classroom: build a Gradescope autograder zip",
                                description="Integration with Gradescope's programming assignments.")
    bld = actions.add_parser(
        "build", help="write an autograder bundle (setup.sh, run_autograder, the kit)",
        description="Write OUT.zip, an autograder per Gradescope's specification: setup.sh installs "
                    "Python, a CPU build of torch and the bundled kit; run_autograder grades each "
                    "submission (a folder laid out like exercises/, module files named like the "
                    "exercises' modules, or notebooks) on the public and hidden tests and writes "
                    "/autograder/results/results.json. The bundle holds the hidden tests but not "
                    "the reference solutions.")
    bld.add_argument("out", metavar="OUT.zip", help="where to write the zip")
    add_exercise_option(bld, "grade", "all")
    bld.set_defaults(func=_cmd_gradescope_build)
