"""The NumPy bridge: sharing memory and copying.

The question
------------
"How do you convert between NumPy arrays and tensors?" sounds like a one-liner:
``torch.from_numpy(a)`` one way, ``t.numpy()`` the other. The interview is in the follow-ups.
``from_numpy`` does not copy: the tensor and the array are two views of one buffer, so writing to
either changes both, which is fast and also a classic source of bugs. And ``t.numpy()`` refuses
many tensors you meet in practice: ones that require grad, ones on a GPU, and bfloat16 ones, a
dtype NumPy does not have. Some arrays cannot be shared with torch at all: torch has no negative
strides, so ``a[::-1]`` has to be copied.

Your task
---------
1. ``to_numpy(t)``: any tensor to a NumPy array.
2. ``from_numpy(a, *, share_memory=True)``: an array to a tensor, sharing its memory when asked
   and when that is safe, copying otherwise.

Contract
--------
``to_numpy(t: Tensor) -> np.ndarray``

- Works for every tensor: one that requires grad or has autograd history, a non-contiguous view
  (transposed, strided, expanded), a 0-d tensor, a tensor on a GPU.
- Returns an ``np.ndarray`` (also for a 0-d tensor: an array of shape ``()``, not a NumPy scalar)
  with ``t``'s shape and values and the matching NumPy dtype (``torch.float16`` -> ``float16``,
  ``torch.int32`` -> ``int32``, ``torch.bool`` -> ``bool``, ...). ``torch.bfloat16`` has no NumPy
  counterpart and becomes ``float32`` (exactly: every bfloat16 value is a float32 value).
- Leaves ``t`` as it was: same ``requires_grad``, same ``grad_fn``, same values.
- Whether the result shares memory with a CPU tensor is up to you (tests do not depend on it).
- A tensor on the ``meta`` device has no data: ``ValueError`` whose message mentions ``meta``.
- Not a tensor -> ``TypeError`` whose message mentions ``Tensor``.

``from_numpy(a: np.ndarray, *, share_memory=True) -> Tensor``

- Returns a CPU tensor with ``a``'s shape, values and dtype (``float64`` stays ``torch.float64``,
  ``uint8`` stays ``torch.uint8``, ...).
- ``share_memory=True``: the tensor shares ``a``'s memory whenever that is possible and safe, so
  that a write through either is seen by the other. It is possible for every array with no
  negative strides, non-contiguous ones included (``a.T``, ``a[:, ::2]``, ``a[1:]``). It is not
  possible for an array with a negative stride (``a[::-1]``, ``np.flip(a)``), and not safe for a
  read-only array (``a.flags.writeable`` is False, e.g. ``np.broadcast_to``): a tensor would let
  you write into memory NumPy promised nobody would change. In those two cases return a copy,
  without raising.
- ``share_memory=False``: always a copy; writes to the tensor never reach ``a`` and writes to ``a``
  never reach the tensor.
- Not an ``np.ndarray`` -> ``TypeError`` whose message mentions ``ndarray``.

Complex, quantized, sparse and float8 tensors, and arrays with a non-native byte order or
structured dtypes, are outside this exercise (not tested).

Hints
-----
- ``t.numpy()`` raises for each of the awkward cases above; read its error messages. Which tensor
  methods remove each obstacle (``detach``, ``cpu``, a dtype conversion)? Which of them copy?
- ``a.strides`` is in bytes and can be negative; ``a.flags.writeable`` says whether an array may
  be written.
- ``torch.from_numpy`` shares; ``torch.tensor`` and ``np.array(a, copy=True)`` copy. (Beware
  ``np.ascontiguousarray``: it turns a 0-d array into shape ``(1,)``.)
"""

import numpy as np
from torch import Tensor


def to_numpy(t: Tensor) -> np.ndarray:
    """``t``'s values as a NumPy array (bfloat16 -> float32); see the module docstring."""
    raise NotImplementedError


def from_numpy(a: np.ndarray, *, share_memory: bool = True) -> Tensor:
    """A CPU tensor for ``a``, sharing its memory when asked and safe; see the module docstring."""
    raise NotImplementedError
