"""The CLI's option types and the options several commands share (``grader.cli`` alone imports
this module). A bad value is an error (exit 2, naming the option and the accepted range or what
is wrong) before any work starts, never a silent fallback."""

from __future__ import annotations

import argparse
import math

from grader import defaults
from grader.errors import UsageError


def number(kind: type, what: str, *, low: float, low_included: bool = True,
           high: float = math.inf):
    """A ``type`` for a finite ``kind`` in ``[low, high]`` (``(low, high]`` unless ``low_included``)."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not math.isfinite(value) or value < low or value > high or (value == low and not low_included):
            raise argparse.ArgumentTypeError(f"{text} is out of range: expected {what}")
        return value
    return parse


POSITIVE_SECONDS = number(float, "a number of seconds above 0", low=0, low_included=False)
JOBS = number(int, "a whole number of 1 or more", low=1)
MINUTES = number(int, "a whole number of minutes, 1 or more", low=1)
MIN_MEMORY_MB = defaults.MIN_MEMORY_MB
MEMORY_MB = number(int, f"a whole number of MiB, at least {MIN_MEMORY_MB}", low=MIN_MEMORY_MB)
PERCENT = number(float, "a percentage from 0 to 100", low=0, high=100)


def add_limit_options(parser: argparse.ArgumentParser, *, wall: str, memory: bool = False) -> None:
    """``--timeout`` (the wall-clock limit of ``wall``), ``--test-timeout`` and, with ``memory``,
    ``--memory-mb``, with the defaults of ``grader.defaults``."""
    parser.add_argument("--timeout", type=POSITIVE_SECONDS, default=defaults.WALL_S, metavar="S",
                        help=f"wall-clock limit of {wall} in seconds, above 0 "
                             f"(default: {defaults.WALL_S:g})")
    parser.add_argument("--test-timeout", type=POSITIVE_SECONDS, default=defaults.TEST_TIMEOUT_S,
                        metavar="S", help="limit per test in seconds, above 0 "
                                          f"(default: {defaults.TEST_TIMEOUT_S:g})")
    if memory:
        parser.add_argument("--memory-mb", type=MEMORY_MB, default=defaults.MEMORY_MB, metavar="MB",
                            help=f"address-space limit of a grading child in MiB, at least "
                                 f"{MIN_MEMORY_MB} (default: {defaults.MEMORY_MB})")


def add_exercise_option(parser: argparse.ArgumentParser, verb: str, default: str) -> None:
    """``--exercise``/``-e ID``, repeatable: the exercises to ``verb`` (``default``: which when none)."""
    parser.add_argument("--exercise", "-e", action="append", metavar="ID",
                        help=f"{verb} only this exercise id (repeatable; default: {default})")


def usage_type(parse):
    """A ``type`` from ``parse``, a function of the option's text that raises ``UsageError`` with
    the words to show: argparse shows them after the option's name (exit 2, nothing started)."""
    def typed(text: str):
        try:
            return parse(text)
        except UsageError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    typed.__name__ = parse.__name__  # argparse names it in its own errors
    return typed
