"""Wrong: `from_numpy` always copies "to be safe" (`torch.from_numpy(a.copy())`): correct values
and dtype, but with share_memory=True a write to the array is never seen by the tensor (nor the
reverse)."""

import numpy as np
import torch


def to_numpy(t):
    if not isinstance(t, torch.Tensor):
        raise TypeError("t must be a torch.Tensor")
    if t.is_meta:
        raise ValueError("t is on the meta device: no data")
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.numpy()


def from_numpy(a, *, share_memory=True):
    if not isinstance(a, np.ndarray):
        raise TypeError("a must be a numpy.ndarray")
    return torch.from_numpy(a.copy())
