"""Weight initialisation: Kaiming (He), Xavier (Glorot) and fans.

The question
------------
If every layer multiplies the scale of its input by a factor ``g``, a deep network multiplies it by
``g ** depth``: activations (and gradients) explode or vanish. Initialisation schemes pick the
weight variance so that ``g`` is about 1. For a weight with ``fan_in`` inputs per output unit:

- Xavier / Glorot (for tanh/linear layers): ``Var(w) = 2 / (fan_in + fan_out)``, a compromise
  between keeping the forward and the backward signal stable.
- Kaiming / He (for ReLU, which zeroes half its inputs): ``Var(w) = 2 / fan_in``.

The fans of a convolution include its kernel: each output of a ``Conv2d`` with a ``kh x kw`` kernel
sums ``in_channels / groups * kh * kw`` products. Interviewers ask why initialisation matters, what
the two schemes assume, and how you would apply one to a whole model (``model.apply`` / walking
``model.modules()``), with biases at zero and normalisation layers at the identity.

Your task
---------
1. ``fan_in_and_fan_out(weight)``: the fans of a Linear or Conv weight tensor.
2. ``init_weights(module, scheme="kaiming")``: initialise a whole model in place.

Contract
--------
``fan_in_and_fan_out(weight) -> (fan_in, fan_out)``
- ``weight`` has shape ``(out, in, *kernel)`` (``nn.Linear``: ``(out, in)``; ``nn.ConvNd``:
  ``(out_channels, in_channels // groups, *kernel_size)``). With ``r = prod(kernel)`` (1 for a
  2-D weight): ``fan_in = in * r`` and ``fan_out = out * r``, computed from the shape alone (so a
  grouped convolution's ``in`` is the per-group count, exactly as stored in the weight). Both are
  Python ``int``s; works for ``meta`` tensors.
- A tensor with fewer than 2 dimensions raises ``ValueError`` naming ``weight``.

``init_weights(module, scheme="kaiming") -> nn.Module``
- Walks ``module`` and *all* its descendants (``module`` itself included, any nesting depth).
- Every ``nn.Linear``, ``nn.Conv1d``, ``nn.Conv2d``, ``nn.Conv3d``: weight entries drawn
  independently from a zero-mean distribution with standard deviation
  ``sqrt(2 / fan_in)`` for ``"kaiming"`` or ``sqrt(2 / (fan_in + fan_out))`` for ``"xavier"``
  (fans as above). Normal or uniform, your choice: the tests check mean and standard deviation
  of large layers (within a few percent), not the shape of the distribution. Bias (if any): 0.
- Every ``nn.BatchNorm1d/2d/3d``, ``nn.LayerNorm``, ``nn.GroupNorm``, and ``nn.InstanceNorm1d/2d/3d``
  that has affine parameters: weight 1, bias 0 (a part that is ``None`` is skipped).
- Parameters of any other module (e.g. ``nn.Embedding``) are left unchanged.
- In place: the parameters stay the *same* ``nn.Parameter`` objects (an optimizer built before
  still holds them), keep their ``requires_grad``, dtype and device, and no autograd history is
  recorded. Works for models on any device, ``meta`` included. Returns ``module``.
- ``scheme`` other than ``"kaiming"`` or ``"xavier"`` raises ``ValueError`` naming ``scheme``.

Hints
-----
- ``module.modules()`` yields every descendant; ``module.children()`` only the direct ones.
- ``torch.nn.init`` has ``normal_``, ``uniform_``, ``zeros_``, ``ones_``; they run under
  ``torch.no_grad()`` for you. A uniform distribution on ``[-a, a]`` has std ``a / sqrt(3)``.
- ``m.weight = nn.Parameter(...)`` *replaces* the parameter; what happens to an optimizer that
  was created before?
"""

from torch import Tensor, nn


def fan_in_and_fan_out(weight: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight of shape ``(out, in, *kernel)``."""
    raise NotImplementedError


def init_weights(module: nn.Module, scheme: str = "kaiming") -> nn.Module:
    """Initialise every Linear/Conv and norm layer in ``module`` in place; return ``module``."""
    raise NotImplementedError
