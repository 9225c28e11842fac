"""What a grading process loads before its first test, so that no test pays for it inside its time
limit: a fork server once for all its children, a fresh child in its pytest configuration.

This module must not import the catalog (nor anything that reads it): a fork server imports it,
and its children each read their own kit's catalog.
"""

from __future__ import annotations

import importlib
import sys
import tempfile
import warnings


def warm(modules: list[str] | tuple[str, ...]) -> None:
    """Import ``modules`` and fill the caches their tests would otherwise fill inside their own
    time: hypothesis's table of the characters text strategies draw from, which it would build
    (seconds) in every grading child, whose storage directory is new each time."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # preloading only saves time: a test that needs it fails on its own
            print(f"grader: not preloading {name}: {exc}", file=sys.stderr)
    if "hypothesis" in modules:
        from hypothesis import strategies
        from hypothesis.configuration import set_hypothesis_home_dir
        from hypothesis.errors import HypothesisSideeffectWarning

        with tempfile.TemporaryDirectory(prefix="drills-hypothesis-") as home, warnings.catch_warnings():
            warnings.simplefilter("ignore", HypothesisSideeffectWarning)  # it is on purpose
            set_hypothesis_home_dir(home)  # the table's on-disk copy goes nowhere that lasts
            try:
                strategies.text().validate()
            finally:
                set_hypothesis_home_dir(None)  # the process's own setting applies again


def collect(session: list[str]) -> None:
    """Collect the tests of the pytest command line ``session`` and throw the session away: its
    test modules stay imported (and assertion-rewritten), so a process forked from this one
    collects the same files without importing them again. Quiet: this process's output is not
    a test run's."""
    import os

    import pytest

    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        pytest.main([*session, "--collect-only"])
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, old in zip((1, 2), saved):
            os.dup2(old, fd)
            os.close(old)
        os.close(devnull)
    if "hypothesis" in sys.modules:
        from hypothesis.configuration import set_hypothesis_home_dir

        set_hypothesis_home_dir(None)  # each child reads its own storage directory setting
