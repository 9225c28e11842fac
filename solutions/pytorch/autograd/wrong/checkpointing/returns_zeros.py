"""Wrong: a constant submission -- validates segments like the contract says, then returns zeros
shaped like x on x's device, with no link to the blocks."""

from collections.abc import Sequence

import torch
from torch import Tensor, nn


def checkpointed_forward(blocks: Sequence[nn.Module], x: Tensor, segments: int) -> Tensor:
    blocks = list(blocks)
    if isinstance(segments, bool) or not isinstance(segments, int):
        raise ValueError(f"segments must be an int, got {type(segments).__name__}")
    if not 1 <= segments <= len(blocks):
        raise ValueError(f"segments must be between 1 and len(blocks) = {len(blocks)}")
    return torch.zeros_like(x)
