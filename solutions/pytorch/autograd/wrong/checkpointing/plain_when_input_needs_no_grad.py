"""Wrong: checkpoints only when x requires grad ("nothing to recompute for a batch of data"), so for an
ordinary input batch every block's activations are saved and no memory is saved at all."""

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
        raise ValueError(f"segments must be between 1 and len(blocks) = {len(blocks)}, "
                         f"got {segments}")
    # Sizes differ by at most one: the first `extra` segments take one more block.
    size, extra = divmod(len(blocks), segments)
    h, start = x, 0
    for i in range(segments):
        end = start + size + (i < extra)
        # The segment travels as an argument, not through a closure over loop variables, because
        # checkpoint calls _run_segment again during backward, after this loop has moved on.
        if x.requires_grad:
            h = checkpoint(_run_segment, blocks[start:end], h, use_reentrant=False,
                           preserve_rng_state=True)
        else:
            h = _run_segment(blocks[start:end], h)
        start = end
    return h
