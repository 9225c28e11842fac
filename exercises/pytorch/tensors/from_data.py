"""Tensors from Python and NumPy data.

The question
------------
A tensor is PyTorch's n-dimensional array: like a NumPy array it has a shape and one element
dtype, but it can also live on an accelerator and take part in autograd. Interviewers start here:
"how do you build a tensor from a Python list?", and then the follow-up that separates people who
have been bitten from those who have not: "what is the difference between ``torch.tensor(...)``
and ``torch.Tensor(...)``?" (one infers the dtype from the data, the other is the float32
constructor, and given an int it allocates that many *uninitialised* numbers). A third trap is
memory: some conversions copy the data, others quietly share it with the source.

Your task
---------
Write ``to_tensor(data, *, dtype=None, device=None)`` that turns Python or NumPy data into a new
tensor, with the rules below spelled out and checked instead of left to luck.

Contract
--------
``data`` is one of:

- a Python scalar: ``bool``, ``int`` or ``float`` -> a 0-d tensor;
- a NumPy array (any shape, any layout, including reversed or strided views) or a NumPy scalar
  such as ``np.float64(1.5)`` -> a tensor of the same shape;
- a list or tuple, nested to any depth (lists and tuples may be mixed), whose innermost items are
  Python ``bool``/``int``/``float`` -> a tensor whose shape follows the nesting, e.g.
  ``[[1, 2, 3], (4, 5, 6)]`` -> shape ``(2, 3)``; ``[]`` -> shape ``(0,)``; ``[[], []]`` ->
  ``(2, 0)``.

Dtype, when ``dtype`` is None:

- Python ``bool`` -> ``torch.bool``, ``int`` -> ``torch.int64``, ``float`` -> ``torch.float32``.
  Mixed kinds promote to the widest, ``bool < int < float``: ``[True, 2]`` -> int64,
  ``[1, 2.5]`` -> float32. A sequence with no scalars at all (``[]``, ``[[], []]``) -> float32.
  These dtypes are fixed: they stay the same when ``torch.set_default_dtype`` has changed the
  default floating dtype (``torch.tensor([1.5])`` follows that default; ``to_tensor`` does not).
  Float values include ``nan`` and ``inf``, which stay ``nan`` and ``inf``.
- NumPy arrays and NumPy scalars keep their dtype (``int32`` stays ``int32``, ``float64`` stays
  ``float64``, ``bool`` stays ``bool``, ...).

When ``dtype`` is given the result has that dtype, and values are converted straight from the
source: ``to_tensor([0.1], dtype=torch.float64)`` holds the float64 nearest 0.1, not a float32
rounding of it. When ``device`` is given (a string or ``torch.device``, ``"meta"`` included) the
result is created on that device, otherwise on the CPU.

Always a copy: the result never shares memory with ``data``, with or without ``dtype=`` and
``device=`` (also when they match the source's own dtype and device). Writing to the source
afterwards does not change the tensor, and writing to the tensor does not change the source.

Errors:

- Ragged nesting -> ``ValueError`` whose message contains ``depth N``. The items of ``data`` are
  at depth 1, their items at depth 2, and so on. Nesting is ragged at depth ``N`` when two
  sequences at depth ``N`` have different lengths, or a scalar and a sequence both sit at depth
  ``N``: ``[[1, 2], [3]]`` and ``[[1], 2]`` are ragged at depth 1,
  ``[[[1, 2], [3, 4]], [[5], [6]]]`` at depth 2. (If several depths are ragged, naming any one of
  them is fine.)
- Anything else (a string, ``None``, a dict, such a thing inside a list, ...) -> ``TypeError``
  whose message names ``data``.

Lists that contain NumPy arrays or tensors, complex numbers (Python ``complex`` and complex NumPy
arrays alike), and ``torch.Tensor`` as ``data`` are outside this exercise (not tested).

Hints
-----
- ``torch.tensor``, ``torch.Tensor``, ``torch.as_tensor`` and ``torch.from_numpy`` all turn data
  into tensors. Which of them infer the dtype, which copy, and which share memory?
- Python's ``bool`` is a subclass of ``int``: ``isinstance(True, int)`` is True.
- Not every NumPy array can be handed to torch as it is: try ``np.arange(3)[::-1]``.
- Check the nesting yourself (a short recursive walk that returns the shape) so that you can say
  where it is ragged.
"""

from typing import Any

import torch
from torch import Tensor


def to_tensor(data: Any, *, dtype: torch.dtype | None = None,
              device: str | torch.device | None = None) -> Tensor:
    """A new tensor holding ``data`` (see the module docstring for the rules)."""
    raise NotImplementedError
