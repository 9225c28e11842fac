"""Checks for TensorFlow exercise tests: import from here, never from the private modules.

Importing this package imports TensorFlow (quietly: it sets ``TF_CPP_MIN_LOG_LEVEL=2`` and
``TF_ENABLE_ONEDNN_OPTS=0`` unless already set), never torch, and splits the CPU into
two logical devices when no TensorFlow op has run yet (``logical_cpus``).
"""

from grader._errors import assert_raises_naming
from grader._lazy import lazy_exports
from grader._where import where_the_submission_lives
from grader.tfchecks._compare import assert_close, assert_dtype, assert_shape
from grader.tfchecks._env import logical_cpus
from grader.tfchecks._gradients import central_differences, check_gradients
from grader.tfchecks._precision import mixed_precision
from grader.tfchecks._sessions import SessionRun, record_session_runs
from grader.tfchecks._summaries import read_summaries
from grader.tfchecks._tracing import retrace_counter

# Hypothesis strategies, imported with hypothesis when a test first takes one.
__getattr__ = lazy_exports(__name__, {"broadcastable_batch_shapes": "grader._shapes", "shapes": "grader._shapes",
                                      "tf_tensors": "grader.tfchecks._strategies"})

__all__ = [
    "SessionRun",
    "assert_close",
    "assert_dtype",
    "assert_raises_naming",
    "assert_shape",
    "broadcastable_batch_shapes",
    "central_differences",
    "check_gradients",
    "logical_cpus",
    "mixed_precision",
    "read_summaries",
    "record_session_runs",
    "retrace_counter",
    "shapes",
    "tf_tensors",
    "where_the_submission_lives",
]
