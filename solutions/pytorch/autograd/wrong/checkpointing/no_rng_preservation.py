"""Wrong: turns off ``preserve_rng_state`` to save the RNG bookkeeping. The recomputation in
backward then draws fresh dropout masks, so the gradients no longer match the forward that ran."""

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
        h = checkpoint(_run_segment, blocks[start:end], h, use_reentrant=False,
                       preserve_rng_state=False)
        start = end
    return h
