"""Gradescope's side of an autograder bundle: ``python -m grader.cli.autograder run --root ROOT``,
which the bundle's ``run_autograder`` runs for every submission (see
``grader.workflows.gradescope``). It calls the library (``gradescope.run``), never the ``grader``
command, so ``results.json`` is written once, by the code that graded.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Grade ``ROOT/submission`` into ``ROOT/results/results.json``; returns the exit status."""
    from grader.workflows import gradescope

    parser = argparse.ArgumentParser(prog="python -m grader.cli.autograder",
                                     description="Gradescope's side of the autograder bundle.")
    actions = parser.add_subparsers(dest="action", required=True)
    run_parser = actions.add_parser("run", help="grade ROOT/submission into ROOT/results/results.json")
    run_parser.add_argument("--root", default="/autograder", help="default: /autograder")
    args = parser.parse_args(argv)
    return gradescope.run(Path(args.root))


if __name__ == "__main__":
    sys.exit(main())
