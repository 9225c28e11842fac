"""Hypothesis strategies shared by the exercises' property tests."""

from __future__ import annotations

import torch
from hypothesis import strategies as st

# The framework-free strategies live in grader._shapes (shared with grader.tfchecks).
from grader._shapes import broadcastable_batch_shapes, nested_containers, shapes

__all__ = ["broadcastable_batch_shapes", "nested_containers", "shapes", "tensors"]


def tensors(shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]], *,
            dtype: torch.dtype = torch.float64, scale: float = 1.0,
            device: str = "cpu") -> st.SearchStrategy[torch.Tensor]:
    """Tensors of ``shape`` (a shape or a strategy of shapes) with standard-normal values times
    ``scale``. Values come from a drawn seed, so examples are fast and reproducible."""
    shape_st = shape if isinstance(shape, st.SearchStrategy) else st.just(tuple(shape))

    def build(args: tuple[tuple[int, ...], int]) -> torch.Tensor:
        size, seed = args
        gen = torch.Generator().manual_seed(seed)
        return (torch.randn(size, generator=gen, dtype=torch.float64) * scale).to(device, dtype)

    return st.tuples(shape_st, st.integers(0, 2**31 - 1)).map(build)
