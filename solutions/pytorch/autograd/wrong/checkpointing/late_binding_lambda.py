"""Wrong: hands ``checkpoint`` a lambda that reads the loop variables. The forward is right, but
backward calls the lambda again after the loop has finished, so every segment's recomputation runs
the *last* segment's blocks: the gradients are silently wrong when the segments have equal
shapes."""

from collections.abc import Sequence

from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint


def checkpointed_forward(blocks: Sequence[nn.Module], x: Tensor, segments: int) -> Tensor:
    blocks = list(blocks)
    if isinstance(segments, bool) or not isinstance(segments, int):
        raise ValueError(f"segments must be an int, got {type(segments).__name__}")
    if not 1 <= segments <= len(blocks):
        raise ValueError(f"segments must be between 1 and {len(blocks)}, got {segments}")
    size, extra = divmod(len(blocks), segments)
    ends = [(i + 1) * size + min(i + 1, extra) for i in range(segments)]
    h = x
    for start, end in zip([0] + ends[:-1], ends):
        h = checkpoint(lambda t: nn.Sequential(*blocks[start:end])(t), h, use_reentrant=False)
    return h
