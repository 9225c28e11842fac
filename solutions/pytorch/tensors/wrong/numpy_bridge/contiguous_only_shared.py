"""Wrong: shares only C-contiguous arrays (copies whenever `a.flags.c_contiguous` is False):
transposed or strided views such as `a.T` and `a[:, ::2]` are copied although torch can
share any array without negative strides."""

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
    if not (share_memory and a.flags.writeable and a.flags.c_contiguous):
        a = np.array(a, copy=True, order="C")
    return torch.from_numpy(a)
