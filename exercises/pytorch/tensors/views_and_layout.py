"""Views and memory layout: attention heads and sliding windows.

The question
------------
A tensor is a block of memory (its storage) plus a recipe for reading it: shape, strides (how
many elements to skip per step along each dimension) and an offset. ``view``, ``transpose``,
``permute``, slicing and ``unfold`` only write a new recipe over the *same* memory; they are free
and share data with the original. A tensor is *contiguous* when its strides are the row-major ones
for its shape. ``view`` needs strides it can reinterpret and raises on many non-contiguous tensors;
``reshape`` returns a view when it can and copies when it must; ``contiguous()`` copies only if
needed. Interviewers ask you to check shapes (``shape``/``size()``/``dim()``), to explain
``view`` versus ``reshape`` and what "contiguous" means, and to use them in real code such as the
head split of multi-head attention.

Your task
---------
1. ``split_heads(x, n_heads)``: ``(B, T, H*D) -> (B, H, T, D)``, head ``h`` taking features
   ``h*D : (h+1)*D`` of each position.
2. ``merge_heads(y)``: the inverse, ``(B, H, T, D) -> (B, T, H*D)``. It must accept any layout,
   in particular the contiguous ``(B, H, T, D)`` output of an attention product.
3. ``sliding_windows(x, size, step)``: every window of ``size`` consecutive elements along the last
   dimension, starting every ``step`` elements, as a *view* of ``x``.

Contract
--------
- ``split_heads``: ``x`` is 3-D ``(B, T, E)`` with ``E`` divisible by ``n_heads``;
  ``out[b, h, t, d] == x[b, t, h * D + d]`` with ``D = E // n_heads``. ``x`` may be
  non-contiguous. ``n_heads`` below 1 or not dividing ``E`` raises ``ValueError`` naming
  ``n_heads``; an ``x`` that is not 3-D raises ``ValueError`` naming ``x``.
- ``merge_heads``: ``y`` is 4-D ``(B, H, T, D)``; ``out[b, t, h * D + d] == y[b, h, t, d]``, so
  ``merge_heads(split_heads(x, H))`` equals ``x``. A ``y`` that is not 4-D raises ``ValueError``
  naming ``y``.
- ``sliding_windows``: ``x`` has shape ``(..., L)`` with at least one dimension and any strides;
  the result has shape ``(..., n, size)`` with ``n = (L - size) // step + 1`` and
  ``out[..., i, j] == x[..., i * step + j]``. It is a view: it shares ``x``'s memory (nothing is
  copied, so later in-place changes to ``x`` show in the windows). ``size`` must be in
  ``1..L`` and ``step`` at least 1, else ``ValueError`` naming ``size`` or ``step``.
- All three keep dtype and device (``meta`` included) and are differentiable.

Hints
-----
- ``view(B, H, T, D)`` straight from ``(B, T, H*D)`` has the right shape and the wrong values.
- After ``transpose``, can ``view`` merge two dimensions whose strides no longer line up?
- ``Tensor.unfold`` exists; so does ``as_strided``, which works on *storage* strides and offset:
  if you use it, do not assume ``x`` is contiguous or starts at offset 0.
"""

from torch import Tensor


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """``(B, T, H*D) -> (B, H, T, D)``."""
    raise NotImplementedError


def merge_heads(y: Tensor) -> Tensor:
    """``(B, H, T, D) -> (B, T, H*D)``, for any memory layout of ``y``."""
    raise NotImplementedError


def sliding_windows(x: Tensor, size: int, step: int) -> Tensor:
    """``(..., L) -> (..., (L - size) // step + 1, size)``, a view sharing ``x``'s memory."""
    raise NotImplementedError
