"""Wrong: counts a sequence's steps as those that are not all ``pad_value``, after padding:
a real step equal to ``pad_value`` (a zero row) is lost."""

from __future__ import annotations

import operator

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
    lengths = torch.tensor([sequence.shape[0] for sequence in sequences], dtype=torch.int64)
    longest = max(sequence.shape[0] for sequence in sequences)
    x = first.new_full((len(sequences), longest, first.shape[1]), pad_value)
    for i, sequence in enumerate(sequences):
        x[i, :sequence.shape[0]] = sequence
    mask = (x != pad_value).any(dim=-1)
    lengths = mask.sum(dim=1).cpu()
    y = torch.tensor([operator.index(label) for _, label in batch], dtype=torch.int64, device=first.device)
    return {"x": x, "lengths": lengths, "mask": mask, "y": y}
