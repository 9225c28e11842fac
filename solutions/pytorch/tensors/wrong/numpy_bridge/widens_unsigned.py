"""Wrong: from_numpy converts uint16/uint32/uint64 arrays to int64 first (older torch had no such
dtypes), so the tensor's dtype is not the array's. Breaks "a's shape, values and dtype"."""

import numpy as np
import torch
from torch import Tensor


def to_numpy(t: Tensor) -> np.ndarray:
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


def from_numpy(a: np.ndarray, *, share_memory: bool = True) -> Tensor:
    if not isinstance(a, np.ndarray):
        raise TypeError(f"a must be a numpy.ndarray, got {type(a).__name__}")
    if a.dtype in (np.uint16, np.uint32, np.uint64):
        a = a.astype(np.int64)  # MISTAKE: torch has these dtypes; the result must keep them
    can_share = a.flags.writeable and all(stride >= 0 for stride in a.strides)
    if not (share_memory and can_share):
        # A fresh C-ordered, writeable array is always acceptable to torch.from_numpy.
        a = np.array(a, copy=True, order="C")
    return torch.from_numpy(a)
