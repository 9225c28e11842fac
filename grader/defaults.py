"""The grader's default limits and the environment a test run of TensorFlow gets, in one place.

Framework-free and engine-free: the pytest plugin and the notebook runtime import it at test time.
"""

from __future__ import annotations

import os

TEST_TIMEOUT_S = 60.0  # per test (``--test-timeout``): the child's alarm, the grader's watch
WALL_S = 600.0  # per submission (``--timeout``)
MEMORY_MB = 6144  # address space of a grading child (``--memory-mb``)
# Below this a grading child cannot even import torch: it would crash, not grade.
MIN_MEMORY_MB = 1024

# Set before TensorFlow is first imported: no C++ start-up logs (they would bury the learner's
# results on stderr) and no oneDNN round-off notice, with results that do not depend on oneDNN.
TF_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0"}


def quiet_tensorflow() -> None:
    """Put ``TF_ENV`` into this process's environment, leaving values already set alone."""
    for name, value in TF_ENV.items():
        os.environ.setdefault(name, value)
