"""Wrong: calls `.numpy()` without `.detach()`: torch refuses tensors that require grad
("Can't call numpy() on Tensor that requires grad"), so parameters and activations fail."""

import numpy as np
import torch


def to_numpy(t):
    if not isinstance(t, torch.Tensor):
        raise TypeError("t must be a torch.Tensor")
    if t.is_meta:
        raise ValueError("t is on the meta device: no data")
    t = t.cpu()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.numpy()


def from_numpy(a, *, share_memory=True):
    if not isinstance(a, np.ndarray):
        raise TypeError("a must be a numpy.ndarray")
    if not (share_memory and a.flags.writeable and all(s >= 0 for s in a.strides)):
        a = np.array(a, copy=True, order="C")
    return torch.from_numpy(a)
