"""Wrong: uses the reentrant checkpoint (``use_reentrant=True``, the old default). When ``x`` does
not require grad the segment outputs do not either, so the parameters get no gradient, and
``torch.autograd.grad`` through it raises."""

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
    size, extra = divmod(len(blocks), segments)
    h, start = x, 0
    for i in range(segments):
        end = start + size + (i < extra)
        h = checkpoint(lambda t, seg=blocks[start:end]: _run_segment(seg, t), h, use_reentrant=True)
        start = end
    return h
