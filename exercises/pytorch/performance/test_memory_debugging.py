"""Public tests for pytorch.performance.memory_debugging: a few quick examples. Run with
``pytest exercises/pytorch/performance/test_memory_debugging.py``."""

import pytest
import torch

# A search that never ends is this exercise's likeliest mistake (a start of 0 doubled stays 0): it
# fails in 10 s, not the default minute. Every test here takes the reference under a second.
pytestmark = pytest.mark.time_limit(10)


def test_finds_the_largest_batch(impl):
    calls = []

    def try_batch(n):
        calls.append(n)
        if n > 300:
            raise torch.OutOfMemoryError("does not fit")

    assert impl.max_batch_size(try_batch, start=1, limit=10_000) == 300
    assert len(calls) < 40, "use doubling and binary search, not a linear scan"


def test_other_errors_are_not_swallowed(impl):
    def try_batch(n):
        raise ValueError("a real bug")

    with pytest.raises(ValueError, match="a real bug"):
        impl.max_batch_size(try_batch)
