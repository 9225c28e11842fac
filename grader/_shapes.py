"""Framework-free hypothesis strategies for shapes and nested data.

Shared by ``grader.checks`` (PyTorch) and ``grader.tfchecks`` (TensorFlow); imports neither.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


def shapes(*, min_dims: int = 1, max_dims: int = 4, min_side: int = 1,
           max_side: int = 5) -> st.SearchStrategy[tuple[int, ...]]:
    """Tensor shapes; sides include 1 and odd sizes."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def broadcastable_batch_shapes(num_shapes: int = 2, *, max_dims: int = 3,
                               max_side: int = 4) -> st.SearchStrategy[tuple[tuple[int, ...], ...]]:
    """``num_shapes`` batch shapes that broadcast together (sides of 1, missing dims, equal sides)."""
    return hnp.mutually_broadcastable_shapes(num_shapes=num_shapes, min_dims=0, max_dims=max_dims,
                                             max_side=max_side).map(lambda r: r.input_shapes)


def nested_containers(leaves: st.SearchStrategy[Any], *, max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """Nested lists, tuples and str-keyed dicts whose leaves come from ``leaves``."""
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, max_size=3),
            st.lists(children, max_size=3).map(tuple),
            st.dictionaries(st.text("abcxyz", min_size=1, max_size=3), children, max_size=3),
        ),
        max_leaves=max_leaves,
    )
