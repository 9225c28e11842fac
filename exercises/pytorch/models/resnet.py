"""A small ResNet: convolution output sizes, a residual block, and the network.

The question
------------
A convolution with kernel ``k``, stride ``s``, padding ``p`` and dilation ``d`` turns a length
``n`` into ``floor((n + 2p - d(k - 1) - 1) / s) + 1``; getting this right is how you size a
network without running it. A ResNet "basic block" computes ``relu(F(x) + shortcut(x))`` with
``F = conv3x3 -> BN -> ReLU -> conv3x3 -> BN``. The shortcut is the identity when ``F`` keeps the
shape, and a 1x1 convolution (with the block's stride) plus batch norm only when it does not:
a projection everywhere would add parameters and take away the identity path that makes deep
networks trainable. Stacking stages of such blocks, halving the resolution and widening the
channels at each new stage, then global average pooling and a linear classifier, gives a ResNet.

Your task
---------
Write ``conv_output_size``, the module ``BasicBlock`` and the module ``SmallResNet``.

Contract
--------
- ``conv_output_size(size, kernel, stride=1, padding=0, dilation=1)`` returns the output length
  of ``nn.Conv2d`` (along one spatial dimension) as an ``int``: ``floor((size + 2*padding -
  dilation*(kernel - 1) - 1) / stride) + 1``.
- Its arguments must be ``int``s (``bool`` is not), else ``TypeError`` naming the argument;
  ``size``, ``kernel``, ``stride`` and ``dilation`` must be >= 1 and ``padding`` >= 0, else
  ``ValueError`` naming the argument. When the dilated kernel does not fit in the padded input
  (the output would be empty) it raises ``ValueError`` naming ``size``.
- ``BasicBlock(in_ch, out_ch, stride=1)`` has submodules ``conv1`` (3x3, ``stride``, padding 1,
  no bias), ``bn1``, ``conv2`` (3x3, stride 1, padding 1, no bias), ``bn2`` and ``shortcut``.
  ``forward(x)`` is ``relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))``.
- ``shortcut`` is ``None`` when ``stride == 1`` and ``in_ch == out_ch`` (the identity: ``x`` is
  added unchanged); otherwise it is ``nn.Sequential(nn.Conv2d(in_ch, out_ch, 1, stride=stride,
  bias=False), nn.BatchNorm2d(out_ch))``.
- ``SmallResNet(num_classes, widths=(16, 32, 64), blocks_per_stage=2, in_channels=3)`` has
  ``stem`` = ``nn.Sequential(conv3x3(in_channels, widths[0], padding 1, no bias),
  BatchNorm2d, ReLU)``, ``stages`` = an ``nn.Sequential`` with one ``nn.Sequential`` of
  ``blocks_per_stage`` ``BasicBlock``s per width (the first block of stage ``i`` goes from the
  previous width to ``widths[i]`` with stride 2 for ``i > 0``, stride 1 for the first stage; the
  others keep width and stride 1) and ``fc`` = ``nn.Linear(widths[-1], num_classes)``.
  ``forward(x)`` is ``fc(stages(stem(x)).mean(dim=(2, 3)))``: logits, no softmax.
- ``SmallResNet`` takes ``(N, in_channels, H, W)`` for any ``N, H, W >= 1`` and returns
  ``(N, num_classes)`` on the input's device. Every parameter receives a gradient. A
  ``channels_last`` input gives the same logits as a contiguous one. Under ``torch.autocast``
  the logits come out in the autocast dtype (bfloat16 on CPU).

Hints
-----
- ``nn.Conv2d(..., bias=False)`` before a batch norm: the norm's shift makes a bias redundant.
- ``self.shortcut = None`` still registers nothing; check ``if self.shortcut is None`` in forward.
- The output size after a stride-2, padding-1 3x3 convolution is ``(n + 1) // 2``, never 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor, nn


def conv_output_size(size: int, kernel: int, stride: int = 1, padding: int = 0, dilation: int = 1) -> int:
    """Output length of a convolution along one dimension."""
    raise NotImplementedError


class BasicBlock(nn.Module):
    """``relu(F(x) + shortcut(x))`` with a projection shortcut only when the shape changes."""

    def __init__(self, in_ch: int, out_ch: int, stride: int = 1) -> None:
        super().__init__()
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError


class SmallResNet(nn.Module):
    """Stem, stages of ``BasicBlock``s, global average pooling and a linear classifier."""

    def __init__(self, num_classes: int, widths: Sequence[int] = (16, 32, 64), blocks_per_stage: int = 2,
                 in_channels: int = 3) -> None:
        super().__init__()
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        """``(N, in_channels, H, W) -> (N, num_classes)`` logits."""
        raise NotImplementedError
