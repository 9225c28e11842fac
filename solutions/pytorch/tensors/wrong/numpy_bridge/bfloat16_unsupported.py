"""Wrong: `t.detach().cpu().numpy()` with no dtype handling: NumPy has no bfloat16, so torch
raises "Got unsupported ScalarType BFloat16" for bfloat16 tensors (mixed-precision weights)."""

import numpy as np
import torch


def to_numpy(t):
    if not isinstance(t, torch.Tensor):
        raise TypeError("t must be a torch.Tensor")
    if t.is_meta:
        raise ValueError("t is on the meta device: no data")
    return t.detach().cpu().numpy()


def from_numpy(a, *, share_memory=True):
    if not isinstance(a, np.ndarray):
        raise TypeError("a must be a numpy.ndarray")
    if not (share_memory and a.flags.writeable and all(s >= 0 for s in a.strides)):
        a = np.array(a, copy=True, order="C")
    return torch.from_numpy(a)
