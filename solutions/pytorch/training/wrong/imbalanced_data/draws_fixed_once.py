"""Wrong: draws the indices once, when the sampler is made, and yields the same ones every
epoch."""

from __future__ import annotations

import torch
from torch.utils.data import Sampler, WeightedRandomSampler


def _as_labels(labels: torch.Tensor | list[int]) -> torch.Tensor:
    if isinstance(labels, list):
        if not all(isinstance(c, int) and not isinstance(c, bool) for c in labels):
            raise TypeError("labels must be a list of ints")
        labels = torch.tensor(labels, dtype=torch.int64)
    elif not isinstance(labels, torch.Tensor):
        raise TypeError(f"labels must be a tensor or a list of ints, got {type(labels).__name__}")
    if labels.dtype == torch.bool or labels.is_floating_point() or labels.is_complex():
        raise TypeError(f"labels must have an integer dtype, got {labels.dtype}")
    if labels.dim() != 1 or labels.numel() == 0:
        raise ValueError(f"labels must be a non-empty 1-D tensor, got shape {tuple(labels.shape)}")
    if (labels < 0).any():
        raise ValueError("labels holds a negative class index")
    return labels.long()


class _FixedSampler(Sampler[int]):
    def __init__(self, indices: list[int]):
        self.indices = indices

    def __iter__(self):
        return iter(self.indices)

    def __len__(self) -> int:
        return len(self.indices)


def _class_counts(labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    # minlength: a class above the largest label present still gets its count (0).
    return torch.bincount(labels, minlength=num_classes)


def class_weights(labels: torch.Tensor | list[int], num_classes: int) -> torch.Tensor:
    """Per-class loss weights, inversely proportional to the class counts (0 for absent classes)."""
    labels = _as_labels(labels)
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}")
    if (labels >= num_classes).any():
        raise ValueError(f"labels holds a class index >= num_classes ({num_classes})")
    counts = _class_counts(labels, num_classes).double()
    present = counts > 0
    weights = labels.numel() / (present.sum() * counts.clamp(min=1))
    return torch.where(present, weights, 0.0).float()


def balanced_sampler(labels: torch.Tensor | list[int], num_samples: int,
                     generator: torch.Generator | None = None) -> Sampler[int]:
    """A sampler drawing ``num_samples`` indices with replacement, every present class equally likely."""
    labels = _as_labels(labels).cpu()
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    counts = _class_counts(labels, 0).double()
    present = int((counts > 0).sum())
    # One weight per example: 1 / (P * n_c) for its class c, so each class sums to 1 / P.
    per_example = 1.0 / (present * counts[labels])
    return _FixedSampler(list(WeightedRandomSampler(per_example, num_samples, replacement=True, generator=generator)))
