"""Wrong: every segment gets ``len(blocks) // segments`` blocks, so when ``segments`` does not
divide the number of blocks the last ``len(blocks) % segments`` blocks are never run."""

from collections.abc import Sequence

from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint


def _run_segment(segment: Sequence[nn.Module], h: Tensor) -> Tensor:
    for block in segment:
        h = block(h)
    return h


def checkpointed_forward(blocks: Sequence[nn.Module], x: Tensor, segments: int) -> Tensor:
    blocks = list(blocks)
    if isinstance(segments, bool) or not isinstance(segments, int):
        raise ValueError(f"segments must be an int, got {type(segments).__name__}")
    if not 1 <= segments <= len(blocks):
        raise ValueError(f"segments must be between 1 and {len(blocks)}, got {segments}")
    size = len(blocks) // segments
    h = x
    for i in range(segments):
        h = checkpoint(_run_segment, blocks[i * size:(i + 1) * size], h, use_reentrant=False)
    return h
