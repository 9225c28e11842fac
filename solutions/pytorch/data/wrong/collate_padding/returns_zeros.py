"""Wrong: (the constant submission): validates the batch and returns zeros of the right shapes,
dtypes and devices."""

from __future__ import annotations

import torch


def pad_collate(batch: list[tuple[torch.Tensor, int]], pad_value: float = 0.0) -> dict[str, torch.Tensor]:
    """Pad ``(sequence (L_i, F), label)`` pairs into a batch dict with ``x``, ``lengths``,
    ``mask`` and ``y``."""
    if len(batch) == 0:
        raise ValueError("batch is empty: expected at least one (sequence, label) pair")
    sequences = [sequence for sequence, _ in batch]
    first = sequences[0]
    for i, sequence in enumerate(sequences):
        if not isinstance(sequence, torch.Tensor) or sequence.dim() != 2 or sequence.shape[0] == 0:
            shape = tuple(sequence.shape) if isinstance(sequence, torch.Tensor) else type(sequence).__name__
            raise ValueError(f"batch[{i}]: the sequence must be a tensor of shape (L, F) with L >= 1, got {shape}")
        if sequence.shape[1] != first.shape[1] or sequence.dtype != first.dtype:
            raise ValueError(f"batch[{i}]: sequence of {sequence.shape[1]} features and dtype {sequence.dtype}, "
                             f"but batch[0] has {first.shape[1]} and {first.dtype}")
    lengths = torch.zeros(len(sequences), dtype=torch.int64)
    longest = max(sequence.shape[0] for sequence in sequences)
    x = first.new_zeros((len(sequences), longest, first.shape[1]))
    mask = torch.zeros(len(sequences), longest, dtype=torch.bool, device=first.device)
    y = torch.zeros(len(sequences), dtype=torch.int64, device=first.device)
    return {"x": x, "lengths": lengths, "mask": mask, "y": y}
