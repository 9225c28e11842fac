"""argparse ``type`` functions for the CLI's numeric options: a bad value is an error (exit 2,
naming the option and the accepted range) before any work starts, never a silent fallback."""

from __future__ import annotations

import argparse
import math


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
# Below this a grading child cannot even import torch: it would crash, not grade.
MIN_MEMORY_MB = 1024
MEMORY_MB = number(int, f"a whole number of MiB, at least {MIN_MEMORY_MB}", low=MIN_MEMORY_MB)
PERCENT = number(float, "a percentage from 0 to 100", low=0, high=100)
