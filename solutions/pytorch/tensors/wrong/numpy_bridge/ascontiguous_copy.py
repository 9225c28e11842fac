"""Wrong: "copies" with `np.ascontiguousarray(a)`, which returns `a` itself when it is already
C-contiguous and writeable: with share_memory=False a contiguous array is still shared. Breaks
"share_memory=False: always a copy"."""

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
    can_share = a.flags.writeable and all(stride >= 0 for stride in a.strides)
    if not (share_memory and can_share):
        a = np.ascontiguousarray(a)  # MISTAKE: no copy when a is already C-contiguous
        if not a.flags.writeable:
            a = a.copy()
    return torch.from_numpy(a)
