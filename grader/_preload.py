"""What a grading process loads before its first test, so that no test pays for it inside its time
limit: a fork server once for all its children, a fresh child in its pytest configuration.

This module must not import the catalog (nor anything that reads it): a fork server imports it,
and its children each read their own kit's catalog.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import tempfile
import warnings

# A directory holding hypothesis's character tables, ready to read (``grader.engine.hypothesis_tables``).
TABLES_ENV = "DRILLS_HYPOTHESIS_TABLES"


def warm(modules: list[str] | tuple[str, ...]) -> None:
    """Import ``modules`` and fill the caches their tests would otherwise fill inside their own
    time: hypothesis's tables of the characters text strategies draw from, read from the directory
    ``TABLES_ENV`` names, or else built (seconds: a grading child's storage directory is new
    each time)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # preloading only saves time: a test that needs it fails on its own
            print(f"grader: not preloading {name}: {exc}", file=sys.stderr)
    if "hypothesis" in modules:
        from hypothesis import strategies
        from hypothesis.configuration import set_hypothesis_home_dir
        from hypothesis.errors import HypothesisSideeffectWarning

        tables = os.environ.get(TABLES_ENV)
        # Without tables to read, the ones built go nowhere that lasts.
        with (contextlib.nullcontext(tables) if tables else tempfile.TemporaryDirectory(prefix="drills-hypothesis-")
              ) as home, warnings.catch_warnings():
            warnings.simplefilter("ignore", HypothesisSideeffectWarning)  # it is on purpose
            set_hypothesis_home_dir(home)
            try:
                strategies.text().validate()
            finally:
                set_hypothesis_home_dir(None)  # the process's own setting applies again
