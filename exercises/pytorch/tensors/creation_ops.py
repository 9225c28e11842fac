"""Creation ops: sinusoidal positions and coordinate grids.

The question
------------
``torch.zeros``, ``torch.ones``, ``torch.arange`` and ``torch.linspace`` look too simple to ask
about, so interviewers ask you to *build* something with them instead: the sinusoidal position
table of the original Transformer, or the normalised pixel-coordinate grid that spatial
transformers and ``grid_sample`` use. Both are a few lines, and both hide the details that matter
in real code: creating tensors directly on the right device and in the right dtype, the exact
endpoints of ``arange`` and ``linspace`` (and ``linspace`` with one step), and precision.

Your task
---------
1. ``sinusoidal_positions(seq_len, dim, *, base=10000.0, dtype=torch.float32, device=None)``:
   the ``(seq_len, dim)`` table of sinusoidal position encodings.
2. ``coordinate_grid(h, w, *, device=None)``: the ``(h, w, 2)`` grid of normalised ``(x, y)``
   pixel coordinates.

Contract
--------
``sinusoidal_positions``

- Row ``p`` (position ``p = 0, 1, ..., seq_len - 1``) holds, for each pair ``i = 0 .. dim/2 - 1``
  and the frequency ``f_i = base ** (-2 * i / dim)``::

      out[p, 2 * i]     = sin(p * f_i)
      out[p, 2 * i + 1] = cos(p * f_i)

  (sine and cosine interleaved, as in "Attention Is All You Need"; row 0 is ``0, 1, 0, 1, ...``).
- The result has dtype ``dtype`` (a floating dtype) and lives on ``device`` (None means CPU; the
  ``meta`` device must work too). Values are accurate to ``dtype``: compute in float64 when
  ``dtype`` is float64, and in at least float32 for float32, float16 and bfloat16 (computing
  positions in bfloat16 would round ``p`` itself once ``p > 256``, and the angles far earlier).
- ``seq_len`` is an int >= 0 (0 gives shape ``(0, dim)``); ``dim`` a positive even int.
  Otherwise (a float such as ``4.0`` included) ``ValueError`` naming the argument (``seq_len`` or
  ``dim``); a non-floating ``dtype``
  (e.g. ``torch.int64``) -> ``ValueError`` naming ``dtype``.

``coordinate_grid``

- ``out[i, j] = (x_j, y_i)``: ``x`` (index 0 of the last dim) varies along the width ``w``, ``y``
  (index 1) along the height ``h``. The coordinates run evenly from -1 (first pixel centre) to 1
  (last pixel centre): ``x_j = -1 + 2 * j / (w - 1)``. A side of length 1 has its single
  coordinate at 0, the centre. This is exactly what
  ``F.affine_grid(identity, (1, 1, h, w), align_corners=True)[0]`` returns.
- dtype float32, also when ``torch.set_default_dtype`` has changed the default floating dtype;
  on ``device`` (None means CPU; ``meta`` must work).
- ``h`` and ``w`` are ints >= 1, otherwise (a float such as ``2.0`` included) ``ValueError``
  naming the argument (``h`` or ``w``).

Hints
-----
- Create every tensor with ``device=`` (and ``dtype=``) instead of creating it on the CPU and
  moving it: that works on ``meta`` too, and saves a host-to-device copy on a GPU.
- ``torch.arange(0, dim, 2)`` gives ``2 * i``. ``torch.stack((a, b), dim=-1).flatten(-2)``
  interleaves two tensors.
- What does ``torch.linspace(-1, 1, 1)`` return?
- ``torch.meshgrid`` has an ``indexing=`` argument: ``"ij"`` or ``"xy"``.
"""

import torch
from torch import Tensor


def sinusoidal_positions(seq_len: int, dim: int, *, base: float = 10000.0,
                         dtype: torch.dtype = torch.float32,
                         device: str | torch.device | None = None) -> Tensor:
    """The ``(seq_len, dim)`` sinusoidal position table; see the module docstring."""
    raise NotImplementedError


def coordinate_grid(h: int, w: int, *, device: str | torch.device | None = None) -> Tensor:
    """The ``(h, w, 2)`` grid of ``(x, y)`` coordinates in [-1, 1]; see the module docstring."""
    raise NotImplementedError
