"""Public tests for pytorch.tensors.from_data: a few quick examples. Run with
``pytest exercises/pytorch/tensors/test_from_data.py``."""

import numpy as np
import pytest
import torch

from grader.checks import assert_close


def test_python_ints_and_floats(impl):
    ints = impl.to_tensor([[1, 2, 3], [4, 5, 6]])
    assert_close(ints, torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.int64),
                 name="to_tensor([[1, 2, 3], [4, 5, 6]])")
    floats = impl.to_tensor((0.5, 1.5))
    assert_close(floats, torch.tensor([0.5, 1.5], dtype=torch.float32),
                 name="to_tensor((0.5, 1.5))")


def test_numpy_array_keeps_dtype_and_is_copied(impl):
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = impl.to_tensor(a)
    assert_close(t, torch.arange(6, dtype=torch.int32).reshape(2, 3), name="to_tensor(int32 array)")
    a[0, 0] = 100
    assert int(t[0, 0]) == 0, "to_tensor(array): changing the array afterwards changed the tensor"


def test_ragged_list_is_rejected(impl):
    with pytest.raises(ValueError, match=r"(?i)depth 1\b"):
        impl.to_tensor([[1, 2], [3]])
