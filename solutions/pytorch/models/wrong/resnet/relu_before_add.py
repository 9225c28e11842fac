"""Wrong: applies the last ReLU to the residual branch before the addition, so the sum is not
rectified (breaks the forward clause)."""


from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

_CONV_ARGS = (("size", 1), ("kernel", 1), ("stride", 1), ("padding", 0), ("dilation", 1))


def conv_output_size(size: int, kernel: int, stride: int = 1, padding: int = 0, dilation: int = 1) -> int:
    """Output length of a convolution along one dimension."""
    values = {"size": size, "kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation}
    for name, lowest in _CONV_ARGS:
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < lowest:
            raise ValueError(f"{name} must be >= {lowest}, got {value}")
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    if span < 0:
        raise ValueError(f"size {size} with padding {padding} is smaller than the dilated kernel "
                         f"({dilation * (kernel - 1) + 1}): the output would be empty")
    return span // stride + 1


def _conv3x3(in_ch: int, out_ch: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_ch, out_ch, 3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    """``relu(F(x) + shortcut(x))`` with a projection shortcut only when the shape changes."""

    def __init__(self, in_ch: int, out_ch: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = _conv3x3(in_ch, out_ch, stride)
        self.bn1 = nn.BatchNorm2d(out_ch)
        self.conv2 = _conv3x3(out_ch, out_ch)
        self.bn2 = nn.BatchNorm2d(out_ch)
        self.shortcut = None
        if stride != 1 or in_ch != out_ch:
            self.shortcut = nn.Sequential(nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(out_ch))

    def forward(self, x: Tensor) -> Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = torch.relu(self.bn2(self.conv2(out)))
        return out + (x if self.shortcut is None else self.shortcut(x))


class SmallResNet(nn.Module):
    """Stem, stages of ``BasicBlock``s, global average pooling and a linear classifier."""

    def __init__(self, num_classes: int, widths: Sequence[int] = (16, 32, 64), blocks_per_stage: int = 2,
                 in_channels: int = 3) -> None:
        super().__init__()
        widths = tuple(widths)
        self.stem = nn.Sequential(_conv3x3(in_channels, widths[0]), nn.BatchNorm2d(widths[0]), nn.ReLU())
        stages, previous = [], widths[0]
        for i, width in enumerate(widths):
            blocks = [BasicBlock(previous, width, stride=2 if i > 0 else 1)]
            blocks += [BasicBlock(width, width) for _ in range(blocks_per_stage - 1)]
            stages.append(nn.Sequential(*blocks))
            previous = width
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(widths[-1], num_classes)

    def forward(self, x: Tensor) -> Tensor:
        """``(N, in_channels, H, W) -> (N, num_classes)`` logits."""
        return self.fc(self.stages(self.stem(x)).mean(dim=(2, 3)))
