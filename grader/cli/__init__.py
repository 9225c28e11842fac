"""The ``grader`` command line: ``main``, the one place where an error a user can fix
(``GraderError``) becomes ``grader: error: ...`` and exit status 2, and the parser, assembled from
the commands of those who run them:

- ``grader.cli.learner``: a learner on their own work (score, list, status, watch, hint, reset,
  attempts, restore);
- ``grader.cli.classroom``: a teacher or hiring team over many learners' work (batch, release,
  nbgrader, gradescope);
- ``grader.cli.maintainer``: a maintainer on the exercises (verify, new, mutants).

``grader.cli.autograder`` is the entry point a Gradescope bundle runs. All of the kit's argparse
code lives in this package (option types in ``grader._options``). Imports neither torch nor
TensorFlow in the parent process.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader import __version__, catalog
from grader.cli import classroom, learner, maintainer
from grader.errors import GraderError

# The subcommands in the order `grader --help` lists them.
COMMANDS = (learner.add_score, classroom.add_batch, maintainer.add_verify, maintainer.add_new,
            learner.add_list, learner.add_status, learner.add_watch, learner.add_hint,
            learner.add_reset, learner.add_attempts, learner.add_restore, classroom.add_release,
            maintainer.add_mutants, classroom.add_nbgrader, classroom.add_gradescope)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grader", description="Grade PyTorch and TensorFlow exercises of the tensor-drills kit.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--kit", metavar="DIR",
                        help="the kit to work on (default: $DRILLS_KIT_ROOT, else the working "
                             "directory or the nearest folder above it with catalog.toml and "
                             f"exercises/, else the installed package's folder; now: {catalog.KIT_ROOT})")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``grader`` console script; returns the process exit status."""
    try:
        return _run(argv)
    except GraderError as exc:
        print(f"grader: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("grader: interrupted", file=sys.stderr)
        return 130


def _run(argv: list[str] | None) -> int:
    # --kit first: the subcommands' defaults (e.g. the kit's exercises/ folder) depend on it.
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--kit")
    kit = early.parse_known_args(argv)[0].kit
    if kit:
        catalog.use_kit(Path(kit))
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
