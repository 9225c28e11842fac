"""Kit-wide pytest configuration. The plugin itself lives in grader/pytest_plugin.py."""

import os

# Wrong solutions and the bundled example are modules under test, never test files.
collect_ignore_glob = ["solutions/*/*/wrong/*", "examples/*", ".venv/*", "bench/*"]


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (``make test``): a worker more than the cores this process may run on. Some of
    the kit's tests mostly wait (out a hanging submission's limits, for a child to exit); the
    extra worker's tests use the core meanwhile."""
    return len(os.sched_getaffinity(0)) + 1
