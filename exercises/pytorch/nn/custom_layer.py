"""A custom layer: LoRA (low-rank adaptation) on top of a frozen ``nn.Linear``.

The question
------------
A custom layer in PyTorch is an ``nn.Module`` subclass: create its parameters in ``__init__`` as
``nn.Parameter``s (or sub-modules), compute the output in ``forward``, and autograd does the rest.
A popular interview version is LoRA, used to fine-tune large models cheaply: keep a pretrained
weight ``W`` (out x in) frozen and learn a low-rank correction ``B @ A`` instead, with ``A`` of
shape (rank x in) and ``B`` of shape (out x rank). ``B`` starts at zero, so the adapted layer starts
out *exactly* as the pretrained one while ``A`` starts random so that ``B`` receives a gradient. The
update is scaled by ``alpha / rank``. After fine-tuning the correction can be folded ("merged") into
an ordinary ``nn.Linear`` with weight ``W + (alpha / rank) * B @ A``, which costs nothing extra at
inference time.

Your task
---------
Write ``LoRALinear(base, rank, alpha)``, an ``nn.Module`` with ``forward(x)`` and ``merge()``.

Contract
--------
- ``base`` is an ``nn.Linear`` (with or without bias). The layer keeps it as ``self.base`` (the
  same object, not a copy) and freezes it in place: every parameter of ``base`` gets
  ``requires_grad=False``.
- ``self.lora_A``: ``nn.Parameter`` of shape ``(rank, base.in_features)``, initialised randomly
  (not all zero; any sensible scheme, e.g. what ``nn.Linear`` uses for its weight).
  ``self.lora_B``: ``nn.Parameter`` of shape ``(base.out_features, rank)``, initialised to zeros.
  Both have ``base.weight``'s dtype and device, so the layer works for a float64, CUDA or ``meta``
  base. They are the only parameters that require grad, so
  ``sum(p.numel() for p in layer.parameters() if p.requires_grad) == rank * (in + out)``; the base
  stays registered (``layer.parameters()`` also yields its frozen weight and bias).
- ``forward(x)`` for ``x`` of shape ``(..., in_features)`` returns ``(..., out_features)``::

      base(x) + (alpha / rank) * x @ lora_A.T @ lora_B.T

  so at initialisation it equals ``base(x)``. Backward gives gradients to ``lora_A``,
  ``lora_B`` (and ``x``), never to the base parameters. The output is on ``x``'s device; under
  ``torch.autocast`` it comes out in the autocast dtype.
- ``merge()`` returns a *new* ``nn.Linear`` (same in/out features, a bias exactly when ``base`` has
  one, same dtype and device) with weight ``base.weight + (alpha / rank) * lora_B @ lora_A`` and
  the base's bias, whose output equals this layer's output. It does not modify the LoRA layer or
  ``base``, and shares no storage with them: the LoRA layer's output is the same before and after
  ``merge()``, and changing the merged layer later changes nothing here.
- Errors: ``base`` not an ``nn.Linear`` -> ``TypeError`` naming ``base``; ``rank`` not a positive
  ``int`` -> ``ValueError`` naming ``rank``; ``alpha`` not a positive finite number (``0``, a
  negative number, NaN or infinity) -> ``ValueError`` naming ``alpha``.

Hints
-----
- ``torch.empty(..., device=base.weight.device, dtype=base.weight.dtype)`` then ``nn.init``.
- What happens to the gradient of ``B`` if ``A`` starts at zero too? And to the gradient of ``A``?
- ``merge`` must compute the new weight without recording autograd history into a parameter:
  ``torch.no_grad()`` and ``copy_`` are your friends.
"""

from torch import Tensor, nn


class LoRALinear(nn.Module):
    """Frozen ``base`` Linear plus a trainable low-rank update ``(alpha / rank) * B @ A``."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float) -> None:
        super().__init__()
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        """``(..., in_features) -> (..., out_features)``."""
        raise NotImplementedError

    def merge(self) -> nn.Linear:
        """A new ``nn.Linear`` equal to this layer, with the update folded into its weight."""
        raise NotImplementedError
