"""Checks for exercise tests: import from here, never from the private modules.

Importing this package imports torch (it is for PyTorch exercise tests).
"""

from grader._errors import assert_raises_naming
from grader.checks._compare import (
                                    assert_close,
                                    assert_device,
                                    assert_shape,
                                    assert_tensor,
)
from grader.checks._devices import (
                                    autocast,
                                    autocast_dtype,
                                    call_on_device,
                                    cuda_available,
                                    device_params,
)
from grader.checks._gradients import as_float64_leaves, check_gradients
from grader.checks._opcount import count_aten_ops
from grader.checks._ranks import RankFailed, RankResult, Ranks, run_ranks
from grader.checks._strategies import (
                                    broadcastable_batch_shapes,
                                    nested_containers,
                                    shapes,
                                    tensors,
)
from grader.checks._tensorboard import TensorBoardEvents, read_tensorboard, summary_writer
from grader.checks._training import GradientSpy

__all__ = [
    "GradientSpy",
    "RankFailed",
    "RankResult",
    "Ranks",
    "TensorBoardEvents",
    "as_float64_leaves",
    "assert_close",
    "assert_device",
    "assert_raises_naming",
    "assert_shape",
    "assert_tensor",
    "autocast",
    "autocast_dtype",
    "broadcastable_batch_shapes",
    "call_on_device",
    "check_gradients",
    "count_aten_ops",
    "cuda_available",
    "device_params",
    "nested_containers",
    "read_tensorboard",
    "run_ranks",
    "shapes",
    "summary_writer",
    "tensors",
]
