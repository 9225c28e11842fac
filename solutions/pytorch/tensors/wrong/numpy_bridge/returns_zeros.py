"""Wrong (the constant submission): validates like the reference and returns zeros of the right
type, shape and dtype. Earns only the points of the error checks."""

import numpy as np
import torch
from torch import Tensor


def _correct_to_numpy(t: Tensor) -> np.ndarray:
    if not isinstance(t, Tensor):
        raise TypeError(f"t must be a torch.Tensor, got {type(t).__name__}")
    if t.is_meta:
        raise ValueError("t is on the meta device, which holds shapes but no data to convert")
    # detach: NumPy cannot record autograd history; cpu: NumPy only reads host memory. Neither
    # changes t itself, and both return t unchanged when there is nothing to do.
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        t = t.to(torch.float32)  # exact: bfloat16 is float32 with a shorter mantissa
    # Conjugate/negative views are lazy bits that NumPy cannot express.
    return t.resolve_conj().resolve_neg().numpy()


def _correct_from_numpy(a: np.ndarray, *, share_memory: bool = True) -> Tensor:
    if not isinstance(a, np.ndarray):
        raise TypeError(f"a must be a numpy.ndarray, got {type(a).__name__}")
    can_share = a.flags.writeable and all(stride >= 0 for stride in a.strides)
    if not (share_memory and can_share):
        # A fresh C-ordered, writeable array is always acceptable to torch.from_numpy.
        a = np.array(a, copy=True, order="C")
    return torch.from_numpy(a)


# MISTAKE (the constant submission): right type, shape, dtype, errors; every value zero, no sharing.
def to_numpy(t: Tensor) -> np.ndarray:
    return np.zeros_like(_correct_to_numpy(t))


def from_numpy(a: np.ndarray, *, share_memory: bool = True) -> Tensor:
    return torch.zeros_like(_correct_from_numpy(a, share_memory=False))
