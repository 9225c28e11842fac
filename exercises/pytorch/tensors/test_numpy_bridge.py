"""Public tests for pytorch.tensors.numpy_bridge: a few quick examples. Run with
``pytest exercises/pytorch/tensors/test_numpy_bridge.py``."""

import numpy as np
import torch


def test_to_numpy_of_a_tensor_that_requires_grad(impl):
    w = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    out = impl.to_numpy(w * 2)
    assert isinstance(out, np.ndarray), f"to_numpy returned {type(out).__name__}, not np.ndarray"
    assert out.dtype == np.float32, f"to_numpy: dtype {out.dtype}, expected float32"
    assert np.array_equal(out, [[2.0, 4.0], [6.0, 8.0]]), f"to_numpy(w * 2) gave {out}"


def test_from_numpy_shares_memory_by_default(impl):
    a = np.zeros(3)
    t = impl.from_numpy(a)
    assert t.dtype == torch.float64, f"from_numpy(float64 array): dtype {t.dtype}, expected float64"
    a[0] = 5.0
    assert float(t[0]) == 5.0, "from_numpy(a): a write to the array was not seen by the tensor"


def test_from_numpy_copies_reversed_arrays(impl):
    a = np.arange(4.0)
    t = impl.from_numpy(a[::-1])
    assert t.tolist() == [3.0, 2.0, 1.0, 0.0], f"from_numpy(a[::-1]) gave {t.tolist()}"
