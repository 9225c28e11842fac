"""Checks for exercise tests: import from here, never from the private modules.

Importing this package imports torch (it is for PyTorch exercise tests).
"""

from grader._errors import assert_raises_naming
from grader._lazy import lazy_exports
from grader._where import where_the_submission_lives
from grader.checks._calls import record_calls
from grader.checks._compare import (
                                    assert_close,
                                    assert_device,
                                    assert_shape,
                                    assert_tensor,
)
from grader.checks._devices import (
                                    autocast,
                                    call_on_device,
                                    device_params,
)
from grader.checks._gradients import autograd_function, check_gradients
from grader.checks._held import HeldTensor, tensors_held_by
from grader.checks._loading import load_batches
from grader.checks._opcount import AtenCall, count_aten_ops, record_aten_ops
from grader.checks._ranks import RankFailed, Ranks, process_groups_kept, run_ranks
from grader.checks._saved import count_saved_tensors
from grader.checks._tensorboard import read_tensorboard, summary_writer
from grader.checks._training import GradientSpy

# Hypothesis strategies, imported with hypothesis when a test first takes one.
__getattr__ = lazy_exports(__name__, dict.fromkeys(
    ("broadcastable_batch_shapes", "nested_containers", "shapes", "tensors"), "grader.checks._strategies"))

__all__ = [
    "AtenCall",
    "GradientSpy",
    "HeldTensor",
    "RankFailed",
    "Ranks",
    "assert_close",
    "assert_device",
    "assert_raises_naming",
    "assert_shape",
    "assert_tensor",
    "autocast",
    "autograd_function",
    "broadcastable_batch_shapes",
    "call_on_device",
    "check_gradients",
    "count_aten_ops",
    "count_saved_tensors",
    "device_params",
    "load_batches",
    "nested_containers",
    "read_tensorboard",
    "record_aten_ops",
    "record_calls",
    "process_groups_kept",
    "run_ranks",
    "shapes",
    "summary_writer",
    "tensors",
    "tensors_held_by",
    "where_the_submission_lives",
]
