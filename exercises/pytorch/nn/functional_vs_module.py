"""Functional vs module: layer normalisation from scratch, and a named ``nn.Sequential``.

The question
------------
PyTorch offers most layers twice. ``torch.nn.functional`` holds *stateless functions*
(``F.layer_norm(x, shape, weight, bias)``): you pass every tensor in. ``torch.nn`` holds *modules*
(``nn.LayerNorm(shape)``): objects that own their parameters as registered ``nn.Parameter``s, so
that ``parameters()``, ``state_dict()``, ``.to()`` and optimizers find them, and whose ``forward``
usually just calls the functional version. Interviewers ask when you would use which, and how
``nn.Sequential`` differs from writing your own ``nn.Module`` subclass (it is a module that calls
its children in order; naming the children gives readable ``state_dict`` keys).

Your task
---------
1. ``layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5)``: the functional form,
   written from elementary tensor operations.
2. ``LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=True)``: the module form, owning
   ``weight`` and ``bias`` and calling your ``layer_norm``.
3. ``sequential_mlp(sizes)``: an ``nn.Sequential`` of ``nn.Linear`` layers with ``nn.ReLU``
   between them, with named children.

Contract
--------
``layer_norm``
- ``normalized_shape`` is an ``int`` or a sequence of ``int``; it must equal the trailing
  dimensions of ``x``. The result is normalised over exactly those trailing dimensions:
  ``(x - mean) / sqrt(var + eps)``, with the *biased* variance (divide by the number of elements,
  as ``F.layer_norm`` does), then multiplied elementwise by ``weight`` and shifted by ``bias``
  when they are given (each one is optional on its own; both have shape ``normalized_shape``).
- The result equals ``F.layer_norm`` with the same arguments, has ``x``'s shape, dtype and device,
  works on ``meta`` tensors and is differentiable (first and second order) with respect to ``x``,
  ``weight`` and ``bias``.
- From scratch: do not call any normalisation kernel (``F.layer_norm``, ``torch.layer_norm``,
  ``F.group_norm``, ``F.batch_norm``, ``F.instance_norm``, ``nn.LayerNorm``...); the tests check
  which operations you dispatch. ``mean``, ``var``, ``sqrt``/``rsqrt`` and arithmetic are fine.
- Accurate in float32 even when the values share a large offset: for rows like
  ``1000 + randn(64)`` the result must agree with the exact (float64) layer norm to within 2e-3.
- Errors (``ValueError`` naming the argument): ``normalized_shape`` that is empty or does not
  match the trailing dims of ``x`` (``"normalized_shape"``); ``weight`` or ``bias`` whose shape is
  not ``normalized_shape`` (``"weight"`` / ``"bias"``); negative or NaN ``eps`` (``"eps"``;
  ``eps = 0`` is allowed). Shapes are compared dimension by dimension: the same number of
  elements in another shape is a mismatch.

``LayerNorm``
- Attributes: ``normalized_shape`` (a ``tuple`` of ints, also when an ``int`` was passed),
  ``eps``, ``elementwise_affine``.
- With ``elementwise_affine=True``: ``weight`` (ones) and ``bias`` (zeros) are ``nn.Parameter``s
  of shape ``normalized_shape``; ``state_dict()`` has exactly the keys ``"weight"`` and
  ``"bias"``, so it loads ``nn.LayerNorm``'s ``state_dict`` and vice versa. With
  ``elementwise_affine=False``: ``weight`` and ``bias`` are ``None`` and the module has no
  parameters and an empty ``state_dict``.
- ``forward(x)`` returns ``layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)``;
  ``.to(device)``, ``.double()`` etc. convert the parameters.

``sequential_mlp``
- ``sizes = [d0, d1, ..., dn]`` (at least two positive ints) gives
  ``nn.Sequential`` with children, in this order and with these names:
  ``fc1 = Linear(d0, d1)``, ``act1 = ReLU()``, ``fc2 = Linear(d1, d2)``, ``act2 = ReLU()``, ...,
  ``fcn = Linear(d(n-1), dn)``; no activation after the last ``Linear``. So ``state_dict()`` keys
  are ``fc1.weight, fc1.bias, ..., fcn.weight, fcn.bias`` and ``model.fc1`` is the first layer.
- Fewer than two sizes, or a size that is not a positive ``int``: ``ValueError`` naming ``sizes``.

Hints
-----
- ``x.var`` uses Bessel's correction (divides by ``N - 1``) unless told otherwise.
- ``E[x^2] - E[x]^2`` is algebraically the variance; in float32 with a large mean it is not.
- A tensor assigned as a plain attribute is not a parameter: who would train it, save it, move
  it to the GPU?
- ``nn.Sequential`` accepts an ``OrderedDict`` of named modules.
"""

from collections.abc import Sequence

from torch import Tensor, nn


def layer_norm(x: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise ``x`` over its trailing ``normalized_shape`` dims; optional affine transform."""
    raise NotImplementedError


class LayerNorm(nn.Module):
    """Module form of ``layer_norm`` with learnable ``weight`` (ones) and ``bias`` (zeros)."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True) -> None:
        super().__init__()
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError


def sequential_mlp(sizes: Sequence[int]) -> nn.Sequential:
    """``nn.Sequential(fc1, act1, fc2, ..., fcn)`` for ``sizes = [d0, ..., dn]``."""
    raise NotImplementedError
